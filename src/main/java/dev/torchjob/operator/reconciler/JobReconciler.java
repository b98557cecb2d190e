package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.Pods;
import dev.torchjob.operator.metrics.JobMetrics;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.kueue.JobWithoutQueueName;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.kueue.WorkloadSync;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * The thin shell every job API's reconciler shares: observe the job and what it owns from the
 * informer caches, ask the API's adapter (and through it the engine) what to do, apply it, and
 * say on the job when it could not. No decisions are made here.
 *
 * @param <J> the job kind
 * @param <S> its status
 */
public abstract class JobReconciler<J extends CustomResource<?, S>, S> implements Reconciler<J>, RefusalRetries.ErrorCondition<S> {
    private static final Logger LOG = Logger.getLogger(JobReconciler.class);
    /** Our own creates wake no pass (the informer's cache already shows them): look again this soon. */
    private static final Duration AFTER_CREATES = Duration.ofSeconds(2);
    /** A job just labelled with a queue is looked at again this soon if its label's event has not come. */
    private static final Duration AFTER_LABEL = Duration.ofSeconds(1);
    /** A namespace seen being deleted: its jobs' passes do nothing for this long, then ask again. */
    private static final Duration NAMESPACE_ENDING = Duration.ofSeconds(30);

    @Inject
    PlanExecutor executor;

    @Inject
    Clock clock;

    @Inject
    JobEventRecorder events;

    @Inject
    RestartBackoff restartBackoff;

    @Inject
    CreatedPods createdPods;

    @Inject
    GonePods gonePods;

    @Inject
    KueueWorkloads kueue;

    @Inject
    WorkloadWrites workloads;

    @Inject
    JobsWithoutQueueName withoutQueueName;

    @Inject
    PassesInFlight passes;

    @Inject
    Refusals refusals;

    @Inject
    RefusalRetries refusalRetries;

    @Inject
    PodWarnings podWarnings;

    @Inject
    JobMetrics metrics;

    /** What the adapter decides for this pass; {@code queue}: where the job stands with its queue. */
    protected abstract Plan<S> plan(J job, Context<J> context, Clock clock, RestartBackoff backoff, CreatedPods createdPods,
            QueueAdmission queue);

    /** What the job asks its queue for (one podSet per replica group); empty when it cannot run. */
    protected abstract List<KueueWorkload.PodSet> podSets(J job);

    /** The job's clean-up, in its API's words, when it deletes pods once the job ends; empty when it keeps them. */
    protected abstract Optional<String> podsCleanedUp(J job);

    /** How this kind's Workloads are labelled and found. */
    protected abstract KueueWorkloads.Labels workloadLabels(J job);

    /** The job asks to be paused (T9k pause, Kubeflow suspend): its Workload is deactivated. */
    protected abstract boolean pauseRequested(J job);

    /** False when another controller runs the job's queue (Kubeflow: MultiKueue dispatches it). */
    protected boolean queuedHere(J job) {
        return true;
    }

    /**
     * Whether the job's status says the operator started it: pods were made (a start time), or it ended.
     * A job held, paused or refused before its first pod has not started.
     */
    protected abstract boolean startedByStatus(J job);

    /** Which field of the stored status could not be read, if any. */
    protected abstract Optional<String> unreadableStatus(J job);

    /** An informer for one kind of owned object, limited by a label, mapped back to its job by another, cached lean (LeanCache). */
    protected static <R extends HasMetadata, J extends HasMetadata> InformerEventSource<R, J> ownedBy(Class<R> kind, Class<J> jobKind,
            String labelSelector, String jobNameLabel, EventSourceContext<J> context) {
        return ownedBy(kind, jobKind, labelSelector, jobNameLabel, context, new LeanCache<>());
    }

    /** The informer of the jobs' pods: as {@link #ownedBy}, and a pod leaving its cache is kept a while in {@link GonePods}. */
    protected <J extends HasMetadata> InformerEventSource<Pod, J> ownedPods(Class<J> jobKind, String labelSelector, String jobNameLabel,
            EventSourceContext<J> context) {
        LeanCache<Pod> cache = new LeanCache<>(pod -> jobOf(pod, jobNameLabel).ifPresent(job -> gonePods.left(job, pod)));
        return ownedBy(Pod.class, jobKind, labelSelector, jobNameLabel, context, cache);
    }

