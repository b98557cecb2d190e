package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
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
import dev.torchjob.operator.metrics.OperatorSdkMetrics;
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
public abstract class JobReconciler<J extends CustomResource<?, S>, S> implements Reconciler<J> {
    private static final Logger LOG = Logger.getLogger(JobReconciler.class);
    /** Our own creates wake no pass (the informer's cache already shows them): look again this soon. */
    private static final Duration AFTER_CREATES = Duration.ofSeconds(2);
    /** A job just labelled with a queue is looked at again this soon if its label's event has not come. */
    private static final Duration AFTER_LABEL = Duration.ofSeconds(1);
    /** Retries of a step the API server refused: as @GradualRetry retries any other error, 1 s doubling to 5 min. */
    private static final Duration MIN_RETRY = Duration.ofSeconds(1);
    private static final Duration MAX_RETRY = Duration.ofMinutes(5);
    /**
     * A pass that failed in a way the next one almost always gets past runs again this soon, quietly, up to
     * so many times in a row before it is said as an error: a call lost to a connection closed under it
     * (the HTTP client opens a new one meanwhile), a status update that met 409 because the cache was
     * behind the server (the watch brings the newer job within milliseconds).
     */
    private static final Duration RUN_AGAIN_AFTER = Duration.ofMillis(100);
    private static final int CLOSED_CONNECTIONS_NOT_SAID = 2;
    private static final int STATUS_CONFLICTS_NOT_SAID = 10;
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
    PodWarnings podWarnings;

    @Inject
    OperatorSdkMetrics sdkMetrics;

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

