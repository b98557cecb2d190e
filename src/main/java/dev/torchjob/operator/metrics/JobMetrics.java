package dev.torchjob.operator.metrics;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.status.StatusTime;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * Job metrics, fed from status transitions at the moment the operator writes them: a transition
 * is written once (optimistic locking), so it is counted once, and an operator that restarts
 * finds it already written and does not count it again. Kubeflow-compatible names and labels
 * where Kubeflow has a metric (spec §11).
 */
@Singleton
public class JobMetrics {
    public static final String FRAMEWORK = "pytorch";
    static final String NAMESPACE_TAG = "job_namespace";
    /** Tells the job APIs apart in this operator's own metrics: PyTorchTrainingJob or PyTorchJob. */
    static final String KIND_TAG = "kind";
    static final Duration[] TIME_TO_RUNNING_BUCKETS = seconds(1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600);
    static final Duration[] DURATION_BUCKETS = seconds(10, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200);

    private final MeterRegistry registry;
    private final Clock clock;
    /** The phase and creation time of every job this operator reconciles, for the gauges. */
    private final Map<JobKey, Seen> jobs = new ConcurrentHashMap<>();
    private final Set<String> namespacesWithGauges = ConcurrentHashMap.newKeySet();

    private record Seen(JobPhase phase, Instant created) {
    }

    /** A job of one kind: a T9k job and a Kubeflow job may share a name. */
    private record JobKey(String kind, ResourceID id) {
        String namespace() {
            return id.getNamespace().orElse("");
        }
    }

    @Inject
    public JobMetrics(MeterRegistry registry, Clock clock) {
        this.registry = registry;
        this.clock = clock;
    }

    /** Every pass: what the job's phase is now (for the by-phase and pending-age gauges). */
    public void observe(HasMetadata job, JobState state) {
        String namespace = job.getMetadata().getNamespace();
        registerNamespace(namespace, job.getKind());
        JobPhase phase = state.phase() == null ? JobPhase.Pending : state.phase();
        jobs.put(new JobKey(job.getKind(), ResourceID.fromResource(job)), new Seen(phase, StatusTime.parse(job.getMetadata().getCreationTimestamp())));
    }

    /** After the status was written: count the transitions between the two. */
    public void statusWritten(HasMetadata job, Plan<?> plan) {
        JobState before = plan.before();
        JobState after = plan.after();
        String namespace = job.getMetadata().getNamespace();
        String kind = job.getKind();
        registerNamespace(namespace, kind);
        if (!before.planned()) {
            kubeflowCounter("training_operator_jobs_created", "Jobs created", namespace).increment();
        }
        JobPhase was = before.phase();
        if (after.phase() != was && after.phase() == JobPhase.Succeeded) {
            kubeflowCounter("training_operator_jobs_successful", "Jobs that succeeded", namespace).increment();
            recordDuration(namespace, kind, "Succeeded", after);
        }
        if (after.phase() != was && after.phase() == JobPhase.Failed) {
            kubeflowCounter("training_operator_jobs_failed", "Jobs that failed", namespace).increment();
            recordDuration(namespace, kind, "Failed", after);
        }
        if (after.phase() == JobPhase.Running && (was == null || was == JobPhase.Pending)) {
            // Every replica ran at this pass: it is when the job's Running condition turned true.
            Instant created = StatusTime.parse(job.getMetadata().getCreationTimestamp());
            Instant ran = plan.decidedAt();
            if (created != null && !ran.isBefore(created)) {
                timeToRunning(namespace, kind).record(Duration.between(created, ran));
            }
        }
        for (Plan.RestartCounted restart : plan.restarts()) {
            kubeflowCounter("training_operator_jobs_restarted", "Replica restarts of jobs", namespace).increment();
            Counter.builder("pytorchtrainingjob_replica_restarts")
                    .description("Replica restarts by replica type and exit code (or device-failed, evicted, vanished, succeeded, in-place)")
                    .tag(NAMESPACE_TAG, namespace)
                    .tag(KIND_TAG, kind)
                    .tag("replica_type", restart.replicaType())
                    .tag("exit_code", restart.cause())
                    .register(registry)
                    .increment();
        }
        observe(job, after);
    }

    /** Its queue admitted the job after it waited this long (since its Workload was made, or last requeued). */
    public void admitted(HasMetadata job, Duration waited) {
        if (waited.isNegative()) {
            return;
        }
        Timer.builder("pytorchtrainingjob_queue_wait")
                .description("How long a job queued with Kueue waited for admission (each admission, readmissions too)")
                .tag(NAMESPACE_TAG, job.getMetadata().getNamespace())
                .tag(KIND_TAG, job.getKind())
                .serviceLevelObjectives(TIME_TO_RUNNING_BUCKETS)
                .register(registry)
                .record(waited);
    }

