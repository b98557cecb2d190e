package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import dev.torchjob.operator.engine.JobState.ReplicaState;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * A replica's pod its kubelet refused to run: the scheduler bound it to a node whose kubelet, admitting it, found it
 * does not fit there ({@code OutOfcpu}, a device plugin's {@code UnexpectedAdmissionError}, {@code NodeShutdown} on a
 * node shutting down, {@code TopologyAffinityError}, ...). The pod is {@code Failed} without having run anything, so
 * no rank of the group can have joined it: it is no fault of the training. Its replica gets a new pod, which the
 * scheduler places again, and nothing is counted, as for any pod that cannot start. A replica refused again and again
 * (a node that keeps taking pods it refuses) waits longer before each new pod, as the DaemonSet controller does.
 */
final class RefusedPod {
    /** What the kubelet writes before its words on a pod it refused (Kubernetes' {@code rejectPod}, unchanged since 1.x). */
    static final String KUBELET_PREFIX = "Pod was rejected: ";
    /** The second refusal in a row waits 1 s, doubling with each further one up to 5 minutes, as restarts back off. */
    static final RestartBackoff WAITS = new RestartBackoff(Duration.ofSeconds(1), Duration.ofMinutes(5), Duration.ZERO);

    private RefusedPod() {
    }

    /** Failed at its kubelet's admission: the kubelet's words on it, and no container of it ever started. */
    static boolean is(Pod pod) {
        if (pod.getStatus() == null || !"Failed".equals(pod.getStatus().getPhase()) || pod.getStatus().getMessage() == null
                || !pod.getStatus().getMessage().startsWith(KUBELET_PREFIX)) {
            return false;
        }
        return StartBlocker.containerStatuses(pod).stream().noneMatch(RefusedPod::started);
    }

    /** A kubelet has taken the pod: it reports on its containers, or the pod is past Pending (and not refused). */
    static boolean admitted(Pod pod) {
        if (pod.getStatus() == null || is(pod)) {
            return false;
        }
        return !"Pending".equals(pod.getStatus().getPhase())
                || pod.getStatus().getContainerStatuses() != null && !pod.getStatus().getContainerStatuses().isEmpty();
    }

    private static boolean started(ContainerStatus status) {
        boolean now = status.getState() != null && (status.getState().getRunning() != null || status.getState().getTerminated() != null);
        boolean before = status.getLastState() != null && status.getLastState().getTerminated() != null;
        return now || before;
    }

    /**
     * Takes a refused pod the pass sees for the first time: marked in the ledger (never counted, never taken for a failure
     * or a vanished pod), deleted at once or kept (the reason shows in {@code kubectl get pods}) until its new pod is due.
     */
    static void replace(PassContext pass, ReplicaSlot slot, Pod pod) {
        ReplicaState before = pass.previous().replica(slot.podName());
        int refusedBefore = before == null ? 0 : before.refusalsInARow();
        Duration wait = WAITS.delay(refusedBefore);
        Instant newPodAt = wait.isZero() ? null : pass.now().plus(wait);
        pass.ledger().mark(slot.podName(), pod.getMetadata().getUid(), newPodAt);
        pass.view().refused(slot.podName(), refusedBefore + 1);
        if (newPodAt == null) {
            pass.out().delete(pod, Plan.DeletionReason.RESTART); // a replacement: the replica keeps its Service
        } else {
            pass.out().recheckAt(newPodAt);
        }
    }

    /** Why the replica waits: the kubelet's reason and words, and when its new pod comes. */
    static StartBlocker blocker(Pod pod, Optional<Instant> newPodAt, Instant now) {
        String words = ReplicaEnding.brief(pod.getStatus().getMessage().substring(KUBELET_PREFIX.length()));
        String node = pod.getSpec() == null || pod.getSpec().getNodeName() == null ? "" : " on node " + pod.getSpec().getNodeName();
        String reason = pod.getStatus().getReason() == null || pod.getStatus().getReason().isBlank() ? "Refused" : pod.getStatus().getReason();
        String when = newPodAt.filter(now::isBefore).map(at -> "at " + at).orElse("now");
        return new StartBlocker(reason, "pod " + pod.getMetadata().getName() + " was refused by its kubelet" + node + " ("
                + reason + ": " + words + "); a new pod replaces it " + when);
    }
}
