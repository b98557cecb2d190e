package dev.torchjob.operator.engine;

import java.util.ArrayList;
import java.util.List;

import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * What happens to the replicas that stopped in one pass: the job fails (a replica its policy does not
 * restart, or a budget that cannot pay for every failure), or the replicas restart.
 */
sealed interface RestartDecision {

    /** A replica that stopped: its slot, why, the UID of its last pod, and the pod (null when it vanished). */
    record Stopped(ReplicaSlot slot, ReplicaEnding ending, String podUid, Pod pod) {
        boolean isFailure() {
            return ending.cause() != ReplicaEnding.Cause.SUCCEEDED;
        }

        RestartPolicy policy() {
            return slot.restartPolicy() == null ? RestartPolicy.OnFailure : slot.restartPolicy();
        }
    }

    /** Its restart policy does not restart this replica. */
    record NotRestartable(Stopped replica) implements RestartDecision {
    }

    /** The budget cannot pay for this failure. */
    record BudgetSpent(Stopped replica) implements RestartDecision {
    }

    /** These restart; {@code failures} are the ones that failed (a success restarted under Always is none). */
    record Restart(List<Stopped> restarts, List<Stopped> failures) implements RestartDecision {
    }

    /**
     * Every failure costs one restart of the budget; a replica that succeeded under Always restarts only
     * while budget is left, and otherwise just stays done.
     */
    static RestartDecision of(List<Stopped> stopped, int backoffCount, int backoffLimit, TrainingJob.RetryableExitCodes retryable) {
        for (Stopped s : stopped) {
            if (!RestartRules.isRestartable(s.policy(), s.ending(), retryable)) {
                return new NotRestartable(s);
            }
        }
        List<Stopped> failures = stopped.stream().filter(Stopped::isFailure).toList();
        if (!failures.isEmpty() && backoffCount + failures.size() > backoffLimit) {
            // The first failure the budget cannot pay for (the first one when the limit was lowered below what is spent).
            return new BudgetSpent(failures.get(Math.max(0, Math.min(failures.size() - 1, backoffLimit - backoffCount))));
        }
        List<Stopped> restarts = new ArrayList<>(failures);
        stopped.stream().filter(s -> !s.isFailure())
                .limit(Math.max(0, backoffLimit - backoffCount - failures.size()))
                .forEach(restarts::add);
        return new Restart(restarts, failures);
    }
}