    private static <R extends HasMetadata, J extends HasMetadata> InformerEventSource<R, J> ownedBy(Class<R> kind, Class<J> jobKind,
            String labelSelector, String jobNameLabel, EventSourceContext<J> context, LeanCache<R> cache) {
        var configuration = InformerEventSourceConfiguration.from(kind, jobKind)
                .withName(jobKind.getSimpleName().toLowerCase() + "-" + kind.getSimpleName().toLowerCase())
                .withLabelSelector(labelSelector)
                .withItemStore(cache)
                .withNamespacesInheritedFromController()
                .withSecondaryToPrimaryMapper((R owned) -> jobOf(owned, jobNameLabel).map(Set::of).orElse(Set.of()))
                .build();
        return new InformerEventSource<>(configuration, context);
    }

    private static Optional<ResourceID> jobOf(HasMetadata owned, String jobNameLabel) {
        String job = owned.getMetadata().getLabels() == null ? null : owned.getMetadata().getLabels().get(jobNameLabel);
        return job == null ? Optional.empty() : Optional.of(new ResourceID(job, owned.getMetadata().getNamespace()));
    }

    @Override
    public UpdateControl<J> reconcile(J job, Context<J> context) {
        if (!passes.enter()) {
            return UpdateControl.noUpdate(); // shutting down: the next leader looks at this job
        }
        try {
            return pass(job, context);
        } finally {
            passes.exit();
        }
    }

    private UpdateControl<J> pass(J job, Context<J> context) {
        if (job.getMetadata().getDeletionTimestamp() != null
                || refusals.namespaceEnding(job.getMetadata().getNamespace(), clock.instant(), NAMESPACE_ENDING)) {
            // Being deleted (foreground: its pods first), or its namespace is: the pods' deletions are no
            // failures, nothing is created for it any more; HeldWorkloads lets its Workload go.
            return UpdateControl.noUpdate();
        }
        Optional<String> unreadable = unreadableStatus(job);
        if (unreadable.isPresent()) {
            // Planning from an empty status would count restarts again and could undo an outcome: the job is
            // left as it is, and its events say why (once for each version of the job that cannot be read).
            try {
                events.record(job, Plan.JobEvent.warning("StatusUnreadable", unreadable.get()
                        + "; the operator leaves this job alone until its status can be read"),
                        "unreadable\n" + job.getMetadata().getResourceVersion());
            } catch (KubernetesClientException e) {
                LOG.warnf("%s %s/%s: its status cannot be read (%s); nor could that be said: %s", job.getKind(),
                        job.getMetadata().getNamespace(), job.getMetadata().getName(), unreadable.get(), ApplyFailure.serverMessage(e));
            }
            return UpdateControl.noUpdate();
        }
        ResourceID id = ResourceID.fromResource(job);
        Optional<QueueLook> look;
        try {
            look = lookAtQueue(job, context);
        } catch (ApplyFailure e) {
            return refusalRetries.after(job, job.getStatus(), e, context, this);
        }
        if (look.isEmpty()) {
            // Put in its namespace's default LocalQueue: the label's own event brings the job back, queued.
            return UpdateControl.<J>noUpdate().rescheduleAfter(AFTER_LABEL);
        }
        KueueWorkloads.Observed queue = look.get().queue();
        List<KueueWorkload.PodSet> podSets = look.get().podSets();
        Plan<S> plan = plan(job, context, clock, restartBackoff, createdPods, queue.admission());
        if (plan.after().phase() != null && plan.after().phase().isTerminal()) {
            createdPods.forget(id);
        }
        boolean created = !plan.podsToCreate().isEmpty();
        boolean settled = true;
        try {
            if (plan.statusCanFollowCreates()) {
                // A first pass that only creates: planned once more from its own status once the pods
                // exist (the cache holds them now), so the first status written says they were created.
                executor.apply(job, plan.withoutStatus(), context);
                J planned = JobStatusWrites.copyOf(job, context);
                planned.setStatus(plan.status());
                plan = plan.followedBy(plan(planned, context, clock, restartBackoff, createdPods, queue.admission()));
            }
            LOG.debugf("%s %s/%s: phase %s, create %d, delete %d, status changed %s", job.getKind(), job.getMetadata().getNamespace(),
                    job.getMetadata().getName(), plan.after().phase(), plan.podsToCreate().size(), plan.podsToDelete().size(),
                    plan.statusChanged());
            executor.apply(job, plan, context);
            countAdmission(job, queue, plan);
            if (queue.queue().isPresent() && !plan.deleteJob()) {
                settled = workloads.sync(job, queue, WorkloadSync.Job.of(plan.after(), pauseRequested(job), podSets,
                        job.getMetadata().getUid(), context.getSecondaryResources(Pod.class),
                        plan.podsToDelete().stream().map(Plan.PodDeletion::name).collect(java.util.stream.Collectors.toSet()),
                        queue.maxExecutionSeconds(), KueueWorkload.queueOf(job)),
                        workloadLabels(job), clock.instant());
            }
        } catch (ApplyFailure e) {
            // The condition goes on the status the server holds: the plan's if it was written (never an
            // older one, which would undo a counted restart), else the last one (writing the plan's
            // status here would count a restart whose event this pass never sent). A first pass whose
            // creates failed before its status was written counted nothing: its status takes the condition.
            boolean planStatusWritten = plan.statusChanged() && PlanExecutor.statusWrittenBefore(e);
            return refusalRetries.after(job, planStatusWritten ? plan.status() : job.getStatus(), e, context, this);
        }
        // Applied in full: an error still on the job is over.
        refusals.over(job.getMetadata().getUid());
        S applied = plan.statusChanged() ? plan.status() : job.getStatus();
        try {
            withReconcileError(applied, null, null).ifPresent(cleared -> executor.writeStatus(job, cleared, context));
        } catch (ApplyFailure e) {
            return refusalRetries.after(job, applied, e, context, this);
        }
        UpdateControl<J> control = UpdateControl.noUpdate();
        Optional<Duration> recheck = !created && plan.podsToCreate().isEmpty() && settled ? plan.recheckAfter()
                : Optional.of(plan.recheckAfter().filter(d -> d.compareTo(AFTER_CREATES) < 0).orElse(AFTER_CREATES));
        recheck.map(d -> d.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : d).ifPresent(control::rescheduleAfter);
        return control;
    }

