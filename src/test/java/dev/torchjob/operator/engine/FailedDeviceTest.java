package dev.torchjob.operator.engine;

import static dev.torchjob.operator.engine.GroupRestartTest.CODE_ERROR;
import static dev.torchjob.operator.engine.GroupRestartTest.FAULT;
import static dev.torchjob.operator.engine.GroupRestartTest.LOST_PEER;
import static dev.torchjob.operator.engine.GroupRestartTest.events;
import static dev.torchjob.operator.engine.GroupRestartTest.names;
import static dev.torchjob.operator.engine.GroupRestartTest.running;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.Plan.PodDeletion;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.testing.PodFates;

/**
 * A rank whose device its kubelet reports failed (a GPU after a fatal Xid error, in the container's
 * {@code allocatedResourcesStatus}): the hardware's fault, not the code's. It is the cause of its incident, restarts
 * even under ExitCode whatever its exit code, and one that runs on (hung on the device) is stopped with the group at once.
 */
class FailedDeviceTest {
    static final String GPU = "nvidia.com/gpu";
    static final String CUDA_ERROR = "RuntimeError: CUDA error: unspecified launch failure";

    static void failed(Run run, String pod) {
        PodFates.deviceHealth(run.pods.get(pod), GPU, "GPU-1", "Unhealthy");
    }

