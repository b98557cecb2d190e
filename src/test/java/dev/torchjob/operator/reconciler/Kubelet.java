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

    /** What gloo says in a rank whose peer died mid-collective. */
    String LOST_PEER = "RuntimeError: [gloo/transport/tcp/pair.cc:589] Read error [10.0.0.7]:29500: Connection reset by peer";

    /** A peer of a rank that died mid-training: its collective lost that rank, and it exits 1 saying so, as every peer does. */
    default void losePeer(String podName) {
        fail(podName, 1, LOST_PEER);
    }
}
