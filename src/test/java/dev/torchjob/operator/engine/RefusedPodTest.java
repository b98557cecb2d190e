package dev.torchjob.operator.engine;

import static dev.torchjob.operator.engine.GroupRestartTest.events;
import static dev.torchjob.operator.engine.GroupRestartTest.names;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.engine.TrainingJob.RunPolicy;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;

/**
 * A pod its kubelet refuses to run (the scheduler placed it where the kubelet finds it does not fit: OutOfcpu, a device
 * plugin's UnexpectedAdmissionError, a node shutting down) ran nothing: its replica gets a new pod and nothing is
 * counted, whatever the restart policy, as for any pod that cannot start.
 */
class RefusedPodTest {
    static final String OUT_OF_CPU = "Pod was rejected: Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000";
    static final String SHUTTING_DOWN = "Pod was rejected: Pod was rejected as the node is shutting down.";

    /** Master and worker created by the first pass, not running yet. */
    static Run created(RestartPolicy policy, int backoffLimit) {
        Run run = new Run(new TrainingJob("j", "ns", "job-uid", 1L,
                List.of(new ReplicaGroup("master", 1, policy), new ReplicaGroup("worker", 1, policy)),
                new RunPolicy(backoffLimit, null, CleanPodPolicy.None), RunMode.TRAIN, SuccessRule.MASTER,
                RetryableExitCodes.SIGNALS, false, Optional.empty()));
        run.pass();
        return run;
    }

    /** Its kubelet refused the pod at admission: Failed with the kubelet's words, no container ever started. */
    static void refuse(Run run, String pod, String reason, String message) {
        Pod p = run.pods.get(pod);
        p.getSpec().setNodeName("node-1");
        p.setStatus(new PodStatusBuilder().withPhase("Failed").withReason(reason).withMessage(message).build());
    }

    @ParameterizedTest
    @EnumSource(RestartPolicy.class)
    void aPodItsKubeletRefusedIsReplacedAndNothingIsCountedWhateverTheRestartPolicy(RestartPolicy policy) {
        Run run = created(policy, 0);
        refuse(run, "j-worker-0", "OutOfcpu", OUT_OF_CPU);

        Decision refused = run.pass();
        assertNull(refused.state().outcome(), "the job goes on");
        assertEquals(0, refused.state().backoffCount());
        assertEquals(List.of("j-worker-0"), names(refused.podsToDelete()), "the master waits at the rendezvous for the new worker");
        Situation.Active active = (Situation.Active) refused.situation();
        assertFalse(active.replicaFailure(), "nothing failed");
        assertEquals("OutOfcpu", active.cannotStart().get(0).reason());
        assertEquals(List.of("pod j-worker-0 was refused by its kubelet on node node-1 (OutOfcpu: Node didn't have enough resource: cpu, "
                + "requested: 1500, used: 1000, capacity: 2000); a new pod replaces it now; the job waits for it, nothing is counted"),
                events(refused, "ReplicaCannotStart").stream().map(Plan.JobEvent::message).toList());
        assertTrue(events(refused, "JobRestarting").isEmpty() && events(refused, "ReplicaFailed").isEmpty());

        Decision replaced = run.pass();
        assertEquals(List.of("j-worker-0"), names(replaced.podsToCreate()));
        assertEquals(0, replaced.state().backoffCount());
        assertEquals(0, replaced.state().group("worker").restartCount());
        assertTrue(events(replaced, "ReplicaCannotStart").isEmpty(), "said once");

        run.startedAt(run.now);
        Decision running = run.pass();
        assertTrue(((Situation.Active) running.situation()).cannotStart().isEmpty(), "a kubelet took the new pod");
        assertEquals(0, running.state().replica("j-worker-0").refusalsInARow());
    }

    @Test
    void refusalsInARowWaitLongerEachTimeSaidOnceUntilAKubeletTakesAPod() {
        Run run = created(RestartPolicy.OnFailure, 3);
        refuse(run, "j-worker-0", "UnexpectedAdmissionError", "Pod was rejected: Allocate failed due to no healthy devices present; "
                + "cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected");
        assertEquals(1, run.pass().podsToDelete().size(), "the first at once");
        run.pass();

        refuse(run, "j-worker-0", "UnexpectedAdmissionError", "Pod was rejected: Allocate failed due to no healthy devices present; "
                + "cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected");
        Decision second = run.pass();
        assertTrue(second.podsToDelete().isEmpty(), "kept: kubectl get pods shows why until its new pod is due");
        assertEquals(Optional.of(Duration.ofSeconds(1)), second.recheckAfter());
        assertTrue(events(second, "ReplicaCannotStart").isEmpty(), "the same cause in a row is said once");
        String said = ((Situation.Active) second.situation()).cannotStart().get(0).message();
        assertTrue(said.endsWith("a new pod replaces it at " + run.now.plusSeconds(1)), said);
        assertEquals(2, second.state().replica("j-worker-0").refusalsInARow());
        assertTrue(run.pass().podsToDelete().isEmpty(), "not before it is due");

        run.now = run.now.plusSeconds(1);
        assertEquals(List.of("j-worker-0"), names(run.pass().podsToDelete()));
        Decision third = run.pass();
        assertEquals(List.of("j-worker-0"), names(third.podsToCreate()));
        assertEquals("UnexpectedAdmissionError", ((Situation.Active) third.situation()).cannotStart().get(0).reason(),
                "still said while the new pod has no kubelet's word");

        refuse(run, "j-worker-0", "OutOfcpu", OUT_OF_CPU);
        Decision another = run.pass();
        assertEquals(Optional.of(Duration.ofSeconds(2)), another.recheckAfter(), "doubled");
        assertEquals(1, events(another, "ReplicaCannotStart").size(), "another cause is said");

        run.now = run.now.plusSeconds(2);
        run.pass();
        run.pass();
        run.startedAt(run.now);
        Decision taken = run.pass();
        assertEquals(0, taken.state().replica("j-worker-0").refusalsInARow());
        assertEquals(0, taken.state().backoffCount());

        refuse(run, "j-worker-0", "OutOfcpu", OUT_OF_CPU);
        assertEquals(1, run.pass().podsToDelete().size(), "after a pod was taken, a refusal is a first one again");
    }