    /** Where the job stands with its queue, and the podSets it asks with. */
    private record QueueLook(KueueWorkloads.Observed queue, List<KueueWorkload.PodSet> podSets) {
    }

    /** The job's queue; empty when this pass put it in its namespace's default LocalQueue (its label). */
    private Optional<QueueLook> lookAtQueue(J job, Context<J> context) {
        JobWithoutQueueName.Placement placement = queuedHere(job) ? withoutQueueName.place(job, () -> startedByStatus(job)
                || !Pods.ownedBy(job.getMetadata().getUid(), context.getSecondaryResources(Pod.class)).isEmpty(), context)
                : JobWithoutQueueName.Placement.AS_IS;
        if (placement == JobWithoutQueueName.Placement.DEFAULT_QUEUE) {
            return Optional.empty();
        }
        if (queuedHere(job) && kueue.mayBeQueued(job, context, podsCleanedUp(job))) {
            List<KueueWorkload.PodSet> podSets = podSets(job);
            return Optional.of(new QueueLook(kueue.observe(job, podSets, workloadLabels(job), context), podSets));
        }
        // Held; but a job that has a Workload (its label just removed) first leaves that queue, above.
        return Optional.of(new QueueLook(placement == JobWithoutQueueName.Placement.HOLD ? KueueWorkloads.Observed.held(job)
                : KueueWorkloads.Observed.NOT_QUEUED, List.of()));
    }

    /** The queue's metrics, once the plan is applied: how long an admitted job waited, and an eviction of a running one. */
    private void countAdmission(J job, KueueWorkloads.Observed queue, Plan<S> plan) {
        if (queue.admission() instanceof QueueAdmission.Admitted && plan.before().queued()) {
            Instant decidedAt = plan.decidedAt();
            queue.waitingSince().ifPresent(since -> metrics.admitted(job, Duration.between(since, decidedAt)));
        } else if (queue.admission() instanceof QueueAdmission.Evicted evicted && !plan.before().queued()
                && (plan.before().phase() == null || !plan.before().phase().isTerminal())) {
            metrics.evicted(job, evicted.reason());
        }
    }
}
