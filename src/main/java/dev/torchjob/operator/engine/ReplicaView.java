package dev.torchjob.operator.engine;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.torchjob.operator.engine.JobState.ContainerState;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;
import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.ReplicaPhase;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;

/** The status's view of every replica: the pods observed, laid over what the last status said. */
final class ReplicaView {
    private final Map<String, Pod> pods;
    private final JobState previous;
    private final RestartLedger ledger;
    /** Replicas that failed this pass, and how: it replaces what the status said of their last failure. */
    private final Map<String, String> failures = new LinkedHashMap<>();
    private final Map<String, Integer> failuresInARow = new LinkedHashMap<>();
    /** In-place restarts counted this pass: the pod's total restarts, now all counted. */
    private final Map<String, Integer> restartsInPlace = new LinkedHashMap<>();

    /** Replicas whose pod its kubelet refused this pass: their refusals in a row, this one included. */
    private final Map<String, Integer> refusalsInARow = new LinkedHashMap<>();

    /** Pods that cannot start this pass, and why. */
    private final Map<String, StartBlocker> cannotStart = new LinkedHashMap<>();

    private final Map<String, String> createdPods;

    ReplicaView(Map<String, Pod> pods, JobState previous, RestartLedger ledger, Map<String, String> createdPods) {
        this.pods = pods;
        this.previous = previous;
        this.ledger = ledger;
        this.createdPods = createdPods;
    }

    /** The in-place restarts of this pod already counted: what the status recorded for the same pod (UID), else none. */
    int restartsInPlaceCounted(Pod pod) {
        String name = pod.getMetadata().getName();
        if (restartsInPlace.containsKey(name)) {
            return restartsInPlace.get(name);
        }
        ReplicaState before = previous.replica(name);
        return before != null && java.util.Objects.equals(before.uid(), pod.getMetadata().getUid()) ? before.restartsInPlace() : 0;
    }

    void restartedInPlace(ReplicaEnding ending, int totalRestarts) {
        failed(ending);
        restartsInPlace.put(ending.podName(), totalRestarts);
    }

    void refused(String podName, int inARow) {
        refusalsInARow.put(podName, inARow);
    }

    void cannotStart(String podName, StartBlocker blocker) {
        cannotStart.put(podName, blocker);
    }

    void failed(ReplicaEnding ending) {
        failures.put(ending.podName(), ending.describe());
    }

    /** How a replica's last pod ended, as the status says it. */
    void failed(String podName, String lastFailure) {
        failures.put(podName, lastFailure);
    }

    void failed(ReplicaEnding ending, int inARow) {
        failed(ending);
        failuresInARow.put(ending.podName(), inARow);
    }

    /**
     * One group per replica type in spec order, one replica per slot in index order. A missing pod is
     * Creating while the job is active, Deleted after; {@code restartsThisPass} are added to the groups'
     * restart counts.
     */
    List<ReplicaGroupState> of(JobTopology topology, boolean active, Map<String, Integer> restartsThisPass) {
        Map<String, List<ReplicaState>> byType = new LinkedHashMap<>();
        for (ReplicaSlot slot : topology.slots()) {
            byType.computeIfAbsent(slot.type(), type -> new ArrayList<>()).add(replica(slot.podName(), active));
        }
        List<ReplicaGroupState> groups = new ArrayList<>();
        byType.forEach((type, replicas) -> {
            ReplicaGroupState before = previous.group(type);
            int restarts = before == null ? 0 : before.restartCount();
            groups.add(new ReplicaGroupState(type, restarts + restartsThisPass.getOrDefault(type, 0), replicas));
        });
        return groups;
    }

    /** The replicas the last status listed, brought up to date with the pods observed (a finished or invalid job). */
    List<ReplicaGroupState> refreshed() {
        List<ReplicaGroupState> groups = new ArrayList<>();
        for (ReplicaGroupState before : previous.replicaGroups()) {
            List<ReplicaState> replicas = new ArrayList<>();
            for (ReplicaState replica : before.replicas()) { // a finished job: nothing new failed
                replicas.add(replica(replica.name(), false));
            }
            groups.add(new ReplicaGroupState(before.type(), before.restartCount(), replicas));
        }
        return groups;
    }

    private ReplicaState replica(String podName, boolean active) {
        Pod pod = pods.get(podName);
        ReplicaState before = previous.replica(podName);
        String uidBefore = createdPods.getOrDefault(podName, before == null ? null : before.uid());
        String lastFailure = failures.getOrDefault(podName, before == null ? null : before.lastFailure());
        int inARow = failuresInARow.getOrDefault(podName, before == null ? 0 : before.failuresInARow());
        int refusedBefore = before == null ? 0 : before.refusalsInARow();
        if (pod == null) {
            // Keep the last pod's UID: it tells a pod that vanished from one never created.
            // A pod the gang scheduler holds back from being created: why is kept with the replica.
            return new ReplicaState(podName, uidBefore, active ? ReplicaPhase.Creating : ReplicaPhase.Deleted, List.of(), lastFailure,
                    inARow, before == null ? 0 : before.restartsInPlace(), cannotStart.get(podName), refusedBefore);
        }
        // A pod its kubelet admitted ends a run of refusals; one still waiting for its kubelet's word keeps it.
        int refusals = refusalsInARow.getOrDefault(podName, RefusedPod.admitted(pod) ? 0 : refusedBefore);
        // A pod on its way out that we did not count keeps the UID last recorded: a pod deleted by
        // someone else is then seen to vanish, while one never recorded (scale-down, pause) is not.
        String uid = Pods.isTerminating(pod) && !ledger.isCounted(pod) ? uidBefore : pod.getMetadata().getUid();
        List<ContainerState> containers = new ArrayList<>();
        if (pod.getStatus() != null && pod.getStatus().getContainerStatuses() != null) {
            for (ContainerStatus status : pod.getStatus().getContainerStatuses()) {
                containers.add(containerOf(status));
            }
        }
        return new ReplicaState(podName, uid, Pods.replicaPhase(pod), containers, lastFailure, inARow, restartsInPlaceCounted(pod),
                cannotStart.get(podName), refusals);
    }

    private static ContainerState containerOf(ContainerStatus status) {
        var state = status.getState();
        if (state != null && state.getTerminated() != null) {
            return new ContainerState(status.getName(), "Terminated", state.getTerminated().getExitCode(),
                    state.getTerminated().getReason());
        }
        if (state != null && state.getRunning() != null) {
            return new ContainerState(status.getName(), "Running", null, null);
        }
        return new ContainerState(status.getName(), "Waiting", null,
                state != null && state.getWaiting() != null ? state.getWaiting().getReason() : null);
    }
}
