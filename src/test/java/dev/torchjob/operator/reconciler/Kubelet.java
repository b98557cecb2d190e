package dev.torchjob.operator.reconciler;

/** What a node does to a job's pods, as the tests direct it: start them, end them with an exit code, evict them. */
public interface Kubelet {
    /** The pod's containers are running. */
    void run(String podName);

    /** The training container exited with this code (0: the pod Succeeded, else Failed). */
    void exit(String podName, int exitCode);

    /** The training container failed with this code, leaving this termination message (its last log lines). */
    void fail(String podName, int exitCode, String message);

    /** The training container was OOM-killed (exit code 137). */
    void oomKill(String podName);

    /** The node evicted the pod (phase Failed, reason Evicted). */
    void evict(String podName);
}
