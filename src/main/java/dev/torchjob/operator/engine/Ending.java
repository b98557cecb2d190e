package dev.torchjob.operator.engine;

import dev.torchjob.operator.engine.JobState.Outcome;

/** A step of a pass ends the job: with this outcome, said in this message. */
record Ending(Outcome outcome, String message) {
}
