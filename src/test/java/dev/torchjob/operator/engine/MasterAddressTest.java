package dev.torchjob.operator.engine;

import static dev.torchjob.operator.engine.GroupRestartTest.DNS_CACHE_30S;
import static dev.torchjob.operator.engine.GroupRestartTest.LOST_PEER;
import static dev.torchjob.operator.engine.GroupRestartTest.events;
import static dev.torchjob.operator.engine.GroupRestartTest.names;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.TrainingJob.RunMode;

/**
 * A new pod of the master has a new address while the cluster's DNS may still answer its name with the old one
 * (CoreDNS's cache): a rank given it fails its rendezvous. The job's pods come only once the old address is
 * forgotten — after a pause or a Kueue eviction resumed soon, and for a master replaced alone (restarting per
 * replica). Group restarts wait as they count the incident (GroupRestartTest).
 */
class MasterAddressTest {
    static final Instant STARTED = EngineTest.T0.plusSeconds(5);
    static final Instant STOPPED = EngineTest.T0.plusSeconds(20);
    static final String WAIT = "once the cluster's DNS no longer answers j-master-0's name with its old address";

    /** Two workers and a master whose ranks started at {@link #STARTED} and looked the master up then. */
    static Run started() {
        Run run = new Run(2, 3);
        run.backoff = DNS_CACHE_30S;
        run.pass();
        run.startedAt(STARTED);
        run.pass();
        return run;
    }

    /** Paused at {@link #STOPPED}: every pod deleted then, and gone. */
    static Run paused() {
        Run run = started();
        run.now = STOPPED;
        run.runMode(RunMode.PAUSE);
        run.pass();
        assertEquals(JobPhase.Paused, run.pass().state().phase());
        return run;
    }

