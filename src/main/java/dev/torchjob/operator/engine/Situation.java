package dev.torchjob.operator.engine;

import java.util.List;

import dev.torchjob.operator.engine.JobState.Outcome;

/**
 * Why a job is in its state after a pass: which path the engine took. Adapters turn it, with the
 * state, into their API's conditions.
 */
public sealed interface Situation {

    /**
     * Training: replicas created, running, restarted within the budget; {@code cannotStart}: the pods
     * that cannot start and why (they wait, counted as nothing).
     */
    record Active(boolean replicaFailure, String replicaFailureMessage, List<StartBlocker> cannotStart) implements Situation {
        public Active(boolean replicaFailure, String replicaFailureMessage) {
            this(replicaFailure, replicaFailureMessage, List.of());
        }

        /** Every pod that cannot start and why, in one sentence for a condition. */
        public String cannotStartMessage() {
            return cannotStart.stream().map(StartBlocker::message).collect(java.util.stream.Collectors.joining("; "))
                    + ". The job waits for them; nothing is counted.";
        }
    }

    /**
     * Pausing: {@code podsLeft} pods still to go; paused when none is left. {@code lingering}: what holds those
     * still there long after their grace period (a lost node, a finalizer), one clause each.
     */
    record Pausing(int podsLeft, List<String> lingering) implements Situation {
        public Pausing(int podsLeft) {
            this(podsLeft, List.of());
        }

        public boolean paused() {
            return podsLeft == 0;
        }

        /** What holds the pods that linger, as a sentence ending in {@code completes} "once they are gone" (leading space), or "". */
        public String lingeringSaid(String completes) {
            return lingering.isEmpty() ? "" : " " + String.join("; ", lingering) + "; " + completes + " once they are gone.";
        }
    }

    /** Debug mode: pods run the debug command; failed ones are listed, never restarted. */
    record Debugging(List<String> failedPods) implements Situation {
    }

    /** A gate (the gang scheduler's PodGroup API) keeps the job from starting. */
    record AwaitingAdmission() implements Situation {
    }

    /**
     * Waiting in its queue, for one of the reasons below (Kueue's own reason is in the message);
     * {@code podsLeft} pods still to go (none may run unadmitted).
     */
    record Queued(String queue, String reason, String message, int podsLeft) implements Situation {
        public static final String WAITING = "WaitingForAdmission";
        /** Evicted: its pods are being deleted, or its quota is still held. */
        public static final String EVICTED = "Evicted";
        /** Evicted earlier, and waiting to be admitted again. */
        public static final String REQUEUED = "Requeued";
        public static final String UNAVAILABLE = "KueueUnavailable";
        /** The job's Kueue labels are not what Kueue takes: fixing them queues it. */
        public static final String INVALID = "InvalidQueueRequest";
        /** Every job must name a queue, and this one names none: naming one queues it. */
        public static final String NO_QUEUE_NAME = "QueueNameMissing";

        /** The reasons a job that had started is waiting again: readmission resumes it. */
        public static boolean afterEviction(String reason) {
            return EVICTED.equals(reason) || REQUEUED.equals(reason);
        }
    }

    /** The job ended this pass. */
    record Ended(Outcome outcome, String message) implements Situation {
    }

    /** The job had ended before; only clean-up moves on. {@code pauseRequested}: a pause was asked for and is ignored. */
    record Finished(boolean pauseRequested) implements Situation {
    }
}
