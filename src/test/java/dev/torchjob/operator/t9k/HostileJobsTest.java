package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.t9k.HostileJobs.HostileJob;

/**
 * Hostile and careless jobs through the planner, read as the informer reads them: no pass throws,
 * each job ends in a defined state (running, or InvalidSpec naming the field), and the memory a
 * pass allocates grows with what the job is admitted to create, never with the numbers it asks for.
 */
class HostileJobsTest {
    static final int JOBS = 500;
    /** What one pass may allocate beyond the pods it creates: generous, but far below one per-replica object per requested replica. */
    static final long PASS_ALLOCATION_BOUND = 16L << 20;

    @Test
    void everyHostileJobEndsInADefinedStateWithinBoundedMemory() {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        Map<String, Integer> outcomes = new TreeMap<>();
        long largestPass = 0;
        for (int seed = -20; seed < JOBS; seed++) { // the negative seeds warm up: first readings of a type allocate for Jackson
            boolean measured = seed >= 0;
            HostileJob hostile = HostileJobs.generate(seed);
            InMemoryCluster cluster = null;
            try {
                cluster = new InMemoryCluster(hostile.json());
                for (int pass = 0; pass < 4; pass++) {
                    long before = threads.getCurrentThreadAllocatedBytes();
                    Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
                    long allocated = threads.getCurrentThreadAllocatedBytes() - before;
                    // Pods carry the user's template (a 100 KB image is copied into each): their size is admitted.
                    long podBytes = plan.podsToCreate().stream().mapToLong(p -> HostileJobs.JSON.asJson(p).length() * 8L).sum();
                    assertTrue(!measured || allocated <= PASS_ALLOCATION_BOUND + podBytes, "seed " + seed + " pass " + pass + " allocated "
                            + allocated + " bytes for " + plan.podsToCreate().size() + " pods: " + hostile.mutations());
                    largestPass = measured ? Math.max(largestPass, allocated - podBytes) : largestPass;
                    assertDefined(plan.status(), cluster);
                    cluster.runAll();
                }
            } catch (RuntimeException | AssertionError e) {
                fail("seed " + hostile.seed() + " " + hostile.mutations() + ": " + e, e);
            }
            if (measured) {
                outcomes.merge(outcome(cluster.job.getStatus()), 1, Integer::sum);
            }
        }
        System.out.printf("outcomes of %d hostile jobs through the planner: %s; largest pass allocated %d KiB beyond its pods%n",
                JOBS, outcomes, largestPass >> 10);
        assertTrue(outcomes.getOrDefault("Running", 0) > 0 && outcomes.getOrDefault("Failed InvalidSpec", 0) > 0, outcomes.toString());
    }

    /** Found by the generator: activeDeadlineSeconds 2^63-1 overflowed the clock and every pass of the job threw. */
    @Test
    void aDeadlineCenturiesAwayRunsTheJobAndItIsStillLookedAtWithinTenMinutes() {
        InMemoryCluster cluster = FailureScenariosTest.running("{activeDeadlineSeconds: 9223372036854775807}", "OnFailure");
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        assertEquals(JobPhase.Running, plan.status().phase);
        assertEquals(java.time.Duration.ofMinutes(10), plan.recheckAfter().orElseThrow());
    }

    static String outcome(PyTorchTrainingJobStatus status) {
        JobCondition failed = Conditions.find(status.conditions, JobCondition.FAILED);
        return status.phase + (status.phase == JobPhase.Failed && failed != null ? " " + failed.reason : "");
    }

    static void assertDefined(PyTorchTrainingJobStatus status, InMemoryCluster cluster) {
        assertNotNull(status.phase, "a phase");
        assertTrue(cluster.pods.size() <= JobTopology.MAX_REPLICAS, cluster.pods.size() + " pods");
        JobCondition failed = Conditions.find(status.conditions, JobCondition.FAILED);
        if (status.phase == JobPhase.Failed) {
            assertNotNull(failed, "a failed job says why");
            if ("InvalidSpec".equals(failed.reason)) {
                assertTrue(failed.message.matches("(?s).*(spec\\.|metadata\\.name|pod name).*"), "names the field: " + failed.message);
            }
        }
    }
}