    @Test
    void aNodeShuttingDownIsOneRestartAndTheNewPodsItRefusesAreNotMore() {
        Run run = GroupRestartTest.running(RestartPolicy.ExitCode, 1);
        for (String pod : List.of("j-master-0", "j-worker-0", "j-worker-1")) {
            run.disrupted(pod, "Terminated", "TerminationByKubelet", "Pod was terminated in response to imminent node shutdown.",
                    GroupRestartTest.FAULT);
        }
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        assertTrue(events(restart, "JobRestarting").get(0).message().contains("(Terminated: Pod was terminated in response to imminent "
                + "node shutdown)"), events(restart, "JobRestarting").toString());
        Decision newGroup = run.pass();
        assertEquals(3, newGroup.podsToCreate().size());

        for (String pod : List.of("j-master-0", "j-worker-0", "j-worker-1")) {
            refuse(run, pod, "NodeShutdown", SHUTTING_DOWN);
        }
        Decision refused = run.pass();
        assertNull(refused.state().outcome(), "the budget is spent, and still nothing failed");
        assertEquals(1, refused.state().backoffCount());
        assertEquals(3, refused.podsToDelete().size());
        assertEquals(3, events(refused, "ReplicaCannotStart").size());
        assertTrue(events(refused, "ReplicaCannotStart").get(0).message().startsWith("pod j-master-0 was refused by its kubelet on node "
                + "node-1 (NodeShutdown: Pod was rejected as the node is shutting down); a new pod replaces it now"),
                events(refused, "ReplicaCannotStart").get(0).message());
        assertEquals(3, run.pass().podsToCreate().size());
    }

    @Test
    void aRefusedPodRemovedBeforeAnyPassTookItIsNoFailure() {
        Run run = created(RestartPolicy.ExitCode, 0);
        refuse(run, "j-master-0", "OutOfmemory", "Pod was rejected: Node didn't have enough resource: memory");
        run.removed("j-master-0");
        Decision decision = run.pass();
        assertNull(decision.state().outcome());
        assertEquals(List.of("j-master-0"), names(decision.podsToCreate()));
    }

    @Test
    void aRefusedMasterNeverHadAnAddressSoItsNewPodDoesNotWaitForTheDns() {
        Run run = created(RestartPolicy.OnFailure, 3).perReplica();
        run.backoff = new RestartBackoff(Duration.ZERO, Duration.ZERO, Duration.ofMinutes(10), Duration.ofSeconds(30));
        run.startedAt(run.now);
        refuse(run, "j-master-0", "OutOfcpu", OUT_OF_CPU);
        run.pass();
        Decision replaced = run.pass();
        assertEquals(List.of("j-master-0"), names(replaced.podsToCreate()));
        assertTrue(events(replaced, MasterAddress.WAITING_FOR_DNS).isEmpty());
    }

    @Test
    void onlyAPodThatRanNothingIsRefused() {
        Pod refused = new PodBuilder().withNewMetadata().withName("p").endMetadata()
                .withNewStatus().withPhase("Failed").withReason("NodeShutdown").withMessage(SHUTTING_DOWN).endStatus().build();
        assertTrue(RefusedPod.is(refused));
        Pod evictedWhileRunning = new PodBuilder(refused).editStatus().withReason("Evicted").withMessage("The node was low on resource: memory.")
                .addNewContainerStatus().withName("pytorch").withNewState().withNewTerminated().withExitCode(137).endTerminated().endState()
                .endContainerStatus().endStatus().build();
        assertFalse(RefusedPod.is(evictedWhileRunning));
        Pod ranBefore = new PodBuilder(refused).editStatus().addNewContainerStatus().withName("pytorch")
                .withNewState().withNewWaiting().endWaiting().endState()
                .withNewLastState().withNewTerminated().withExitCode(1).endTerminated().endLastState().endContainerStatus().endStatus().build();
        assertFalse(RefusedPod.is(ranBefore), "its training ran: a failure like any other");
        Pod pending = new PodBuilder().withNewMetadata().withName("p").endMetadata().withNewStatus().withPhase("Pending").endStatus().build();
        assertFalse(RefusedPod.is(pending));
        assertFalse(RefusedPod.admitted(pending), "no kubelet's word yet");
    }

    @Test
    void theWaitBeforeANewPodDoublesFromOneSecondToFiveMinutes() {
        assertEquals(List.of(0L, 1L, 2L, 4L, 8L, 16L, 32L, 64L, 128L, 256L, 300L, 300L),
                java.util.stream.IntStream.range(0, 12).mapToObj(RefusedPod.WAITS::delay).map(Duration::toSeconds).toList());
    }
}
