package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.JobState.CountedRestart;
import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * Each reason a training job's missing replicas get no new pods on a pass, on its own: the old group still leaving, the
 * gang scheduler's hold, and the old master's address still answered by the cluster's DNS (when it is over, and said
 * once). Through whole passes: {@link MasterAddressTest}, {@link GroupRestartTest}, {@link GangTest}.
 */
class NewPodsHoldTest {
    static final Instant STARTED = EngineTest.T0.plusSeconds(5);
    static final Instant ENDED = EngineTest.T0.plusSeconds(20);
    static final RestartBackoff DNS_CACHE_30S = GroupRestartTest.DNS_CACHE_30S;
    static final Optional<StartBlocker> GANG_WAITS = Optional.of(new StartBlocker("Unschedulable",
            "pod group is not ready, 1 Pending, 3 minAvailable"));

    /** A pass of a job of a master and two workers: its pods, what it recorded, and the time. */
    static final class Pass {
        TrainingJob job = EngineTest.Run.job(2, 3);
        JobState previous = planned(List.of());
        final Map<String, Pod> pods = new LinkedHashMap<>();
        final Map<String, Pod> gone = new LinkedHashMap<>();
        Instant now = ENDED.plusSeconds(5);
        PassContext context;

        Pass perReplica() {
            EngineTest.Run run = new EngineTest.Run(job).perReplica();
            job = run.job;
            return this;
        }

        NewPodsHold hold(List<String> missing, Gang gang, boolean resuming) {
            RestartLedger ledger = new RestartLedger(previous);
            context = new PassContext(job, previous, pods, Map.of(), gone, ledger, new ReplicaView(pods, previous, ledger, Map.of()),
                    DNS_CACHE_30S, now, new PassOutput(now));
            JobTopology topology = JobTopology.of(job);
            List<ReplicaSlot> slots = topology.slots().stream().filter(slot -> missing.contains(slot.podName())).toList();
            return NewPodsHold.of(context, topology, slots, gang, resuming);
        }

        List<JobEvent> said() {
            return context.out().events;
        }

        Optional<Duration> recheck() {
            return context.out().recheckAfter();
        }
    }

    static JobState planned(List<CountedRestart> counted) {
        return new JobState(true, JobPhase.Running, STARTED, null, counted.size(), counted, List.of(), null, true, true,
                JobState.Pause.NEVER, false, false, null);
    }

    static Pod running(String name) {
        return new PodBuilder().withNewMetadata().withName(name).withUid(name + "-uid").endMetadata()
                .withNewSpec().addNewContainer().withName("pytorch").endContainer().endSpec()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("pytorch")
                .withNewState().withNewRunning().withStartedAt(STARTED.toString()).endRunning().endState()
                .endContainerStatus().endStatus().build();
    }

    /** A pod whose training container ran from {@link #STARTED} and failed at {@link #ENDED}. */
    static Pod failed(String name) {
        return new PodBuilder().withNewMetadata().withName(name).withUid(name + "-uid").endMetadata()
                .withNewSpec().addNewContainer().withName("pytorch").endContainer().endSpec()
                .withNewStatus().withPhase("Failed").addNewContainerStatus().withName("pytorch")
                .withNewState().withNewTerminated().withExitCode(1).withReason("Error").withStartedAt(STARTED.toString())
                .withFinishedAt(ENDED.toString()).endTerminated().endState().endContainerStatus().endStatus().build();
    }

    @Test
    void aJobWithEveryPodUpOrWithNothingToWaitForCreatesItsMissingPods() {
        Pass whole = new Pass();
        List.of("j-master-0", "j-worker-0", "j-worker-1").forEach(name -> whole.pods.put(name, running(name)));
        NewPodsHold none = whole.hold(List.of(), Gang.NONE, false);
        assertEquals(new NewPodsHold(false, false, Optional.empty()), none);
        assertFalse(none.holds());

        Pass workerGone = new Pass().perReplica();
        workerGone.pods.put("j-master-0", running("j-master-0"));
        workerGone.pods.put("j-worker-1", running("j-worker-1"));
        workerGone.gone.put("j-worker-0", failed("j-worker-0"));
        assertFalse(workerGone.hold(List.of("j-worker-0"), Gang.NONE, false).holds(), "a worker's new pod: the master's address is the same");
        assertEquals(List.of(), workerGone.said());
        assertEquals(Optional.empty(), workerGone.recheck());
    }

