package dev.torchjob.operator.api;

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
