package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.RestartDecision.Stopped;

/**
 * Replicas restarting one by one (restart scope Replica, elastic jobs, a success under Always): each
 * stopped replica is judged by its own policy and each failure costs one restart of the budget.
 */
final class ReplicaRestarts {
    private final PassContext pass;
    private final TrainingJob job;
    private final JobState previous;
    private final RestartLedger ledger;
    private final ReplicaView view;
    private final RestartBackoff backoff;
    private final Instant now;
    private final PassOutput out;

    ReplicaRestarts(PassContext pass) {
        this.pass = pass;
        this.job = pass.job();
        this.previous = pass.previous();
        this.ledger = pass.ledger();
        this.view = pass.view();
        this.backoff = pass.backoff();
        this.now = pass.now();
        this.out = pass.out();
    }

    /**
     * Counts the kubelet's restarts in place, then decides on the stopped replicas: the ending of the job
     * when one may not restart or the budget cannot pay, else each restarts (its new pod now, or when its
     * back-off is due, and not while the cluster's DNS may still answer the master's name with the address of its pod
     * that ended ({@link MasterAddress}): {@code missing} gets the slots to create now).
     */
    Optional<Ending> apply(JobTopology topology, List<Stopped> stopped, List<RestartedInPlace> inPlace, List<ReplicaSlot> missing) {
        int limit = job.runPolicy().backoffLimit();
        for (RestartedInPlace restarted : inPlace) {
            Optional<Ending> spent = countInPlace(restarted, limit);
            if (spent.isPresent()) {
                return spent;
            }
        }
        RestartDecision decision = RestartDecision.of(stopped, ledger.backoffCount(), job.runPolicy().restartsAllowed(),
                job.retryableExitCodes());
        if (decision instanceof RestartDecision.NotRestartable notRestartable) {
            Stopped s = notRestartable.replica();
            view.failed(s.ending());
            String message = s.ending().withOutput(s.ending().summary() + "; restartPolicy " + s.policy() + " does not restart it");
            out.events.add(JobEvent.warning("ReplicaFailed", message).about(s.podUid()));
            return Optional.of(new Ending(Outcome.ReplicaFailedPermanently, message));
        }
        if (decision instanceof RestartDecision.BudgetSpent spent) {
            ReplicaEnding ending = spent.replica().ending();
            view.failed(ending);
            String message = ending.withOutput(ending.summary() + "; the restart budget is spent (backoffCount "
                    + ledger.backoffCount() + " of runPolicy.backoffLimit " + limit + ")");
            out.events.add(JobEvent.warning("ReplicaFailed", message).about(spent.replica().podUid()));
            return Optional.of(new Ending(Outcome.BackoffLimitExceeded, message));
        }
        List<Stopped> restarts = ((RestartDecision.Restart) decision).restarts();
        Optional<Instant> oldAddressForgotten = restarts.isEmpty() ? Optional.empty() : MasterAddress.oldAddressForgottenAt(pass, topology);
        for (Stopped s : restarts) {
            Optional<Instant> restartAt = countRestart(topology, s, limit, oldAddressForgotten);
            if (restartAt.isPresent()) {
                out.recheckAt(restartAt.get());
            } else if (s.pod() != null) {
                out.delete(s.pod(), DeletionReason.RESTART);
            } else {
                missing.add(s.slot());
            }
        }
        return Optional.empty();
    }

    /**
     * Counts restarts the kubelet already made, each once (the replica's status keeps how many of its
     * pod's restarts were counted); the job ends when they spend the budget.
     */
    private Optional<Ending> countInPlace(RestartedInPlace restarted, int limit) {
        ReplicaEnding ending = restarted.ending();
        for (int i = 0; i < restarted.uncounted(); i++) {
            ledger.countInPlace();
            out.counted(restarted.slot().type(), ending.countedAs(), true);
            if (ledger.backoffCount() > job.runPolicy().restartsAllowed()) {
                view.restartedInPlace(ending, restarted.restarts());
                String message = ending.withOutput(ending.summary() + "; the restart budget is spent (backoffCount "
                        + ledger.backoffCount() + " of runPolicy.backoffLimit " + limit + ")");
                out.events.add(JobEvent.warning("ReplicaFailed", message).about(restarted.subject()));
                return Optional.of(new Ending(Outcome.BackoffLimitExceeded, message));
            }
        }
        view.restartedInPlace(ending, restarted.restarts());
        out.events.add(JobEvent.warning("ReplicaRestarted", ending.withOutput(ending.summary() + " ("
                + PassOutput.restartOf(ledger.backoffCount(), limit) + ")")).about(restarted.subject()));
        return Optional.empty();
    }

    /** Counts the restart; when the back-off or the master's old address makes it wait, returns when its new pod is due. */
    private Optional<Instant> countRestart(JobTopology topology, Stopped s, int limit, Optional<Instant> oldAddressForgotten) {
        ReplicaEnding ending = s.ending();
        Duration delay = Duration.ZERO;
        if (s.isFailure()) {
            ReplicaState before = previous.replica(s.slot().podName());
            boolean ranLongEnough = ending.ran() != null && ending.ran().compareTo(backoff.resetAfter()) >= 0;
            int inARow = before == null || ranLongEnough ? 0 : before.failuresInARow();
            delay = backoff.delay(inARow);
            view.failed(ending, inARow + 1);
        }
        Instant restartAt = delay.isZero() ? null : now.plus(delay);
        boolean waitsForDns = oldAddressForgotten.isPresent() && (restartAt == null || oldAddressForgotten.get().isAfter(restartAt));
        if (waitsForDns) {
            restartAt = oldAddressForgotten.get();
        }
        ledger.count(s.slot().podName(), s.podUid(), restartAt);
        out.counted(s.slot().type(), ending.countedAs(), false);
        out.events.add(JobEvent.warning("ReplicaRestarted", ending.withOutput("Restarting " + ending.summary() + " ("
                + PassOutput.restartOf(ledger.backoffCount(), limit)
                + (waitsForDns ? "; new pod " + MasterAddress.waiting(topology, restartAt)
                        : restartAt == null ? "" : "; back-off " + delay.toSeconds() + " s, new pod at " + restartAt) + ")")).about(s.podUid()));
        return Optional.ofNullable(restartAt);
    }
}
