package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.RunMode;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.RestartBackoff;

/**
 * The restart back-off through T9k's status: a first fault restarts at once, the next in a row waits; said,
 * kept across operator restarts, and overruled by pause, deadline and finish.
 */
class RestartBackoffTest {

    /** Worker 0 failed, the job restarted at once, and worker 0 failed again straight away: the second restart waits. */
    static InMemoryCluster crashed(String runPolicy) {
        InMemoryCluster cluster = firstFault(runPolicy);
        cluster.runAll();
        cluster.exit("f-worker-0", 2);
        cluster.settle();
        return cluster;
    }

    static InMemoryCluster firstFault(String runPolicy) {
        InMemoryCluster cluster = FailureScenariosTest.running(runPolicy, "OnFailure");
        cluster.backoff = new RestartBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofMinutes(10));
        String uid = cluster.pod("f-worker-0").getMetadata().getUid();
        cluster.exit("f-worker-0", 2);
        Plan<PyTorchTrainingJobStatus> restart = cluster.reconcile();
        assertTrue(restart.events().stream().noneMatch(e -> e.message().contains("back-off")), restart.events().toString());
        cluster.settle();
        assertNotEquals(uid, cluster.pod("f-worker-0").getMetadata().getUid(), "replaced at once");
        return cluster;
    }

    @Test
    void thePendingRestartIsInTheStatusAndHappensWhenDueEvenAfterAnOperatorRestart() {
        InMemoryCluster cluster = crashed("{backoffLimit: 3}");
        PyTorchTrainingJobStatus status = cluster.job.getStatus();
        assertEquals(2, status.backoffCount);
        assertEquals("2026-01-01T00:00:10Z", status.countedRestarts.get(0).restartAt);
        JobCondition failure = FailureScenariosTest.condition(cluster, JobCondition.REPLICA_FAILURE);
        assertTrue(failure.isTrue() && failure.message.contains("f-worker-0 at 2026-01-01T00:00:10Z"), failure.message);
        assertEquals("Failed", cluster.pod("f-worker-0").getStatus().getPhase(), "the failed pod waits with its logs");
        String oldUid = cluster.pod("f-worker-0").getMetadata().getUid();

        // The operator is down until well after the due time; a new one reads the status and acts at once.
        cluster.now = cluster.now.plusSeconds(300);
        cluster.settle();
        assertNotEquals(oldUid, cluster.pod("f-worker-0").getMetadata().getUid());
        assertEquals(2, cluster.job.getStatus().backoffCount, "counted once");
        assertEquals(2, cluster.job.getStatus().tasks.get(1).replicas.get(0).failuresInARow);
    }

    @Test
    void theDueTimeIsWhenThePassIsScheduled() {
        InMemoryCluster cluster = firstFault("{backoffLimit: 3}");
        cluster.runAll();
        cluster.exit("f-worker-0", 2);
        Plan<PyTorchTrainingJobStatus> counted = cluster.reconcile();
        assertEquals(Duration.ofSeconds(10), counted.recheckAfter().orElseThrow(), "no event will come: the operator looks again when due");
        assertTrue(counted.events().stream().anyMatch(e -> e.message().contains("back-off 10 s, new pods at 2026-01-01T00:00:10Z")),
                counted.events().toString());
    }

    @Test
    void pausingDuringABackOffDeletesTheFailedPodAndResumingStartsAfresh() {
        InMemoryCluster cluster = crashed("{backoffLimit: 3}");
        cluster.job.getSpec().runMode = new RunMode();
        cluster.job.getSpec().runMode.pause = new RunMode.Pause();
        cluster.job.getSpec().runMode.pause.enabled = true;
        cluster.settle();
        assertEquals(JobPhase.Paused, cluster.job.getStatus().phase);
        assertTrue(cluster.pods.isEmpty());
        cluster.job.getSpec().runMode.pause.enabled = false;
        cluster.settle();
        assertEquals(3, cluster.pods.size(), "resumed at once: the pause ended the pending restart");
        assertEquals(2, cluster.job.getStatus().backoffCount);
    }

    @Test
    void aDeadlineDuringABackOffFailsTheJob() {
        InMemoryCluster cluster = crashed("{backoffLimit: 3, activeDeadlineSeconds: 5}");
        cluster.now = cluster.now.plusSeconds(6);
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertEquals("DeadlineExceeded", FailureScenariosTest.condition(cluster, JobCondition.FAILED).reason);
    }

    @Test
    void theMasterSucceedingDuringABackOffEndsTheJob() {
        // Restarting per replica, the master trains on while worker 0 waits its back-off.
        InMemoryCluster cluster = FailureScenariosTest.running("{backoffLimit: 3}", "OnFailure", "Replica");
        cluster.backoff = new RestartBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofMinutes(10));
        cluster.exit("f-worker-0", 2);
        cluster.settle();
        cluster.run("f-worker-0");
        cluster.exit("f-worker-0", 2);
        cluster.settle();
        assertEquals("Failed", cluster.pod("f-worker-0").getStatus().getPhase(), "waiting its back-off");
        cluster.exit("f-master-0", 0);
        cluster.settle();
        assertEquals(JobPhase.Succeeded, cluster.job.getStatus().phase);
        assertEquals(2, cluster.job.getStatus().backoffCount);
    }

    @Test
    void scalingDownAReplicaThatWaitsItsBackOffRemovesItAndItsPendingRestart() {
        InMemoryCluster cluster = ElasticScalingTest.elastic(3);
        cluster.settle();
        cluster.runAll();
        cluster.settle();
        cluster.backoff = new RestartBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofMinutes(10));
        cluster.exit("el-node-2", 1);
        cluster.settle();
        assertEquals(null, cluster.job.getStatus().countedRestarts, "a first failure restarts at once");
        cluster.run("el-node-2");
        cluster.exit("el-node-2", 1);
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().countedRestarts.size(), "waiting its back-off");

        ElasticScalingTest.expect(cluster, 2);
        assertEquals(java.util.List.of("el-node-0", "el-node-1"), java.util.List.copyOf(cluster.pods.keySet()));
        assertEquals(null, cluster.job.getStatus().countedRestarts, "nothing is left to restart");
        assertFalse(FailureScenariosTest.condition(cluster, JobCondition.REPLICA_FAILURE).isTrue());
        cluster.now = cluster.now.plusSeconds(60);
        cluster.settle();
        assertEquals(2, cluster.pods.size(), "the removed replica does not come back when its back-off ends");
    }
}
