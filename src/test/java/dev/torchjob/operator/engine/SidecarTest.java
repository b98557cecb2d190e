package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;

/**
 * A replica is judged by its training container, not by its pod: a sidecar (a service mesh's proxy, a log
 * shipper) keeps the pod Running after the training ended, and the kubelet never ends it. Without this, one
 * rank's fault would leave the job hanging, its peers blocked, and a finished job would hold its nodes.
 */
class SidecarTest {
    static final java.time.Instant FAULT = GroupRestartTest.FAULT;

    static List<String> stopped(Decision decision) {
        return decision.sidecarsToStop().stream().map(Plan.SidecarStop::name).sorted().toList();
    }

    @Test
    void aRankKilledBesideItsSidecarRestartsTheJobOnceNamingIt() {
        Run run = GroupRestartTest.running(RestartPolicy.ExitCode, 3);
        run.exitBesideSidecar("j-worker-1", "Never", 137, "Error", "epoch 3", FAULT);
        run.exitBesideSidecar("j-master-0", "Never", 1, "Error", GroupRestartTest.LOST_PEER, FAULT);
        run.exitBesideSidecar("j-worker-0", "Never", 1, "Error", GroupRestartTest.LOST_PEER, FAULT.plusSeconds(1));
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome());
        assertEquals(1, restart.state().backoffCount(), "one fault, one restart, though every pod still runs a sidecar");
        List<Plan.JobEvent> said = GroupRestartTest.events(restart, "JobRestarting");
        assertEquals(1, said.size(), restart.events().toString());
        assertTrue(said.get(0).message().startsWith("pod j-worker-1 (container pytorch) exited with code 137 (Error); then j-master-0 "
                + "(exit code 1), j-worker-0 (exit code 1) failed too, consequences (not counted)"), said.get(0).message());
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), GroupRestartTest.names(restart.podsToDelete()),
                "the old group goes, sidecars with it");
        assertEquals(List.of(), stopped(restart), "a pod being deleted needs no stop");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), GroupRestartTest.names(run.pass().podsToCreate()));
    }

    @Test
    void aRankWhoseTrainingEndedHasItsSidecarsStoppedOnceWhileTheVerdictWaits() {
        Run run = GroupRestartTest.running(RestartPolicy.ExitCode, 3);
        // A peer's exit 1 may be a consequence: the verdict waits, the pod is kept for its logs, its sidecar is stopped.
        run.exitBesideSidecar("j-master-0", "Never", 1, "Error", GroupRestartTest.LOST_PEER, FAULT);
        Decision waiting = run.pass();
        assertEquals(0, waiting.state().backoffCount());
        assertTrue(waiting.podsToDelete().isEmpty());
        assertEquals(List.of("j-master-0"), stopped(waiting));
        assertEquals(ReplicaPhase.Failed, waiting.state().replica("j-master-0").phase(), "the replica failed, its pod still Running");
        assertEquals(List.of(), stopped(run.pass()), "asked once: the pod says it was");
        run.deadlineExceeded("j-master-0");
        assertEquals(List.of(), stopped(run.pass()));
        run.exit("j-worker-0", 137, "Error", null, FAULT);
        Decision verdict = run.pass();
        assertEquals(1, verdict.state().backoffCount());
        assertTrue(GroupRestartTest.events(verdict, "JobRestarting").get(0).message().startsWith("pod j-worker-0 (container pytorch) "
                + "exited with code 137 (Error); then j-master-0 (exit code 1)"), verdict.events().toString());
    }

    @Test
    void theMastersSuccessBesideItsSidecarEndsTheJobAndFreesItsNode() {
        Run run = GroupRestartTest.running(RestartPolicy.ExitCode, 3);
        run.exitBesideSidecar("j-master-0", "Never", 0, "Completed", "done", FAULT);
        Decision done = run.pass();
        assertEquals(Outcome.Succeeded, done.state().outcome(), "the pod is Running only for its sidecar");
        assertEquals(List.of("j-master-0"), stopped(done), "kept (cleanPodPolicy None), but ended");
        run.deadlineExceeded("j-master-0");
        Decision after = run.pass();
        assertEquals(Outcome.Succeeded, after.state().outcome());
        assertEquals(ReplicaPhase.Succeeded, after.state().replica("j-master-0").phase(),
                "the kubelet's DeadlineExceeded does not undo the training's exit 0");
        assertTrue(after.events().isEmpty() && stopped(after).isEmpty(), after.events().toString());
    }

    @Test
    void afterTheStopTheReplicaIsNamedByItsTrainingNotByTheDeadline() {
        Run run = GroupRestartTest.running(RestartPolicy.Never, 3);
        run.exitBesideSidecar("j-worker-0", "Never", 2, "Error", "ValueError: bad batch", FAULT);
        // Seen only once the sidecar was stopped (an operator restarted in between): the training's words, not the kubelet's.
        run.pods.get("j-worker-0").getMetadata().setAnnotations(java.util.Map.of(Pods.SIDECARS_STOPPED, FAULT.toString()));
        run.deadlineExceeded("j-worker-0");
        run.now = FAULT.plusSeconds(6); // past the wait for the incident to unfold
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome());
        String said = ((Situation.Ended) failed.situation()).message();
        assertTrue(said.contains("pod j-worker-0 (container pytorch) exited with code 2 (Error)"), said);
        assertFalse(said.contains("deadline"), said);
    }

    @Test
    void aPodsOwnDeadlineIsStillSaid() {
        Run run = GroupRestartTest.running(RestartPolicy.Never, 3);
        run.exitBesideSidecar("j-worker-0", "Never", 137, "Error", null, FAULT);
        run.deadlineExceeded("j-worker-0"); // the template's activeDeadlineSeconds, not the operator's stop
        String said = ((Situation.Ended) run.pass().situation()).message();
        assertTrue(said.contains("exited with code 137 (Error: Pod was active on the node longer than the specified deadline)"), said);
    }

    @Test
    void underOnFailureTheKubeletRestartsAFailedTrainingSoOnlyASuccessEndsTheReplica() {
        Run run = GroupRestartTest.running(RestartPolicy.OnFailure, 3);
        run.exitBesideSidecar("j-worker-0", "OnFailure", 1, "Error", null, FAULT);
        Decision restarting = run.pass();
        assertEquals(0, restarting.state().backoffCount(), "the kubelet starts it again: nothing to decide yet");
        assertTrue(stopped(restarting).isEmpty() && restarting.podsToDelete().isEmpty());
        run.exitBesideSidecar("j-master-0", "OnFailure", 0, "Completed", null, FAULT);
        Decision done = run.pass();
        assertEquals(Outcome.Succeeded, done.state().outcome());
        assertEquals(List.of("j-master-0"), stopped(done));
    }

    @Test
    void kubernetesOwnSidecarIsLeftToItsKubelet() {
        Run run = GroupRestartTest.running(RestartPolicy.ExitCode, 3);
        run.exitBesideSidecar("j-master-0", "Never", 0, "Completed", null, FAULT);
        // The proxy as an init container with restartPolicy Always: its kubelet ends it a moment after the training.
        var status = run.pods.get("j-master-0").getStatus();
        var proxy = status.getContainerStatuses().remove(0);
        status.setInitContainerStatuses(new java.util.ArrayList<>(List.of(proxy)));
        run.pods.get("j-master-0").getSpec().getContainers().removeIf(c -> c.getName().equals("istio-proxy"));
        Decision done = run.pass();
        assertEquals(Outcome.Succeeded, done.state().outcome());
        assertEquals(List.of(), stopped(done), "a stop would race its kubelet and turn a Succeeded pod Failed");
    }

    @Test
    void podsRestartPolicyAlwaysIsLeftToItsKubelet() {
        Run run = GroupRestartTest.running(RestartPolicy.OnFailure, 3);
        run.exitBesideSidecar("j-master-0", "Always", 0, "Completed", null, FAULT);
        Decision decision = run.pass();
        assertEquals(null, decision.state().outcome(), "the kubelet starts it again, even after a success");
        assertTrue(stopped(decision).isEmpty());
    }
}
