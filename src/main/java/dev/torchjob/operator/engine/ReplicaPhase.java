package dev.torchjob.operator.engine;

/** Pod phases plus Creating (asked for, not seen yet) and Deleted (gone). */
public enum ReplicaPhase {
    Creating,
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
    Deleted;

    public boolean isFinished() {
        return this == Succeeded || this == Failed;
    }
}
