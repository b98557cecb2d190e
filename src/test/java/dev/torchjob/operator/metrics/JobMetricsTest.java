package dev.torchjob.operator.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.t9k.T9kModel;
import dev.torchjob.operator.t9k.T9kPlanner;
import io.fabric8.kubernetes.api.model.ContainerStateBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/** Transitions are counted when written, once, and not again by an operator that restarts. */
class JobMetricsTest {
    static final KubernetesSerialization YAML = new KubernetesSerialization();
    static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final JobMetrics metrics = new JobMetrics(registry, Clock.fixed(T0, ZoneOffset.UTC));

    static PyTorchTrainingJob job() {
        PyTorchTrainingJob job = YAML.unmarshal("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: m, namespace: team-a, uid: u1, generation: 1, creationTimestamp: "2026-01-01T00:00:00Z"}
                spec:
                  replicaSpecs:
                  - type: worker
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """, PyTorchTrainingJob.class);
        return job;
    }

    /** Plans one pass and "writes" it: the executor's part, with metrics. */
    PyTorchTrainingJob pass(JobMetrics metrics, PyTorchTrainingJob job, java.util.List<Pod> pods, Instant now) {
        Plan<PyTorchTrainingJobStatus> plan = T9kPlanner.plan(job, pods, true, now);
        if (plan.statusChanged()) {
            job.setStatus(plan.status());
            metrics.statusWritten(job, plan);
        }
        return job;
    }

    double count(String name) {
        var counter = registry.find(name).tag("job_namespace", "team-a").counter();
        return counter == null ? 0 : counter.count();
    }

    static Pod pod(PyTorchTrainingJob job, String phase, Integer exitCode) {
        Pod pod = T9kPlanner.plan(job(), java.util.List.of(), true, T0).podsToCreate().get(0); // the pod as the operator makes it
        pod.getMetadata().setUid("pod-1");
        var state = exitCode == null ? new ContainerStateBuilder().withNewRunning().endRunning().build()
                : new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode).endTerminated().build();
        pod.setStatus(new PodStatusBuilder().withPhase(phase)
                .withContainerStatuses(new ContainerStatusBuilder().withName("pytorch").withState(state).build()).build());
        return pod;
    }

    @Test
    void eachTransitionIsCountedOnceAndNotAgainAfterAnOperatorRestart() {
        PyTorchTrainingJob job = job();
        pass(metrics, job, java.util.List.of(), T0);
        assertEquals(1, count("training_operator_jobs_created"));
        pass(metrics, job, java.util.List.of(pod(job, "Running", null)), T0.plusSeconds(5));
        pass(metrics, job, java.util.List.of(pod(job, "Running", null)), T0.plusSeconds(6));
        assertEquals(1, registry.find("pytorchtrainingjob_time_to_running").timer().count());
        pass(metrics, job, java.util.List.of(pod(job, "Succeeded", 0)), T0.plusSeconds(65));
        pass(metrics, job, java.util.List.of(pod(job, "Succeeded", 0)), T0.plusSeconds(70));
        assertEquals(1, count("training_operator_jobs_successful"));
        assertEquals(1, count("training_operator_jobs_created"), "created once");
        assertEquals(65.0, registry.find("pytorchtrainingjob_duration").tag("outcome", "Succeeded").timer()
                .totalTime(java.util.concurrent.TimeUnit.SECONDS));

        // A new operator process: fresh meters, the same job with its written status.
        SimpleMeterRegistry restartedRegistry = new SimpleMeterRegistry();
        JobMetrics restarted = new JobMetrics(restartedRegistry, Clock.fixed(T0, ZoneOffset.UTC));
        pass(restarted, job, java.util.List.of(pod(job, "Succeeded", 0)), T0.plusSeconds(300));
        restarted.observe(job, T9kModel.state(job.getStatus()));
        assertEquals(0, restartedRegistry.find("training_operator_jobs_successful").tag("job_namespace", "team-a").counter().count(),
                "the transition was written, and counted, by the previous process");
        assertEquals(0, restartedRegistry.find("training_operator_jobs_created").tag("job_namespace", "team-a").counter().count());
        assertEquals(1.0, restartedRegistry.find("pytorchtrainingjob_jobs").tag("phase", "Succeeded").gauge().value());
    }

    @Test
    void restartsAreCountedByReplicaTypeAndExitCode() {
        PyTorchTrainingJob job = job();
        pass(metrics, job, java.util.List.of(), T0);
        pass(metrics, job, java.util.List.of(pod(job, "Running", null)), T0.plusSeconds(5));
        pass(metrics, job, java.util.List.of(pod(job, "Failed", 137)), T0.plusSeconds(10));
        assertEquals(1, count("training_operator_jobs_restarted"));
        assertEquals(1, registry.find("pytorchtrainingjob_replica_restarts").tag("exit_code", "137").tag("replica_type", "worker")
                .counter().count());
        // The stale pod is seen again before its deletion lands: no new count.
        pass(metrics, job, java.util.List.of(pod(job, "Failed", 137)), T0.plusSeconds(11));
        assertEquals(1, count("training_operator_jobs_restarted"));
    }

    @Test
    void jobsByPhaseAndOldestPending() {
        PyTorchTrainingJob job = job();
        pass(metrics, job, java.util.List.of(), T0);
        JobMetrics later = new JobMetrics(registry, Clock.fixed(T0.plusSeconds(90), ZoneOffset.UTC));
        later.observe(job, T9kModel.state(job.getStatus()));
        assertEquals(1.0, registry.find("pytorchtrainingjob_jobs").tag("phase", "Pending").gauge().value());
        assertEquals(0.0, registry.find("pytorchtrainingjob_jobs").tag("phase", "Running").gauge().value());
    }

    @Test
    void bothKindsFeedKubeflowsCountersAndAreToldApartInOurs() {
        PyTorchTrainingJob t9k = job();
        pass(metrics, t9k, java.util.List.of(), T0);
        dev.torchjob.operator.api.kubeflow.PyTorchJob kubeflow = YAML.unmarshal("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: m, namespace: team-a, uid: u2, generation: 1, creationTimestamp: "2026-01-01T00:00:00Z"}
                spec:
                  pytorchReplicaSpecs:
                    Worker: {template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """, dev.torchjob.operator.api.kubeflow.PyTorchJob.class);
        var plan = dev.torchjob.operator.kubeflow.KubeflowPlanner.plan(kubeflow, java.util.List.of(), java.util.Set.of(), T0,
                java.util.Map.of(), dev.torchjob.operator.engine.RestartBackoff.NONE);
        metrics.statusWritten(kubeflow, plan);
        assertEquals(2, count("training_operator_jobs_created"), "one of each kind, same name, framework pytorch");
        assertEquals(1.0, registry.find("pytorchtrainingjob_jobs").tag("kind", "PyTorchJob").tag("phase", "Pending").gauge().value());
        assertEquals(1.0, registry.find("pytorchtrainingjob_jobs").tag("kind", "PyTorchTrainingJob").tag("phase", "Pending").gauge().value(),
                "a job of each kind named m: both counted");
    }

