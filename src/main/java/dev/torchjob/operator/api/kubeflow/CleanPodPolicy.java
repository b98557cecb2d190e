package dev.torchjob.operator.api.kubeflow;

/** Which pods are deleted once a PyTorchJob has finished. */
public enum CleanPodPolicy {
    None,
    /** Pods still running or pending. */
    Running,
    All
}
