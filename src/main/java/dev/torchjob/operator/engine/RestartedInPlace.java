package dev.torchjob.operator.engine;

import java.util.Optional;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * Container restarts the kubelet made of one pod (pod restartPolicy OnFailure or Always) that no pass
 * has counted yet: {@code restarts} in all, {@code uncounted} of them new.
 */
record RestartedInPlace(ReplicaSlot slot, Pod pod, int restarts, int uncounted) {

    static Optional<RestartedInPlace> of(ReplicaSlot slot, Pod pod, ReplicaView view) {
        int restarts = Pods.containerRestarts(pod);
        int counted = view.restartsInPlaceCounted(pod);
        return restarts > counted ? Optional.of(new RestartedInPlace(slot, pod, restarts, restarts - counted)) : Optional.empty();
    }

    /** How the last run that the kubelet restarted ended. */
    ReplicaEnding ending() {
        return ReplicaEnding.restartedInPlace(pod);
    }

    /** As a stopped replica, for an incident. */
    RestartDecision.Stopped stopped() {
        return new RestartDecision.Stopped(slot, ending(), pod.getMetadata().getUid(), pod);
    }

    /** A pod's restarts in place are told apart by how many the kubelet had made. */
    String subject() {
        return pod.getMetadata().getUid() + "#" + restarts;
    }
}
