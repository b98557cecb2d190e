package dev.torchjob.operator.api;

/** Which pods are deleted once the job has finished (spec §6). */
public enum CleanUpPolicy {
    None,
    All,
    Unfinished
}
