package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.metrics.OperatorSdkMetrics;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;

/**
 * A pass whose step the API server refused: said once per distinct error (the job's ReconcileError condition, a
 * Warning event and one log line; retries repeat none of them), and the job looked at again after as long as the
 * error has lasted (1 s, 2 s, 4 s, ... at most 5 min), read from the condition itself, so the back-off survives an
 * operator restart, or from {@link Refusals} where the condition could not be written. Not thrown: the framework
 * would log a stack trace at every retry, and a hundred refused jobs would drown the log. A job that is gone, or
 * whose namespace is being deleted, is let go at once; a pass the next one almost always gets past runs again soon,
 * quietly.
 */
@ApplicationScoped
public class RefusalRetries {
    private static final Logger LOG = Logger.getLogger(RefusalRetries.class);
    /** As @GradualRetry retries any other error: 1 s doubling to 5 min. */
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

    /** The job's ReconcileError condition, in its API's status. */
    public interface ErrorCondition<S> {
        /** The status with the condition set (message) or cleared (null); empty when it says so already. */
        Optional<S> withReconcileError(S status, String reason, String message);

        /** Since when the condition has been True, if it is. */
        Optional<Instant> errorSince(S status);
    }

    @Inject
    PlanExecutor executor;

    @Inject
    Clock clock;

    @Inject
    JobEventRecorder events;

    @Inject
    Refusals refusals;

    @Inject
    OperatorSdkMetrics sdkMetrics;

    /** What the pass returns after {@code failure}; {@code status}: the one the server holds, which takes the condition. */
    <J extends CustomResource<?, S>, S> UpdateControl<J> after(J job, S status, ApplyFailure failure, Context<J> context,
            ErrorCondition<S> condition) {
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
        Optional<S> unwritten = condition.withReconcileError(status, failure.reason(), failure.getMessage());
        Optional<Instant> shown = unwritten.isEmpty() ? condition.errorSince(status) : Optional.empty();
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
            since = say(job, status, failure, context, condition);
        }
        refusals.said(uid, new Refusals.Refusal(failure.reason(), failure.getMessage(), since));
        Duration lasted = Duration.between(since, clock.instant());
        Duration delay = lasted.compareTo(MIN_RETRY) < 0 ? MIN_RETRY : lasted.compareTo(MAX_RETRY) > 0 ? MAX_RETRY : lasted;
        return UpdateControl.<J>noUpdate().rescheduleAfter(delay);
    }

    /** A new refusal: one log line, a Warning event, the job's ReconcileError condition; returns since when it is said. */
    private <J extends CustomResource<?, S>, S> Instant say(J job, S status, ApplyFailure failure, Context<J> context,
            ErrorCondition<S> condition) {
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
        condition.withReconcileError(status, failure.reason(), failure.getMessage())
                .ifPresent(failing -> writeCondition(job, failing, context, true));
        return clock.instant();
    }

    /** Writes the status that carries the job's ReconcileError; a refusal of it is logged once (then at debug). */
    private <J extends CustomResource<?, S>, S> void writeCondition(J job, S failing, Context<J> context, boolean first) {
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
}
