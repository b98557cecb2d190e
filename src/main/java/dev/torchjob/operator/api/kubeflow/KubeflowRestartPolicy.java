package dev.torchjob.operator.api.kubeflow;

/** Replica restart policies of kubeflow.org/v1. */
public enum KubeflowRestartPolicy {
    Always,
    OnFailure,
    Never,
    ExitCode
}
