package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.RestartDecision.Stopped;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * What each replica's pod says in one pass of a training job: stopped (failed, deleted from outside,
 * vanished, or succeeded under Always), restarted in place by its kubelet, backing off, or missing
 * (its pod is to be created). A pod its kubelet refused is replaced here, counting nothing
 * ({@link RefusedPod}). A pod that runs on a device its kubelet reports failed has stopped, as far as training goes
 * ({@link FailedDevices}): its rank fails or hangs, so it is stopped as a rank stopped from outside is. A pod whose restart is already counted is ended here (a survivor of a group
 * restart at once; a failed one once its back-off is due, so its logs can be read until then).
 * Its lists are the pass's to change: the restart decisions take from them and add to {@code missing}.
 */
record ReplicaSurvey(List<ReplicaSlot> missing, List<Stopped> stopped, List<RestartedInPlace> inPlace) {

    static ReplicaSurvey of(PassContext pass, JobTopology topology) {
        TrainingJob job = pass.job();
        RestartLedger ledger = pass.ledger();
        Instant now = pass.now();
        PassOutput out = pass.out();
        ReplicaSurvey survey = new ReplicaSurvey(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        for (ReplicaSlot slot : topology.slots()) {
            Pod pod = pass.pods().get(slot.podName());
            ReplicaState before = pass.previous().replica(slot.podName());
            // The last pod this replica had: one this operator created may be newer than the status knows.
            String lastUid = pass.createdPods().getOrDefault(slot.podName(), before == null ? null : before.uid());
            Optional<Instant> restartAt = ledger.restartAt(slot.podName()).filter(now::isBefore);
            if (pod != null) {
                if (ledger.isCounted(pod)) {
                    // Counted already (maybe by an earlier operator run): count nothing.
                    if (restartAt.isPresent() && Pods.replicaPhase(pod).isFinished()) {
                        out.recheckAt(restartAt.get());
                    } else {
                        out.delete(pod, DeletionReason.RESTART, job.restartsAsGroup() ? GroupRestarts.stopGrace(pod) : null);
                    }
                } else if (RefusedPod.is(pod)) {
                    // Its kubelet refused it: it ran nothing, so nothing failed (deleted by someone else: it just goes).
                    if (!Pods.isTerminating(pod)) {
                        RefusedPod.replace(pass, slot, pod);
                    }
                } else if (Pods.isTerminating(pod)) {
                    if (job.restartsAsGroup() && Objects.equals(uidOf(pod), lastUid)) {
                        // Being deleted by someone else (kubectl delete pod, an eviction): it stops from outside, now.
                        survey.stopped.add(new Stopped(slot, ReplicaEnding.ofDeletedPod(pod), uidOf(pod), pod));
                    }
                } else if (!Pods.replicaPhase(pod).isFinished() && !FailedDevices.of(pod).isEmpty()) {
                    survey.stopped.add(new Stopped(slot, ReplicaEnding.ofFailedDevice(pod, now), uidOf(pod), pod));
                } else {
                    RestartedInPlace.of(slot, pod, pass.view()).ifPresent(survey.inPlace::add);
                    String podPhase = Pods.phase(pod);
                    if ("Failed".equals(podPhase)) {
                        survey.stopped.add(new Stopped(slot, ReplicaEnding.ofFailedPod(pod), uidOf(pod), pod));
                    } else if ("Succeeded".equals(podPhase) && !slot.isMaster()
                            && slot.restartPolicy() == TrainingJob.RestartPolicy.Always) {
                        survey.stopped.add(new Stopped(slot, ReplicaEnding.succeeded(pod), uidOf(pod), pod));
                    }
                }
            } else if (lastUid != null && !ledger.isCounted(slot.podName(), lastUid)) {
                // Gone between two passes: how it ended, if it was seen on its way out.
                Pod last = pass.gonePods().get(slot.podName());
                if (last != null && lastUid.equals(uidOf(last)) && RefusedPod.is(last)) {
                    survey.missing.add(slot); // refused, then removed before any pass took it: nothing failed
                    continue;
                }
                ReplicaEnding ending = last != null && lastUid.equals(uidOf(last)) ? ReplicaEnding.ofGonePod(last)
                        : ReplicaEnding.vanished(slot.podName());
                survey.stopped.add(new Stopped(slot, ending, lastUid, null));
            } else if (restartAt.isPresent()) {
                out.recheckAt(restartAt.get()); // backing off: the new pod comes when it is due
            } else {
                survey.missing.add(slot);
            }
        }
        return survey;
    }

    private static String uidOf(Pod pod) {
        return pod.getMetadata().getUid();
    }
}