    @Test
    void aGroupStartsAnewOnlyOnceEveryPodOfTheOldOneIsGone() {
        Pass leaving = new Pass();
        leaving.previous = planned(List.of(new CountedRestart("j-worker-1", "j-worker-1-uid", null)));
        leaving.pods.put("j-worker-1", failed("j-worker-1"));
        NewPodsHold hold = leaving.hold(List.of("j-master-0", "j-worker-0"), Gang.NONE, false);
        assertTrue(hold.oldGroupLeaving() && hold.holds(), "a new rank could reach the old master, still shutting down");
        assertEquals(Optional.empty(), hold.oldMasterAddress(), "the group restart decided its own wait for the DNS");

        Pass left = new Pass();
        left.previous = leaving.previous;
        left.gone.put("j-master-0", failed("j-master-0"));
        assertFalse(left.hold(List.of("j-master-0", "j-worker-0", "j-worker-1"), Gang.NONE, false).holds(),
                "every pod of the old group gone; its wait for the DNS was counted with the incident");
        assertEquals(List.of(), left.said());
    }

    @Test
    void aPodCountedInTheLedgerHoldsOnlyAJobRestartingAsAGroup() {
        Pass perReplica = new Pass().perReplica();
        perReplica.previous = planned(List.of(new CountedRestart("j-worker-1", "j-worker-1-uid", null)));
        perReplica.pods.put("j-master-0", running("j-master-0"));
        perReplica.pods.put("j-worker-1", failed("j-worker-1"));
        assertFalse(perReplica.hold(List.of("j-worker-0"), Gang.NONE, false).holds(), "each replica restarts on its own");
    }

    @Test
    void theGangSchedulersHoldKeepsMissingPodsBackButNothingElse() {
        Pass missing = new Pass();
        NewPodsHold held = missing.hold(List.of("j-worker-1"), Gang.scheduling(GANG_WAITS), false);
        assertTrue(held.byGang() && held.holds());

        Pass whole = new Pass();
        assertFalse(whole.hold(List.of(), Gang.scheduling(GANG_WAITS), false).byGang(), "nothing is missing: nothing is held");
        assertFalse(new Pass().hold(List.of("j-worker-1"), Gang.scheduling(Optional.empty()), false).holds(),
                "a gang scheduler that holds nothing back");
    }

    @Test
    void aMasterReplacedAloneWaitsUntilTheClusterDnsForgetsItsOldAddressAndIsLookedAtThen() {
        Pass pass = new Pass().perReplica();
        pass.pods.put("j-worker-0", running("j-worker-0"));
        pass.pods.put("j-worker-1", running("j-worker-1"));
        pass.gone.put("j-master-0", failed("j-master-0"));
        NewPodsHold hold = pass.hold(List.of("j-master-0"), Gang.NONE, false);
        Instant due = ENDED.plusSeconds(30); // looked up at most when it failed, cached 30 s
        assertEquals(Optional.of(due), hold.oldMasterAddress());
        assertTrue(hold.holds());
        assertEquals(Optional.of(Duration.between(pass.now, due)), pass.recheck(), "a pass comes when it is due");
        assertEquals(List.of(), pass.said(), "a replica's restart says its own words; the wait is in the status");

        pass.now = due;
        assertFalse(pass.hold(List.of("j-master-0"), Gang.NONE, false).holds(), "once due, the pod comes");
    }

    @Test
    void theWaitIsSaidOnceOnTheFirstPassOrTheOneThatResumes() {
        Pass first = new Pass();
        first.previous = JobState.NEW;
        first.gone.put("j-master-0", failed("j-master-0"));
        first.hold(List.of("j-master-0", "j-worker-0", "j-worker-1"), Gang.NONE, false);
        Instant due = ENDED.plusSeconds(30);
        assertEquals(List.of(JobEvent.normal(MasterAddress.WAITING_FOR_DNS, "New pods " + MasterAddress.waiting(JobTopology.of(first.job), due)
                + ": a pod of that name ended moments ago (a job of this name deleted just before?).")), first.said());

        Pass resumed = new Pass();
        resumed.gone.put("j-master-0", failed("j-master-0"));
        resumed.hold(List.of("j-master-0", "j-worker-0", "j-worker-1"), Gang.NONE, true);
        assertEquals(List.of(JobEvent.normal(MasterAddress.WAITING_FOR_DNS, "New pods " + MasterAddress.waiting(JobTopology.of(resumed.job), due)
                + ": the ranks looked it up before the job stopped.")), resumed.said());

        Pass later = new Pass();
        later.gone.put("j-master-0", failed("j-master-0"));
        assertTrue(later.hold(List.of("j-master-0", "j-worker-0", "j-worker-1"), Gang.NONE, false).holds());
        assertEquals(List.of(), later.said(), "said when the wait began");
    }

    @Test
    void everyReasonIsKeptWhenSeveralHoldAtOnce() {
        Pass pass = new Pass().perReplica();
        pass.pods.put("j-worker-0", running("j-worker-0"));
        pass.gone.put("j-master-0", failed("j-master-0"));
        NewPodsHold hold = pass.hold(List.of("j-master-0", "j-worker-1"), Gang.scheduling(GANG_WAITS), false);
        assertTrue(hold.byGang(), "the missing replicas are said as ones that cannot start");
        assertEquals(Optional.of(ENDED.plusSeconds(30)), hold.oldMasterAddress(), "and a pass still comes when the DNS wait is over");
    }
}
