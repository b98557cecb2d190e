package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * The replicas of a training job whose pods cannot start, and why ({@link StartBlocker}): a pod the
 * scheduler or the kubelet cannot start, a pod its kubelet refused ({@link RefusedPod}) until a kubelet
 * takes its replacement, an old pod that outstays its deletion, a group the gang scheduler holds back.
 * Said once per pod and cause, counted as nothing: they start by themselves once the cause is fixed
 * (only the deadline, or the queue's own waitForPodsReady, ends the wait).
 */
final class ReplicasCannotStart {
    private static final String WAITS = "; the job waits for it, nothing is counted";

    private final PassContext pass;
    private final Map<String, List<StartBlocker.PodWarning>> podWarnings;
    private final Gang gang;

    ReplicasCannotStart(PassContext pass, Map<String, List<StartBlocker.PodWarning>> podWarnings, Gang gang) {
        this.pass = pass;
        this.podWarnings = podWarnings;
        this.gang = gang;
    }

    /**
     * Why each replica that cannot start waits, the gang scheduler's hold first; {@code heldBack}: the
     * replicas whose pods are not created because the gang scheduler has not admitted their group.
     */
    List<StartBlocker> of(JobTopology topology, List<ReplicaSlot> heldBack) {
        List<StartBlocker> blocked = new ArrayList<>();
        List<Pod> members = topology.slots().stream().map(slot -> pass.pods().get(slot.podName())).filter(Objects::nonNull).toList();
        Optional<Instant> gangUnschedulableCountsFrom = gang.unschedulableCountsFrom(members, members.size() == topology.slots().size(),
                pass.now());
        for (ReplicaSlot slot : topology.slots()) {
            Pod pod = pass.pods().get(slot.podName());
            ReplicaState before = pass.previous().replica(slot.podName());
            Optional<StartBlocker> refusedBefore = refusedBefore(before);
            if (pod != null && RefusedPod.is(pod) && !Pods.isTerminating(pod)) {
                StartBlocker refused = RefusedPod.blocker(pod, pass.ledger().restartAt(slot.podName()), pass.now());
                record(blocked, slot, refused);
                // Said once for refusals in a row of one reason: the condition says when the next pod comes.
                if (refusedBefore.filter(b -> b.reason().equals(refused.reason())).isEmpty()) {
                    pass.out().events.add(JobEvent.warning("ReplicaCannotStart", refused.message() + WAITS)
                            .about(pod.getMetadata().getUid() + "#" + refused.reason()));
                }
                continue;
            }
            if (pod == null || RefusedPod.is(pod)) {
                // Between a refused pod and its new one: what the refusal said still holds.
                refusedBefore.ifPresent(refused -> record(blocked, slot, refused));
                continue;
            }
            if (pass.ledger().isCounted(pod) && !Pods.isTerminating(pod)) {
                continue;
            }
            String uid = pod.getMetadata().getUid();
            StartBlocker known = before != null && uid != null && uid.equals(before.uid()) ? before.cannotStart()
                    : refusedBefore.orElse(null);
            Optional<StartBlocker> blocker = blockerOf(pod, uid, known);
            if (blocker.isEmpty() && refusedBefore.isPresent() && !RefusedPod.admitted(pod)) {
                blocker = refusedBefore; // the new pod has no kubelet's word yet
            }
            if (blocker.isPresent() && blocker.get().reason().equals(StartBlocker.UNSCHEDULABLE) && gangUnschedulableCountsFrom.isPresent()
                    && (known == null || !known.reason().equals(StartBlocker.UNSCHEDULABLE))) {
                // The gang scheduler's word while the group is still being made: see Gang.
                gangUnschedulableCountsFrom.filter(from -> !from.equals(Instant.MAX)).ifPresent(pass.out()::recheckAt);
                continue;
            }
            if (blocker.isPresent()) {
                record(blocked, slot, blocker.get());
                if (known == null || !known.reason().equals(blocker.get().reason())) {
                    pass.out().events.add(JobEvent.warning("ReplicaCannotStart", blocker.get().message() + WAITS)
                            .about(uid + "#" + blocker.get().reason()));
                }
            }
        }
        if (!heldBack.isEmpty()) {
            heldByGang(heldBack, gang.hold().orElseThrow()).ifPresent(hold -> blocked.add(0, hold));
        }
        return blocked;
    }

    private Optional<StartBlocker> blockerOf(Pod pod, String uid, StartBlocker known) {
        Instant now = pass.now();
        if (Pods.isTerminating(pod)) {
            // Its new pod waits for it: said if it outstays its grace period (a lost node, a finalizer).
            LingeringPod.overdueAt(pod).filter(now::isBefore).ifPresent(pass.out()::recheckAt);
            return StartBlocker.overdueTermination(pod, now);
        }
        StartBlocker.nextLookAtWarnings(pod, now).ifPresent(pass.out()::recheckAt);
        StartBlocker.gatesSaidAt(pod).filter(now::isBefore).ifPresent(pass.out()::recheckAt);
        return StartBlocker.of(pod, uid == null ? null : podWarnings.get(uid), known, now);
    }

    private void record(List<StartBlocker> blocked, ReplicaSlot slot, StartBlocker blocker) {
        pass.view().cannotStart(slot.podName(), blocker);
        blocked.add(blocker);
    }

    /** What was said of the replica since its last pod was refused, while no kubelet has taken a pod of it since. */
    private static Optional<StartBlocker> refusedBefore(ReplicaState before) {
        return before == null || before.refusalsInARow() == 0 ? Optional.empty() : Optional.ofNullable(before.cannotStart());
    }

    /** The gang scheduler holds the group back: said as any other cause that keeps pods from starting. */
    private Optional<StartBlocker> heldByGang(List<ReplicaSlot> heldBack, StartBlocker hold) {
        if (hold.reason().equals(StartBlocker.ADMITTING)) {
            return Optional.empty();
        }
        boolean saidBefore = heldBack.stream().map(slot -> pass.previous().replica(slot.podName()))
                .anyMatch(before -> before != null && before.cannotStart() != null && before.cannotStart().reason().equals(hold.reason()));
        heldBack.forEach(slot -> pass.view().cannotStart(slot.podName(), hold));
        if (!saidBefore) {
            pass.out().events.add(JobEvent.warning("ReplicaCannotStart", hold.message() + WAITS).about("gang#" + hold.reason()));
        }
        return Optional.of(hold);
    }
}