    @Test
    void aJobResumedSoonAfterItsPauseCreatesItsPodsOnceTheOldMastersAddressIsForgotten() {
        Run run = paused();
        run.now = STOPPED.plusSeconds(5);
        run.runMode(RunMode.TRAIN);
        Decision resumed = run.pass();
        assertEquals(List.of(), resumed.podsToCreate(), "a rank now could be given the old master's address and fail");
        Instant due = STOPPED.plusSeconds(30); // looked up before the pause, cached 30 s
        assertEquals(List.of(JobEvent.normal("WaitingForDns", "New pods at " + due + ", " + WAIT
                + ": the ranks looked it up before the job stopped.")), events(resumed, "WaitingForDns"));
        assertEquals(JobPhase.Resuming, resumed.state().phase());
        assertTrue(resumed.recheckAfter().isPresent() && !run.now.plus(resumed.recheckAfter().get()).isAfter(due),
                "a pass comes when it is due");
        run.now = due.minusSeconds(1);
        assertEquals(List.of(), run.pass().podsToCreate());
        run.now = due;
        Decision created = run.pass();
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(created.podsToCreate()));
        assertTrue(created.podsToCreate().stream().allMatch(r -> r.mode() == Decision.PodMode.RESUME));
        assertEquals(0, created.state().backoffCount(), "a pause is no failure");
    }

    @Test
    void aJobResumedAfterTheDnsCacheTimeOrThatRanLongBeforeItsPauseResumesAtOnce() {
        Run later = paused();
        later.now = STOPPED.plusSeconds(30);
        later.runMode(RunMode.TRAIN);
        assertEquals(3, later.pass().podsToCreate().size());

        Run ranLong = started();
        ranLong.now = STARTED.plusSeconds(3600);
        ranLong.runMode(RunMode.PAUSE);
        ranLong.pass();
        ranLong.pass();
        ranLong.now = ranLong.now.plusSeconds(1);
        ranLong.runMode(RunMode.TRAIN);
        Decision resumed = ranLong.pass();
        assertEquals(3, resumed.podsToCreate().size(), "its ranks looked the master up within a minute of their start, an hour ago");
        assertTrue(events(resumed, "WaitingForDns").isEmpty());
    }

    @Test
    void withNothingKnownOfTheOldPodsTheJobResumesAtOnce() {
        Run run = paused();
        run.gone.clear(); // the operator restarted while the job was paused
        run.now = STOPPED.plusSeconds(5);
        run.runMode(RunMode.TRAIN);
        assertEquals(3, run.pass().podsToCreate().size());
    }

    @Test
    void aJobCreatedMomentsAfterOneOfItsNameWasDeletedWaitsForTheOldMastersAddressToo() {
        Run old = started();
        old.now = STOPPED;
        old.pods.keySet().forEach(pod -> old.deleting(pod, STOPPED)); // the job deleted: its pods go with it
        List.copyOf(old.pods.keySet()).forEach(old::removed);
        Run recreated = new Run(2, 3);
        recreated.backoff = DNS_CACHE_30S;
        recreated.gone.putAll(old.gone); // the same pod names: the operator kept them as that name's
        recreated.now = STOPPED.plusSeconds(3);
        Decision first = recreated.pass();
        assertEquals(List.of(), first.podsToCreate());
        Instant due = STOPPED.plusSeconds(30);
        assertEquals(List.of(JobEvent.normal(MasterAddress.WAITING_FOR_DNS, "New pods at " + due + ", " + WAIT
                + ": a pod of that name ended moments ago (a job of this name deleted just before?).")),
                events(first, MasterAddress.WAITING_FOR_DNS));
        assertEquals(List.of(), events(recreated.pass(), MasterAddress.WAITING_FOR_DNS), "said once");
        recreated.now = due;
        assertEquals(3, recreated.pass().podsToCreate().size());
    }

    @Test
    void aJobReadmittedByKueueSoonAfterItsEvictionWaitsTheSameWay() {
        Run run = new Run(2, 3);
        run.backoff = DNS_CACHE_30S;
        run.queue = QueueGateTest.ADMITTED;
        run.pass();
        run.startedAt(STARTED);
        run.now = STOPPED;
        run.queue = QueueGateTest.PREEMPTED;
        run.pass();
        run.now = STOPPED.plusSeconds(2);
        run.queue = QueueGateTest.ADMITTED;
        Decision readmitted = run.pass();
        assertEquals(List.of(), readmitted.podsToCreate());
        assertEquals(1, events(readmitted, "WaitingForDns").size(), readmitted.events().toString());
        assertEquals(1, events(readmitted, "Admitted").size(), "admitted all the same");
        run.now = STOPPED.plusSeconds(30);
        assertEquals(3, run.pass().podsToCreate().size());
    }

    @Test
    void aMasterReplacedAloneWaitsAndSoDoTheWorkersThatFailWithIt() {
        Run run = started().perReplica();
        run.now = STOPPED.plusSeconds(1);
        run.exit("j-master-0", 137, "OOMKilled", null, STOPPED);
        Decision master = run.pass();
        Instant due = STOPPED.plusSeconds(30);
        assertEquals("Restarting pod j-master-0 (container pytorch) exited with code 137 (OOMKilled) (restart 1 of backoffLimit 3; new pod at "
                + due + ", " + WAIT + ")", events(master, "ReplicaRestarted").get(0).message());
        assertEquals(List.of(), master.podsToDelete(), "its failed pod stays (its logs) until its new pod is due");
        run.now = STOPPED.plusSeconds(3);
        run.exit("j-worker-0", 1, "Error", LOST_PEER, STOPPED.plusSeconds(2));
        Decision worker = run.pass();
        assertTrue(events(worker, "ReplicaRestarted").get(0).message().contains("new pod at " + due + ", " + WAIT),
                worker.events().toString());
        assertEquals(List.of(), worker.podsToCreate());
        run.now = due;
        assertEquals(List.of("j-master-0", "j-worker-0"), names(run.pass().podsToDelete()));
        Decision created = run.pass();
        assertEquals(List.of("j-master-0", "j-worker-0"), names(created.podsToCreate()));
        assertEquals(2, created.state().backoffCount(), "each replica's restart counted once, as restarting per replica does");
    }

    @Test
    void aWorkerReplacedAloneRestartsAtOnce() {
        Run run = started().perReplica();
        run.now = STOPPED.plusSeconds(1);
        run.exit("j-worker-1", 137, "OOMKilled", null, STOPPED);
        Decision restart = run.pass();
        assertTrue(events(restart, "ReplicaRestarted").get(0).message().endsWith("(restart 1 of backoffLimit 3)"), restart.events().toString());
        assertEquals(List.of("j-worker-1"), names(restart.podsToDelete()));
        assertEquals(List.of("j-worker-1"), names(run.pass().podsToCreate()), "the master keeps its address");
    }

    @Test
    void whenTheMastersPodEndedIsTakenFromItsLastState() {
        Run run = started().perReplica();
        run.now = STOPPED.plusSeconds(1);
        run.exit("j-master-0", 137, "OOMKilled", null, STOPPED);
        run.removed("j-master-0"); // failed, then removed before a pass saw it
        Decision restart = run.pass();
        assertTrue(events(restart, "ReplicaRestarted").get(0).message().contains("new pod at " + STOPPED.plusSeconds(30)),
                restart.events().toString());
        assertEquals(List.of(), restart.podsToCreate(), "nothing before it is due");
    }
}
