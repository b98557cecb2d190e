package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.Observation;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.t9k.JobLabels;
import dev.torchjob.operator.t9k.T9kPlanner;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.MaxReconciliationInterval;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.processing.event.rate.RateLimited;
import io.javaoperatorsdk.operator.processing.retry.GradualRetry;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * The thin shell for PyTorchTrainingJob: observe the job and its pods from the informer caches,
 * ask the T9k adapter (and through it the engine) what to do, and let the executor do it. No
 * decisions are made here.
 */
@ControllerConfiguration(name = PyTorchTrainingJobReconciler.NAME,
        // Every job is looked at again at least this often, even if no event comes.
        maxReconciliationInterval = @MaxReconciliationInterval(interval = 10, timeUnit = TimeUnit.MINUTES))
// A pass that fails is retried with back-off, never given up: 1 s doubling to 5 min.
@GradualRetry(maxAttempts = -1, initialInterval = 1000, intervalMultiplier = 2, maxInterval = 300_000)
// At most one pass per job per half second: the burst of pod events of a starting or restarting job
// (created, scheduled, started, for each replica) is planned once, not once per event.
@RateLimited(maxReconciliations = 1, within = 500, unit = TimeUnit.MILLISECONDS)
public class PyTorchTrainingJobReconciler implements Reconciler<PyTorchTrainingJob> {
    public static final String NAME = "pytorchtrainingjob";
    private static final Logger LOG = Logger.getLogger(PyTorchTrainingJobReconciler.class);

    @Inject
    PlanExecutor executor;

    @Inject
    Clock clock;

    @Inject
    PodGroupApi podGroups;

    @Inject
    JobEventRecorder events;

    @Inject
    RestartBackoff restartBackoff;

    @Inject
    CreatedPods createdPods;

    private static final Duration AFTER_CREATES = Duration.ofSeconds(2);

    @Override
    public List<EventSource<?, PyTorchTrainingJob>> prepareEventSources(EventSourceContext<PyTorchTrainingJob> context) {
        return List.of(ownedBy(Pod.class, context), ownedBy(Service.class, context));
    }

    /** An informer for one kind of owned object, limited to the operator's label, mapped back by owner-name, cached lean. */
    private static <R extends HasMetadata> InformerEventSource<R, PyTorchTrainingJob> ownedBy(
            Class<R> kind, EventSourceContext<PyTorchTrainingJob> context) {
        var configuration = InformerEventSourceConfiguration.from(kind, PyTorchTrainingJob.class)
                .withName(kind.getSimpleName().toLowerCase())
                .withLabelSelector(JobLabels.OPERATOR_SELECTOR)
                .withItemStore(new CacheWithoutManagedFields<>())
                .withNamespacesInheritedFromController()
                .withSecondaryToPrimaryMapper((R owned) -> {
                    String job = owned.getMetadata().getLabels() == null ? null
                            : owned.getMetadata().getLabels().get(JobLabels.OWNER_NAME);
                    return job == null ? Set.of() : Set.of(new ResourceID(job, owned.getMetadata().getNamespace()));
                })
                .build();
        return new InformerEventSource<>(configuration, context);
    }

    @Override
    public UpdateControl<PyTorchTrainingJob> reconcile(PyTorchTrainingJob job, Context<PyTorchTrainingJob> context) {
        if (job.getStatus() != null && job.getStatus().unreadable != null) {
            // Planning from an empty status would count restarts again and could undo an outcome: the job is
            // left as it is, and its events say why.
            events.record(job, Plan.JobEvent.warning("StatusUnreadable", job.getStatus().unreadable
                    + "; the operator leaves this job alone until its status can be read"));
            return UpdateControl.noUpdate();
        }
        var pods = context.getSecondaryResources(Pod.class);
        boolean serviceExists = context.getSecondaryResources(Service.class).stream()
                .anyMatch(s -> s.getMetadata().getName().equals(job.getMetadata().getName()));
        ResourceID id = ResourceID.fromResource(job);
        Plan<PyTorchTrainingJobStatus> plan = T9kPlanner.plan(new Observation<>(job, pods, serviceExists, podGroups.stateOf(job),
                clock.instant(), createdPods.unseen(id, pods)), restartBackoff);
        if (plan.after().phase() != null && plan.after().phase().isTerminal()) {
            createdPods.forget(id);
        }
        LOG.debugf("job %s/%s: phase %s, create %d, delete %d, status changed %s", job.getMetadata().getNamespace(),
                job.getMetadata().getName(), plan.after().phase(), plan.podsToCreate().size(), plan.podsToDelete().size(),
                plan.statusChanged());
        try {
            executor.apply(job, plan, context);
        } catch (ApplyFailure e) {
            // The condition goes on the status the server holds: the plan's if it was written (never an
            // older one, which would undo a counted restart), else the last one (writing the plan's
            // status here would count a restart whose event this pass never sent).
            boolean planStatusWritten = plan.statusChanged() && !PlanExecutor.STATUS_STEP.equals(e.reason());
            report(job, planStatusWritten ? plan.status() : job.getStatus(), e, context);
            throw e;
        }
        // Applied in full: an error still on the job is over.
        T9kPlanner.withReconcileError(plan.statusChanged() ? plan.status() : job.getStatus(), null, null, clock.instant())
                .ifPresent(cleared -> executor.writeStatus(job, cleared, context));
        UpdateControl<PyTorchTrainingJob> control = UpdateControl.noUpdate();
        // Our own creates wake no pass (the informer's cache already shows them): look again shortly,
        // so the status reports the new pods even if nothing happens to them.
        Optional<Duration> recheck = plan.podsToCreate().isEmpty() ? plan.recheckAfter()
                : Optional.of(plan.recheckAfter().filter(d -> d.compareTo(AFTER_CREATES) < 0).orElse(AFTER_CREATES));
        recheck.map(d -> d.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : d).ifPresent(control::rescheduleAfter);
        return control;
    }

    /** The job's ReconcileError condition and a Warning event, once per distinct error: retries repeat neither. */
    private void report(PyTorchTrainingJob job, PyTorchTrainingJobStatus status, ApplyFailure failure, Context<PyTorchTrainingJob> context) {
        T9kPlanner.withReconcileError(status, failure.reason(), failure.getMessage(), clock.instant()).ifPresent(failing -> {
            events.record(job, Plan.JobEvent.warning(failure.reason(), failure.getMessage()));
            try {
                executor.writeStatus(job, failing, context);
            } catch (ApplyFailure e) {
                LOG.warnf("job %s/%s: could not record the error on its status: %s", job.getMetadata().getNamespace(),
                        job.getMetadata().getName(), e.getMessage());
            }
        });
    }
}