    /** What JOSDK tells its metrics of every event: the controller it is for. */
    static final java.util.Map<String, Object> CONTROLLER = java.util.Map.of(
            io.javaoperatorsdk.operator.api.reconciler.Constants.CONTROLLER_NAME, "pytorchtrainingjob");

    /**
     * Every replica's informers see a job deleted; a sum over replicas (what dashboards and alerts take)
     * must count the deletion once: the replica standing by does not count it.
     */
    @Test
    void aDeletionIsCountedByTheActingReplicaOnly() {
        PyTorchTrainingJob job = job();
        var deleted = new io.javaoperatorsdk.operator.processing.event.source.controller.ResourceEvent(
                io.javaoperatorsdk.operator.processing.event.source.ResourceAction.DELETED,
                io.javaoperatorsdk.operator.processing.event.ResourceID.fromResource(job), job);
        SimpleMeterRegistry standingBy = new SimpleMeterRegistry();
        new OperatorSdkMetrics(standingBy, new JobMetrics(standingBy, Clock.fixed(T0, ZoneOffset.UTC)), () -> false)
                .eventReceived(deleted, CONTROLLER);
        var notCounted = standingBy.find("training_operator_jobs_deleted").tag("job_namespace", "team-a").counter();
        assertEquals(0.0, notCounted == null ? 0.0 : notCounted.count(), "the replica standing by");

        new OperatorSdkMetrics(registry, metrics, () -> true).eventReceived(deleted, CONTROLLER);
        assertEquals(1.0, count("training_operator_jobs_deleted"), "the acting replica");
    }
}
