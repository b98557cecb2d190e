package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import dev.torchjob.operator.api.CleanUpPolicy;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.Observation;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.t9k.JobLabels;
import dev.torchjob.operator.t9k.T9kPlanner;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.javaoperatorsdk.operator.api.config.informer.Informer;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.MaxReconciliationInterval;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.rate.RateLimited;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.retry.GradualRetry;

/** The shell for T9k's PyTorchTrainingJob: its pods and Service observed, the T9k adapter asked. */
@ControllerConfiguration(name = PyTorchTrainingJobReconciler.NAME,
        // A label or annotation changed starts a pass too (JobChanged), a status write alone does not.
        generationAwareEventProcessing = false, informer = @Informer(onUpdateFilter = JobChanged.class),
        // Every job is looked at again at least this often, even if no event comes.
        maxReconciliationInterval = @MaxReconciliationInterval(interval = 10, timeUnit = TimeUnit.MINUTES))
// A pass that fails is retried with back-off, never given up: 1 s doubling to 5 min.
@GradualRetry(maxAttempts = -1, initialInterval = 1000, intervalMultiplier = 2, maxInterval = 300_000)
// At most one pass per job per half second: the burst of pod events of a starting or restarting job
// (created, scheduled, started, for each replica) is planned once, not once per event.
@RateLimited(maxReconciliations = 1, within = 500, unit = TimeUnit.MILLISECONDS)
public class PyTorchTrainingJobReconciler extends JobReconciler<PyTorchTrainingJob, PyTorchTrainingJobStatus> {
    public static final String NAME = "pytorchtrainingjob";

    @Inject
    PodGroupApi podGroups;

    @Override
    public List<EventSource<?, PyTorchTrainingJob>> prepareEventSources(EventSourceContext<PyTorchTrainingJob> context) {
        List<EventSource<?, PyTorchTrainingJob>> sources = new ArrayList<>(List.of(
                ownedPods(PyTorchTrainingJob.class, JobLabels.OPERATOR_SELECTOR, JobLabels.OWNER_NAME, context),
                ownedBy(Service.class, PyTorchTrainingJob.class, JobLabels.OPERATOR_SELECTOR, JobLabels.OWNER_NAME, context)));
        sources.addAll(kueue.atStart(context, NAME, new KueueWorkloads.Labels(Map.of(), JobLabels.OPERATOR_SELECTOR, JobLabels.OWNER_NAME)));
        sources.addAll(withoutQueueName.atStart(context, NAME));
        return sources;
    }

    @Override
    protected Plan<PyTorchTrainingJobStatus> plan(PyTorchTrainingJob job, Context<PyTorchTrainingJob> context, Clock clock,
            RestartBackoff backoff, CreatedPods createdPods, QueueAdmission queue) {
        var pods = context.getSecondaryResources(Pod.class);
        boolean serviceExists = context.getSecondaryResources(Service.class).stream()
                .anyMatch(s -> s.getMetadata().getName().equals(job.getMetadata().getName()));
        var now = clock.instant();
        ResourceID id = ResourceID.fromResource(job);
        return T9kPlanner.plan(new Observation<>(job, pods, serviceExists, podGroups.stateOf(job), now,
                createdPods.unseen(id, pods), queue, podWarnings.of(pods, now)).withGonePods(gonePods.of(id)), backoff);
    }

    @Override
    protected List<KueueWorkload.PodSet> podSets(PyTorchTrainingJob job) {
        return T9kPlanner.podSets(job);
    }

    @Override
    protected Optional<String> podsCleanedUp(PyTorchTrainingJob job) {
        var policy = job.getSpec() == null || job.getSpec().runPolicy == null ? null : job.getSpec().runPolicy.cleanUpPolicy;
        return policy == null || policy == CleanUpPolicy.None ? Optional.empty() : Optional.of("runPolicy.cleanUpPolicy " + policy);
    }

    @Override
    protected KueueWorkloads.Labels workloadLabels(PyTorchTrainingJob job) {
        return new KueueWorkloads.Labels(JobLabels.ofJob(job.getMetadata().getName()), JobLabels.OPERATOR_SELECTOR, JobLabels.OWNER_NAME);
    }

    @Override
    protected boolean pauseRequested(PyTorchTrainingJob job) {
        return T9kPlanner.pauseRequested(job);
    }

    @Override
    public Optional<PyTorchTrainingJobStatus> withReconcileError(PyTorchTrainingJobStatus status, String reason, String message) {
        return T9kPlanner.withReconcileError(status, reason, message, clock.instant());
    }

    @Override
    public Optional<java.time.Instant> errorSince(PyTorchTrainingJobStatus status) {
        return T9kPlanner.errorSince(status);
    }

    @Override
    protected boolean startedByStatus(PyTorchTrainingJob job) {
        return job.getStatus() != null && (job.getStatus().startTime != null
                || job.getStatus().phase != null && job.getStatus().phase.isTerminal());
    }

    @Override
    protected Optional<String> unreadableStatus(PyTorchTrainingJob job) {
        return Optional.ofNullable(job.getStatus() == null ? null : job.getStatus().unreadable);
    }
}
