package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.testing.PodFates;

/**
 * A pod a lost node (or a finalizer) never lets go, whatever waits for it: a pause is not complete and an
 * eviction's quota is not given back until it is gone, so both say what holds it a minute after its grace
 * period, and nothing is forced. (A replica's new pod waiting for it: {@link StartBlockerTest}.)
 */
class LingeringPodTest {

    @Test
    void aPauseHeldByAPodOnALostNodeSaysWhatHoldsItAndIsCompleteOnceItIsGone() {
        Run run = lostWorker();
        run.runMode(RunMode.PAUSE);
        Decision pausing = run.pass();
        Instant graceEnds = graceEnd(run);
        assertEquals(List.of(), ((Situation.Pausing) pausing.situation()).lingering(), "within its grace period: normal");

        run.now = graceEnds.plusSeconds(10);
        Decision waiting = run.pass();
        assertEquals(List.of(), ((Situation.Pausing) waiting.situation()).lingering());
        assertEquals(Optional.of(Duration.between(run.now, graceEnds.plus(LingeringPod.OVERDUE_AFTER))), waiting.recheckAfter(),
                "looked at again when it is overdue");

        run.now = graceEnds.plus(LingeringPod.OVERDUE_AFTER);
        Situation.Pausing held = (Situation.Pausing) run.pass().situation();
        assertEquals(1, held.podsLeft());
        assertEquals(" pod j-worker-0 is still terminating, its grace period ended at " + graceEnds + ": node node-7 has not confirmed "
                + "that it stopped (a node that is down or cut off never will: once you know it is, `kubectl delete pod j-worker-0 "
                + "--force --grace-period=0`, or the taint node.kubernetes.io/out-of-service on the node, lets it go); the job is "
                + "paused once they are gone.", held.lingeringSaid("the job is paused"));

        run.pods.remove("j-worker-0");
        Decision paused = run.pass();
        assertTrue(((Situation.Pausing) paused.situation()).paused());
        assertEquals("", ((Situation.Pausing) paused.situation()).lingeringSaid("the job is paused"));
    }

    @Test
    void anEvictionWhoseQuotaAPodOnALostNodeHoldsSaysSo() {
        Run run = lostWorker();
        run.queue = QueueGateTest.ADMITTED;
        run.pass();
        run.queue = QueueGateTest.PREEMPTED;
        run.pass();
        run.now = graceEnd(run).plus(LingeringPod.OVERDUE_AFTER);
        Situation.Queued evicted = (Situation.Queued) run.pass().situation();
        assertEquals(1, evicted.podsLeft());
        assertTrue(evicted.message().startsWith("Evicted by Kueue (Preempted): Preempted to accommodate a higher priority Workload; "
                + "deleting 1 pod(s), none counted as a failure; pod j-worker-0 is still terminating"), evicted.message());
        assertTrue(evicted.message().endsWith("lets it go); Kueue keeps the quota until they are gone"), evicted.message());
    }

    /** A master and a worker running; the worker's node (node-7) is lost: deleted, it stays terminating. */
    private static Run lostWorker() {
        Run run = new Run(1, 3);
        run.pass();
        run.pods.values().forEach(PodFates::running);
        run.pods.get("j-worker-0").getSpec().setNodeName("node-7");
        run.lingering.add("j-worker-0");
        return run;
    }

    private static Instant graceEnd(Run run) {
        return Instant.parse(run.pods.get("j-worker-0").getMetadata().getDeletionTimestamp());
    }
}
