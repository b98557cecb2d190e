package dev.torchjob.operator.engine;

import java.util.List;

import dev.torchjob.operator.engine.JobState.Outcome;

/**
 * Why a job is in its state after a pass: which path the engine took. Adapters turn it, with the
 * state, into their API's conditions.
 */
public sealed interface Situation {

    /** Training: replicas created, running, restarted within the budget. */
    record Active(boolean replicaFailure, String replicaFailureMessage) implements Situation {
    }

    /** Pausing: {@code podsLeft} pods still to go; paused when none is left. */
    record Pausing(int podsLeft) implements Situation {
        public boolean paused() {
            return podsLeft == 0;
        }
    }

    /** Debug mode: pods run the debug command; failed ones are listed, never restarted. */
    record Debugging(List<String> failedPods) implements Situation {
    }

    /** A gate (the gang scheduler's PodGroup API) keeps the job from starting. */
    record AwaitingAdmission() implements Situation {
    }

    /** The job ended this pass. */
    record Ended(Outcome outcome, String message) implements Situation {
    }

    /** The job had ended before; only clean-up moves on. {@code pauseRequested}: a pause was asked for and is ignored. */
    record Finished(boolean pauseRequested) implements Situation {
    }
}
