package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import dev.torchjob.operator.api.kubeflow.CleanPodPolicy;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.kubeflow.KubeflowLabels;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.kubeflow.KubeflowPlanner;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.javaoperatorsdk.operator.api.config.informer.Informer;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.MaxReconciliationInterval;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.rate.RateLimited;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.retry.GradualRetry;
import io.quarkus.arc.lookup.LookupIfProperty;

/**
 * The shell for Kubeflow's PyTorchJob (kubeflow.org/v1): its pods and per-replica Services observed,
 * the Kubeflow adapter asked. Registered only with {@code torchjob.kubeflow.enabled=true}: running
 * next to Kubeflow's own training-operator, two controllers would run every job.
 */
@LookupIfProperty(name = "torchjob.kubeflow.enabled", stringValue = "true")
@ControllerConfiguration(name = PyTorchJobReconciler.NAME,
        // A label or annotation changed starts a pass too (JobChanged), a status write alone does not.
        generationAwareEventProcessing = false, informer = @Informer(onUpdateFilter = JobChanged.class),
        maxReconciliationInterval = @MaxReconciliationInterval(interval = 10, timeUnit = TimeUnit.MINUTES))
@GradualRetry(maxAttempts = -1, initialInterval = 1000, intervalMultiplier = 2, maxInterval = 300_000)
@RateLimited(maxReconciliations = 1, within = 500, unit = TimeUnit.MILLISECONDS)
public class PyTorchJobReconciler extends JobReconciler<PyTorchJob, PyTorchJobStatus> {
    public static final String NAME = "pytorchjob";

    @jakarta.inject.Inject
    GangPodGroups gangPodGroups;

    @Override
    public List<EventSource<?, PyTorchJob>> prepareEventSources(EventSourceContext<PyTorchJob> context) {
        List<EventSource<?, PyTorchJob>> sources = new ArrayList<>(List.of(
                ownedPods(PyTorchJob.class, KubeflowLabels.OPERATOR_SELECTOR, KubeflowLabels.JOB_NAME, context),
                ownedBy(Service.class, PyTorchJob.class, KubeflowLabels.OPERATOR_SELECTOR, KubeflowLabels.JOB_NAME, context),
                ownedBy(HorizontalPodAutoscaler.class, PyTorchJob.class, KubeflowLabels.OPERATOR_SELECTOR, KubeflowLabels.JOB_NAME, context)));
        sources.addAll(kueue.atStart(context, NAME, new KueueWorkloads.Labels(Map.of(), KubeflowLabels.OPERATOR_SELECTOR,
                KubeflowLabels.JOB_NAME)));
        sources.addAll(withoutQueueName.atStart(context, NAME));
        gangPodGroups.atStart(context).ifPresent(sources::add);
        return sources;
    }

    @Override
    protected Plan<PyTorchJobStatus> plan(PyTorchJob job, Context<PyTorchJob> context, Clock clock, RestartBackoff backoff,
            CreatedPods createdPods, QueueAdmission queue) {
        var pods = context.getSecondaryResources(Pod.class);
        Set<String> services = context.getSecondaryResources(Service.class).stream().map(s -> s.getMetadata().getName())
                .collect(Collectors.toSet());
        Optional<HorizontalPodAutoscaler> autoscaler = context.getSecondaryResources(HorizontalPodAutoscaler.class).stream()
                .filter(h -> h.getMetadata().getName().equals(job.getMetadata().getName())).findFirst();
        var now = clock.instant();
        ResourceID id = ResourceID.fromResource(job);
        return KubeflowPlanner.plan(job, pods, services, autoscaler, now, createdPods.unseen(id, pods), backoff, queue,
                podWarnings.of(pods, now), gangPodGroups.observe(job, context), gonePods.of(id));
    }

    @Override
    protected List<KueueWorkload.PodSet> podSets(PyTorchJob job) {
        return KubeflowPlanner.podSets(job);
    }

    @Override
    protected Optional<String> podsCleanedUp(PyTorchJob job) {
        var policy = job.getSpec() == null || job.getSpec().runPolicy == null ? null : job.getSpec().runPolicy.cleanPodPolicy;
        return policy == null || policy == CleanPodPolicy.None ? Optional.empty() : Optional.of("runPolicy.cleanPodPolicy " + policy);
    }

    @Override
    protected KueueWorkloads.Labels workloadLabels(PyTorchJob job) {
        return new KueueWorkloads.Labels(KubeflowLabels.ofJob(job.getMetadata().getName()), KubeflowLabels.OPERATOR_SELECTOR,
                KubeflowLabels.JOB_NAME);
    }

    @Override
    protected boolean pauseRequested(PyTorchJob job) {
        return job.getSpec() != null && job.getSpec().runPolicy != null && Boolean.TRUE.equals(job.getSpec().runPolicy.suspend);
    }

    @Override
    protected boolean queuedHere(PyTorchJob job) {
        return !KubeflowPlanner.dispatchedByMultiKueue(job);
    }

    @Override
    public Optional<PyTorchJobStatus> withReconcileError(PyTorchJobStatus status, String reason, String message) {
        return KubeflowPlanner.withReconcileError(status, reason, message, clock.instant());
    }

    @Override
    public Optional<java.time.Instant> errorSince(PyTorchJobStatus status) {
        return KubeflowPlanner.errorSince(status);
    }

    @Override
    protected boolean startedByStatus(PyTorchJob job) {
        return job.getStatus() != null && (job.getStatus().startTime != null
                || job.getStatus().phase != null && job.getStatus().phase.isTerminal());
    }

    @Override
    protected Optional<String> unreadableStatus(PyTorchJob job) {
        return Optional.ofNullable(job.getStatus() == null ? null : job.getStatus().unreadable);
    }
}