    /** The status with the ReconcileError condition set (message) or cleared (null); empty when it says so already. */
    protected abstract Optional<S> withReconcileError(S status, String reason, String message);

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
            return retryAfterRefusal(job, job.getStatus(), e, context);
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
            return retryAfterRefusal(job, planStatusWritten ? plan.status() : job.getStatus(), e, context);
        }
        // Applied in full: an error still on the job is over.
        refusals.over(job.getMetadata().getUid());
        S applied = plan.statusChanged() ? plan.status() : job.getStatus();
        try {
            withReconcileError(applied, null, null).ifPresent(cleared -> executor.writeStatus(job, cleared, context));
        } catch (ApplyFailure e) {
            return retryAfterRefusal(job, applied, e, context);
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

    /**
     * A step the API server refused: said once per distinct error (the condition, a Warning event and
     * one log line; retries repeat none of them), and the job looked at again after as long as the
     * error has lasted (1 s, 2 s, 4 s, ... at most 5 min), read from the condition itself, so the
     * back-off survives an operator restart, or from memory where the condition could not be written.
     * Not thrown: the framework would log a stack trace at every retry, and a hundred refused jobs would
     * drown the log. A job that is gone, or whose namespace is being deleted, is let go at once.
     */
    private UpdateControl<J> retryAfterRefusal(J job, S status, ApplyFailure failure, Context<J> context) {
        String uid = job.getMetadata().getUid();
        if (failure.namespaceTerminating()) {
            refusals.namespaceEnding(job.getMetadata().getNamespace(), clock.instant());
            refusals.over(uid);
            LOG.debugf("%s %s/%s: its namespace is being deleted", job.getKind(), job.getMetadata().getNamespace(),
                    job.getMetadata().getName());
            return UpdateControl.noUpdate();
        }
        if (PlanExecutor.STATUS_STEP.equals(failure.reason()) && failure.code() == HttpURLConnection.HTTP_NOT_FOUND) {
            refusals.over(uid); // deleted since the pass began: its deletion event ends what is left of it
            LOG.debugf("%s %s/%s: gone", job.getKind(), job.getMetadata().getNamespace(), job.getMetadata().getName());
            return UpdateControl.noUpdate();
        }
        if (failure.unanswered() && refusals.runAgainQuietly(uid, CLOSED_CONNECTIONS_NOT_SAID)) {
            // Nothing the job or its user can act on, and the next pass almost always goes through (what the
            // lost call did, if it reached the server, the next pass finds done: creates meet 409, the
            // status is applied, events are named): no condition, no event, one line at info.
            LOG.infof("%s %s/%s: %s (%s), before any answer; the pass runs again", job.getKind(),
                    job.getMetadata().getNamespace(), job.getMetadata().getName(), failure.getMessage(), failure.reason());
            return UpdateControl.<J>noUpdate().rescheduleAfter(RUN_AGAIN_AFTER);
        }
        if (PlanExecutor.STATUS_STEP.equals(failure.reason()) && failure.code() == HttpURLConnection.HTTP_CONFLICT
                && refusals.runAgainQuietly(uid, STATUS_CONFLICTS_NOT_SAID)) {
            // Someone edited the job (a label, the spec) after the version the cache holds: the pass runs again
            // on the newer one, as Kubernetes controllers do on a conflict. Safe as after a closed connection:
            // events are named, pods already made are found, restarts are counted by pod UID.
            LOG.debugf("%s %s/%s: the job changed while the pass ran; it runs again", job.getKind(),
                    job.getMetadata().getNamespace(), job.getMetadata().getName());
            return UpdateControl.<J>noUpdate().rescheduleAfter(RUN_AGAIN_AFTER);
        }
        sdkMetrics.refusedReconciliation();
        Optional<Refusals.Refusal> remembered = refusals.of(uid).filter(said -> said.sameAs(failure));
        Optional<S> unwritten = withReconcileError(status, failure.reason(), failure.getMessage());
        Optional<Instant> shown = unwritten.isEmpty() ? errorSince(status) : Optional.empty();
        Instant since;
        if (remembered.isPresent()) {
            since = remembered.get().since();
            if (unwritten.isPresent() && !PlanExecutor.STATUS_STEP.equals(failure.reason())) {
                // Said, but the write of the condition failed on its own then (a closed connection, say): tried
                // again, without a second event or log line. Not where the status write is the refused step.
                writeCondition(job, unwritten.get(), context, false);
            }
        } else if (shown.isPresent()) {
            since = shown.get();
        } else {
            since = say(job, status, failure, context);
        }
        refusals.said(uid, new Refusals.Refusal(failure.reason(), failure.getMessage(), since));
        Duration lasted = Duration.between(since, clock.instant());
        Duration delay = lasted.compareTo(MIN_RETRY) < 0 ? MIN_RETRY : lasted.compareTo(MAX_RETRY) > 0 ? MAX_RETRY : lasted;
        return UpdateControl.<J>noUpdate().rescheduleAfter(delay);
    }

    /** A new refusal: one log line, a Warning event, the job's ReconcileError condition; returns since when it is said. */
    private Instant say(J job, S status, ApplyFailure failure, Context<J> context) {
        LOG.warnf("%s %s/%s: %s (%s); retried with back-off", job.getKind(), job.getMetadata().getNamespace(),
                job.getMetadata().getName(), failure.getMessage(), failure.reason());
        try {
            // Named by the error and the job's version: an operator killed before the condition below was
            // written says it again under the same name, which the API server keeps once.
            events.record(job, Plan.JobEvent.warning(failure.reason(), failure.getMessage()),
                    "refused\n" + failure.reason() + "\n" + failure.getMessage() + "\n" + job.getMetadata().getResourceVersion());
        } catch (KubernetesClientException e) {
            LOG.debugf("%s %s/%s: could not say it in an event: %s", job.getKind(), job.getMetadata().getNamespace(),
                    job.getMetadata().getName(), ApplyFailure.serverMessage(e));
        }
        withReconcileError(status, failure.reason(), failure.getMessage()).ifPresent(failing -> writeCondition(job, failing, context, true));
        return clock.instant();
    }

    /** Writes the status that carries the job's ReconcileError; a refusal of it is logged once (then at debug). */
    private void writeCondition(J job, S failing, Context<J> context, boolean first) {
        try {
            executor.writeStatus(job, failing, context);
        } catch (ApplyFailure e) {
            if (first) {
                LOG.warnf("%s %s/%s: could not record the error on its status: %s", job.getKind(), job.getMetadata().getNamespace(),
                        job.getMetadata().getName(), e.getMessage());
            } else {
                LOG.debugf("%s %s/%s: could not record the error on its status again: %s", job.getKind(),
                        job.getMetadata().getNamespace(), job.getMetadata().getName(), e.getMessage());
            }
        }
    }

    /** Since when the job's ReconcileError condition has been True, if it is. */
    protected abstract Optional<Instant> errorSince(S status);

}
