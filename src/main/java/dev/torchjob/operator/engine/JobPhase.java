package dev.torchjob.operator.engine;

/** A job's phase: the engine's word, and the one both job APIs' status types carry. */
public enum JobPhase {
    Pending,
    Running,
    Paused,
    Resuming,
    Succeeded,
    Failed,
    Unknown;

    public boolean isTerminal() {
        return this == Succeeded || this == Failed;
    }
}