    @Test
    void aRankThatExitsWithOneOnAFailedGpuRestartsTheJobUnderExitCodeNamingTheDevice() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.exit("j-worker-1", 1, "Error", CUDA_ERROR, FAULT);
        failed(run, "j-worker-1");
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome(), "a failed device is not a code error");
        assertEquals(1, restart.state().backoffCount(), "one fault, one restart");
        List<JobEvent> said = events(restart, "JobRestarting");
        assertEquals("pod j-worker-1 (container pytorch) exited with code 1 (Error) on a failed device (nvidia.com/gpu GPU-1 is Unhealthy, "
                + "as its kubelet reports); then j-master-0 (exit code 1), j-worker-0 (exit code 1) failed too, consequences (not counted); "
                + "the job restarts as a group (restart 1 of backoffLimit 3); last output:\n" + CUDA_ERROR, said.get(0).message());
        assertEquals(List.of(new Plan.RestartCounted("worker", "device-failed", false)), restart.restarts(),
                "the restart metric tells a device's failure from an exit code");
    }

    @Test
    void theRankOnTheFailedDeviceIsTheCauseEvenWhenItsPeersGaveUpOnItFirst() {
        Run run = running(RestartPolicy.ExitCode, 3);
        // The rank hung on its GPU; its peers timed out in their collective a second before it exited.
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 1, "Error", CODE_ERROR, FAULT.plusSeconds(1));
        failed(run, "j-worker-1");
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome());
        assertTrue(events(restart, "JobRestarting").get(0).message().startsWith("pod j-worker-1 (container pytorch) exited with code 1 "
                + "(Error) on a failed device"), restart.events().toString());
    }

    @Test
    void aRankRunningOnAFailedGpuIsStoppedWithItsGroupAtOnceForOneRestart() {
        Run run = running(RestartPolicy.ExitCode, 3);
        failed(run, "j-worker-1");
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount(), "decided at once: a rank on a failed GPU hangs or fails, its peers with it");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(restart.podsToDelete()));
        assertTrue(restart.podsToDelete().stream().map(PodDeletion::gracePeriodSeconds).allMatch(grace -> grace == 5L),
                "each within the survivors' grace: " + restart.podsToDelete());
        assertEquals("pod j-worker-1 runs on a failed device (nvidia.com/gpu GPU-1 is Unhealthy, as its kubelet reports); "
                + "stopping j-master-0, j-worker-0; the job restarts as a group (restart 1 of backoffLimit 3)",
                events(restart, "JobRestarting").get(0).message());
        assertTrue(restart.state().replica("j-worker-1").lastFailure().startsWith("pod j-worker-1 runs on a failed device"),
                restart.state().replica("j-worker-1").lastFailure());
        Decision recreate = run.pass();
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(recreate.podsToCreate()), "the group starts anew");
        assertEquals(1, run.pass().state().backoffCount(), "counted once");
    }

    @Test
    void aStoppedRankOnAFailedGpuStillShownRunningIsNotCountedAgain() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.lingering.add("j-worker-1"); // its node is slow to confirm the deletion
        failed(run, "j-worker-1");
        assertEquals(1, run.pass().state().backoffCount());
        run.now = run.now.plusSeconds(2);
        Decision next = run.pass();
        assertEquals(1, next.state().backoffCount(), "the same fault, still on its way out");
        assertTrue(events(next, "JobRestarting").isEmpty());
    }

    @Test
    void underNeverAFailedGpuFailsTheJobNamingTheDevice() {
        Run run = running(RestartPolicy.Never, 3);
        failed(run, "j-master-0");
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome());
        assertEquals("pod j-master-0 runs on a failed device (nvidia.com/gpu GPU-1 is Unhealthy, as its kubelet reports); "
                + "restartPolicy Never does not restart j-master-0", ((Situation.Ended) failed.situation()).message());
    }

    @Test
    void aFailedGpuTheBudgetCannotPayForFailsTheJobSayingSo() {
        Run run = running(RestartPolicy.ExitCode, 0);
        failed(run, "j-worker-0");
        Decision failed = run.pass();
        assertEquals(Outcome.BackoffLimitExceeded, failed.state().outcome());
        assertTrue(((Situation.Ended) failed.situation()).message().startsWith("pod j-worker-0 runs on a failed device"),
                ((Situation.Ended) failed.situation()).message());
    }

    @Test
    void restartingPerReplicaOnlyTheRankOnTheFailedGpuIsReplaced() {
        Run run = running(RestartPolicy.ExitCode, 3).perReplica();
        failed(run, "j-worker-1");
        Decision restart = run.pass();
        assertEquals(List.of("j-worker-1"), names(restart.podsToDelete()));
        assertEquals(1, restart.state().backoffCount());
        assertEquals("Restarting pod j-worker-1 runs on a failed device (nvidia.com/gpu GPU-1 is Unhealthy, as its kubelet reports) "
                + "(restart 1 of backoffLimit 3)", events(restart, "ReplicaRestarted").get(0).message());
    }

    @Test
    void aDraDriversWordsAboutItsDeviceAreSaid() {
        Run run = running(RestartPolicy.ExitCode, 3);
        PodFates.deviceHealth(run.pods.get("j-worker-1"), "claim:gpu/gpu", "gpu.example.com/node-1/gpu-1", "Unhealthy");
        run.pods.get("j-worker-1").getStatus().getContainerStatuses().get(0).getAllocatedResourcesStatus().get(0).getResources().get(0)
                .setAdditionalProperty("message", "ECC error count exceeded threshold.");
        assertTrue(events(run.pass(), "JobRestarting").get(0).message().startsWith("pod j-worker-1 runs on a failed device "
                + "(claim:gpu/gpu gpu.example.com/node-1/gpu-1 (ECC error count exceeded threshold) is Unhealthy, as its kubelet reports); "));
    }

    @Test
    void healthyOrUnknownDevicesAreNoFault() {
        for (String health : List.of("Healthy", "Unknown")) {
            Run run = running(RestartPolicy.ExitCode, 3);
            PodFates.deviceHealth(run.pods.get("j-worker-1"), GPU, "GPU-1", health);
            Decision decision = run.pass();
            assertEquals(0, decision.state().backoffCount(), health);
            assertTrue(decision.podsToDelete().isEmpty(), health);
            run.exit("j-worker-1", 1, "Error", CODE_ERROR, FAULT);
            PodFates.deviceHealth(run.pods.get("j-worker-1"), GPU, "GPU-1", health);
            run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
            run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
            assertEquals(Outcome.ReplicaFailedPermanently, run.pass().state().outcome(), health + ": a code error stays one");
        }
    }
}
