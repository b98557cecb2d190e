package dev.torchjob.operator.api;

/** When the operator restarts a replica (spec §5). */
public enum RestartPolicy {
    Never,
    OnFailure,
    Always,
    ExitCode
}
