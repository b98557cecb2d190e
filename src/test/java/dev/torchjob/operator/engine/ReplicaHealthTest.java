package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.JobState.CountedRestart;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;
import dev.torchjob.operator.engine.JobState.ReplicaState;

/**
 * What a training job says of its replicas' health (T9k's {@code ReplicaFailure} condition), on its own: a group restart
 * under way, the failures of this pass, the restarts still to come, or all healthy. Through whole passes: {@link EngineTest}.
 */
class ReplicaHealthTest {
    private static final Instant NOW = Instant.parse("2026-12-03T12:00:00Z");
    private static final List<ReplicaGroupState> NONE_REFUSED = groups(0);

    @Test
    void withNothingFailedOrToRestartAllReplicasAreHealthy() {
        assertEquals(new ReplicaHealth(false, "All replicas are healthy."),
                ReplicaHealth.of(Optional.empty(), List.of(), List.of(), NONE_REFUSED, NOW));
    }

    @Test
    void aGroupRestartWhoseVerdictWaitsSaysWhatItWaitsForBeforeAnythingElse() {
        String waiting = "pod j-worker-0 (container pytorch) exited with code 1 (Error); waiting for j-master-0 to stop";
        assertEquals(new ReplicaHealth(true, waiting), ReplicaHealth.of(Optional.of(waiting), List.of(ReplicaEnding.vanished("j-worker-1")),
                List.of(new CountedRestart("j-worker-1", "u1", null)), NONE_REFUSED, NOW));
    }

    @Test
    void theReplicasThatFailedThisPassAreEachSaidAsTheyEnded() {
        var failures = List.of(ReplicaEnding.vanished("j-worker-0"), ReplicaEnding.vanished("j-worker-1"));
        ReplicaHealth health = ReplicaHealth.of(Optional.empty(), failures, List.of(new CountedRestart("j-master-0", "u0", null)),
                NONE_REFUSED, NOW);
        assertEquals(new ReplicaHealth(true, failures.get(0).describe() + "; " + failures.get(1).describe()), health,
                "this pass's failures, not an older restart still to come");
    }

    @Test
    void aRestartStillToComeIsSaidWithItsTimeWhileThatIsAhead() {
        List<CountedRestart> counted = List.of(new CountedRestart("j-worker-0", "u0", NOW.plusSeconds(10)),
                new CountedRestart("j-worker-1", "u1", NOW), new CountedRestart("j-master-0", "u2", null));
        assertEquals(new ReplicaHealth(true, "Restarting j-worker-0 at 2026-12-03T12:00:10Z, j-worker-1, j-master-0."),
                ReplicaHealth.of(Optional.empty(), List.of(), counted, NONE_REFUSED, NOW));
    }

    @Test
    void aReplicaWhosePodItsKubeletRefusedIsReplacedNotRestarting() {
        List<CountedRestart> counted = List.of(new CountedRestart("j-worker-0", "u0", null));
        assertEquals(new ReplicaHealth(false, "All replicas are healthy."),
                ReplicaHealth.of(Optional.empty(), List.of(), counted, groups(2), NOW), "said as one that cannot start instead");
    }

    /** A master and one worker, the worker's last pods refused by its kubelet {@code refusals} times in a row. */
    private static List<ReplicaGroupState> groups(int refusals) {
        return List.of(new ReplicaGroupState("master", 0, List.of(replica("j-master-0", 0))),
                new ReplicaGroupState("worker", 0, List.of(replica("j-worker-0", refusals))));
    }

    private static ReplicaState replica(String name, int refusals) {
        return new ReplicaState(name, "uid-" + name, ReplicaPhase.Pending, List.of(), null, 0, 0, null, refusals);
    }
}