    /** Its queue evicted the job (Preempted, PodsReadyTimeout, InactiveWorkload, ...). */
    public void evicted(HasMetadata job, String reason) {
        Counter.builder("pytorchtrainingjob_queue_evictions")
                .description("Evictions of jobs queued with Kueue, by Kueue's reason")
                .tag(NAMESPACE_TAG, job.getMetadata().getNamespace())
                .tag(KIND_TAG, job.getKind())
                .tag("reason", reason)
                .register(registry)
                .increment();
    }

    /** The job is gone from the cluster. */
    public void jobDeleted(String kind, ResourceID job) {
        String namespace = job.getNamespace().orElse("");
        kubeflowCounter("training_operator_jobs_deleted", "Jobs deleted", namespace).increment();
        jobs.remove(new JobKey(kind, job));
    }

    private void recordDuration(String namespace, String kind, String outcome, JobState state) {
        Instant start = state.startTime();
        Instant end = state.completionTime();
        if (start != null && end != null && !end.isBefore(start)) {
            duration(namespace, kind, outcome).record(Duration.between(start, end));
        }
    }

    private Timer duration(String namespace, String kind, String outcome) {
        return Timer.builder("pytorchtrainingjob_duration")
                .description("From the job's start (pods first created) until it succeeded or failed")
                .tag(NAMESPACE_TAG, namespace)
                .tag(KIND_TAG, kind)
                .tag("outcome", outcome)
                .serviceLevelObjectives(DURATION_BUCKETS)
                .register(registry);
    }

    private Timer timeToRunning(String namespace, String kind) {
        return Timer.builder("pytorchtrainingjob_time_to_running")
                .description("From job creation until every replica ran")
                .tag(NAMESPACE_TAG, namespace)
                .tag(KIND_TAG, kind)
                .serviceLevelObjectives(TIME_TO_RUNNING_BUCKETS)
                .register(registry);
    }

    private Counter kubeflowCounter(String name, String description, String namespace) {
        return Counter.builder(name).description(description)
                .tag(NAMESPACE_TAG, namespace).tag("framework", FRAMEWORK)
                .register(registry);
    }

    /**
     * A namespace's meters are created at zero when it is first seen: a gauge for every phase (a
     * phase with no job reads 0, not nothing), and the counters and histograms, so the first job
     * to succeed is an increase that rate() and increase() can see.
     */
    private void registerNamespace(String namespace, String kind) {
        if (!namespacesWithGauges.add(namespace + "/" + kind)) {
            return;
        }
        kubeflowCounter("training_operator_jobs_created", "Jobs created", namespace);
        kubeflowCounter("training_operator_jobs_successful", "Jobs that succeeded", namespace);
        kubeflowCounter("training_operator_jobs_failed", "Jobs that failed", namespace);
        kubeflowCounter("training_operator_jobs_restarted", "Replica restarts of jobs", namespace);
        kubeflowCounter("training_operator_jobs_deleted", "Jobs deleted", namespace);
        duration(namespace, kind, "Succeeded");
        duration(namespace, kind, "Failed");
        timeToRunning(namespace, kind);
        for (JobPhase phase : JobPhase.values()) {
            Gauge.builder("pytorchtrainingjob_jobs", jobs, all -> all.entrySet().stream()
                            .filter(e -> namespace.equals(e.getKey().namespace()) && kind.equals(e.getKey().kind())
                                    && e.getValue().phase() == phase).count())
                    .description("Jobs by phase")
                    .tag(NAMESPACE_TAG, namespace).tag(KIND_TAG, kind).tag("phase", phase.name())
                    .register(registry);
        }
        Gauge.builder("pytorchtrainingjob_oldest_pending_seconds", jobs, all -> all.entrySet().stream()
                        .filter(e -> namespace.equals(e.getKey().namespace()) && kind.equals(e.getKey().kind())
                                && e.getValue().phase() == JobPhase.Pending && e.getValue().created() != null)
                        .mapToDouble(e -> Duration.between(e.getValue().created(), clock.instant()).toMillis() / 1000.0)
                        .max().orElse(0))
                .description("Age of the oldest job still Pending (0 when none is)")
                .tag(NAMESPACE_TAG, namespace)
                .tag(KIND_TAG, kind)
                .register(registry);
    }


    private static Duration[] seconds(long... values) {
        Duration[] durations = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            durations[i] = Duration.ofSeconds(values[i]);
        }
        return durations;
    }
}
