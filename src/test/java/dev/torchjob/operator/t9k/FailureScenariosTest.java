package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.ReplicaStatus;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;

/** Spec §5 and §6 over several passes: budgets, exactly-once counting, deadlines, clean-up. */
class FailureScenariosTest {

    static InMemoryCluster running(String runPolicy, String policy) {
        return running(runPolicy, policy, "Job");
    }

    /** Master and two workers, all running; {@code scope}: the restart-scope annotation (Job restarts them as a group). */
    static InMemoryCluster running(String runPolicy, String policy, String scope) {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: f, annotations: {torchjob.dev/restart-scope: %s}}
                spec:
                  runPolicy: %s
                  replicaSpecs:
                  - type: master
                    restartPolicy: %s
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                  - type: worker
                    restartPolicy: %s
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """.formatted(scope, runPolicy, policy, policy));
        cluster.settle();
        cluster.runAll();
        cluster.settle();
        return cluster;
    }

    static JobCondition condition(InMemoryCluster cluster, String type) {
        return Conditions.find(cluster.job.getStatus().conditions, type);
    }

    @Test
    void onFailureFailingFourTimesWithBudgetThreeFailsWithBackoffLimitExceeded() {
        InMemoryCluster cluster = running("{backoffLimit: 3}", "OnFailure");
        for (int failure = 1; failure <= 3; failure++) {
            cluster.exit("f-worker-0", 1);
            cluster.settle();
            cluster.run("f-worker-0");
            cluster.settle();
            assertEquals(failure, cluster.job.getStatus().backoffCount);
            assertEquals(JobPhase.Running, cluster.job.getStatus().phase);
        }
        cluster.exit("f-worker-0", 1);
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertEquals(3, cluster.job.getStatus().backoffCount);
        assertEquals(3, cluster.job.getStatus().tasks.get(1).restartCount);
        assertEquals("BackoffLimitExceeded", condition(cluster, "Failed").reason);
        assertTrue(condition(cluster, "Failed").message.contains("exited with code 1"));
        assertTrue(condition(cluster, "ReplicaFailure").isTrue());
        assertNotNull(cluster.job.getStatus().completionTime);
    }

    @Test
    void budgetIsSharedByAllReplicas() {
        InMemoryCluster cluster = running("{backoffLimit: 2}", "OnFailure");
        cluster.exit("f-worker-0", 1);
        cluster.settle();
        cluster.exit("f-master-0", 137);
        cluster.settle();
        assertEquals(2, cluster.job.getStatus().backoffCount);
        assertEquals(1, cluster.job.getStatus().tasks.get(0).restartCount);
        assertEquals(1, cluster.job.getStatus().tasks.get(1).restartCount);
        cluster.runAll();
        cluster.exit("f-worker-1", 1);
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertEquals("BackoffLimitExceeded", condition(cluster, "Failed").reason);
    }

    @Test
    void restartIsCountedOnceWhenTheOperatorStopsAfterWritingTheCount() {
        InMemoryCluster cluster = running("{backoffLimit: 3}", "ExitCode", "Replica");
        String failedUid = cluster.pod("f-worker-1").getMetadata().getUid();
        cluster.exit("f-worker-1", 137);
        Plan<PyTorchTrainingJobStatus> counted = cluster.plan();
        cluster.applyStatus(counted); // status written, then the operator died: pod not deleted, not recreated
        assertEquals(1, cluster.job.getStatus().backoffCount);
        assertEquals(failedUid, cluster.job.getStatus().countedRestarts.get(0).uid);

        Plan<PyTorchTrainingJobStatus> afterRestart = cluster.reconcile(); // a new operator process sees the same pod
        assertEquals(1, afterRestart.status().backoffCount, "not counted again");
        assertEquals(List.of("f-worker-1"), afterRestart.podsToDelete().stream().map(Plan.PodDeletion::name).toList());
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount);
        assertNotEquals(failedUid, cluster.pod("f-worker-1").getMetadata().getUid(), "recreated");
        assertEquals(null, cluster.job.getStatus().countedRestarts, "forgotten once the new pod is seen");
    }

    @Test
    void restartIsNeitherLostNorDoubledWhenTheOperatorStopsBetweenDeleteAndCreate() {
        InMemoryCluster cluster = running("{backoffLimit: 3}", "OnFailure", "Replica");
        cluster.exit("f-worker-0", 1);
        Plan<PyTorchTrainingJobStatus> plan = cluster.plan();
        cluster.applyStatus(plan);
        plan.podsToDelete().forEach(d -> cluster.pods.remove(d.name())); // deleted, then the operator died
        Plan<PyTorchTrainingJobStatus> next = cluster.reconcile();
        assertEquals(1, next.status().backoffCount);
        assertEquals(List.of("f-worker-0"), next.podsToCreate().stream().map(p -> p.getMetadata().getName()).toList());
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount);
    }

    @Test
    void aStaleCacheStillShowingTheRestartedPodDoesNotCountAgain() {
        InMemoryCluster cluster = running("{backoffLimit: 3}", "OnFailure", "Replica");
        cluster.exit("f-worker-0", 1);
        var failedPod = InMemoryCluster.SERIALIZATION.clone(cluster.pod("f-worker-0"));
        cluster.reconcile();
        cluster.pods.put("f-worker-0", failedPod); // the informer has not delivered the delete yet
        Plan<PyTorchTrainingJobStatus> stale = cluster.plan();
        assertEquals(1, stale.status().backoffCount);
        assertTrue(stale.podsToCreate().isEmpty());
        assertEquals(failedPod.getMetadata().getResourceVersion(), stale.podsToDelete().get(0).resourceVersion(),
                "the delete is pinned to the old pod's resourceVersion, never a newer pod of the same name");
    }

    @Test
    void aPodDeletedBySomeoneElseIsRecreatedAndCounted() {
        InMemoryCluster cluster = running("{backoffLimit: 3}", "OnFailure");
        cluster.vanish("f-worker-1");
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        assertEquals(1, plan.status().backoffCount);
        assertEquals(List.of("f-master-0", "f-worker-0"), plan.podsToDelete().stream().map(Plan.PodDeletion::name).toList(),
                "the job restarts as a group");
        assertEquals(List.of("f-master-0", "f-worker-0", "f-worker-1"),
                cluster.reconcile().podsToCreate().stream().map(p -> p.getMetadata().getName()).toList(), "once the old pods are gone");
        assertTrue(plan.events().stream().anyMatch(e -> e.message().contains("f-worker-1 was deleted")));
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount);
    }

    @Test
    void aWrongRestartScopeFailsTheJobAsInvalidSpecInOneLineAndCreatesNothing() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: f, annotations: {torchjob.dev/restart-scope: pod}}
                spec:
                  replicaSpecs:
                  - type: master
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """);
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertEquals("InvalidSpec", condition(cluster, "Failed").reason);
        assertEquals("metadata.annotations[torchjob.dev/restart-scope] \"pod\" must be Job or Replica", condition(cluster, "Failed").message);
        assertTrue(cluster.pods.isEmpty());
    }

    @Test
    void neverFailsAtTheFirstFailure() {
        InMemoryCluster cluster = running("{backoffLimit: 3}", "Never");
        cluster.exit("f-worker-1", 2);
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertEquals(0, cluster.job.getStatus().backoffCount);
        assertEquals("ReplicaFailedPermanently", condition(cluster, "Failed").reason);
        assertTrue(condition(cluster, "Failed").message.contains("pod f-worker-1 (container pytorch) exited with code 2"));
    }

    @Test
    void replicaFailureIsTrueWhileARestartIsUnderWay() {
        InMemoryCluster cluster = running("{backoffLimit: 3}", "OnFailure");
        cluster.exit("f-worker-0", 1);
        cluster.reconcile();
        assertTrue(condition(cluster, "ReplicaFailure").isTrue());
        assertTrue(condition(cluster, "ReplicaFailure").message.contains("f-worker-0"));
        cluster.settle();
        cluster.runAll();
        cluster.settle();
        assertFalse(condition(cluster, "ReplicaFailure").isTrue());
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase, "phase stays Running through a restart");
    }

    @Test
    void deadlineIsRecheckedOnTimeAndFailsTheJobDeletingUnfinishedPods() {
        InMemoryCluster cluster = running("{activeDeadlineSeconds: 3}", "OnFailure");
        cluster.exit("f-worker-0", 0);
        Plan<PyTorchTrainingJobStatus> early = cluster.reconcile();
        assertEquals(Duration.ofSeconds(4), early.recheckAfter().orElseThrow(), "a timed re-check, not only events");
        cluster.now = cluster.now.plusSeconds(3);
        Plan<PyTorchTrainingJobStatus> late = cluster.reconcile();
        assertEquals(JobPhase.Failed, late.status().phase);
        assertEquals("DeadlineExceeded", condition(cluster, "Failed").reason);
        assertEquals("2026-01-01T00:00:03Z", late.status().completionTime);
        assertEquals(Set.of("f-master-0", "f-worker-1"),
                Set.copyOf(late.podsToDelete().stream().map(Plan.PodDeletion::name).toList()),
                "unfinished pods are deleted, the finished one is kept (cleanUpPolicy None)");
        assertTrue(late.recheckAfter().isEmpty());
    }

    @ParameterizedTest(name = "{0} after {1}")
    @CsvSource({
            "None,       success, ''",
            "All,        success, f-master-0 f-worker-0 f-worker-1",
            "Unfinished, success, f-worker-1",
            "None,       backoff, ''",
            "All,        backoff, f-master-0 f-worker-0 f-worker-1",
            "Unfinished, backoff, f-master-0",
    })
    void cleanUpPolicyDeletesExactlyThePodsItShould(String policy, String outcome, String deleted) {
        InMemoryCluster cluster = running("{backoffLimit: 0, cleanUpPolicy: " + policy + "}", "OnFailure");
        if (outcome.equals("success")) {
            cluster.exit("f-worker-0", 0);
            cluster.exit("f-master-0", 0);
        } else {
            cluster.exit("f-worker-0", 0);
            cluster.exit("f-worker-1", 1);
        }
        cluster.settle();
        assertTrue(cluster.job.getStatus().phase.isTerminal());
        Set<String> expectedGone = deleted.isBlank() ? Set.of() : Set.of(deleted.split(" "));
        for (String pod : List.of("f-master-0", "f-worker-0", "f-worker-1")) {
            assertEquals(!expectedGone.contains(pod), cluster.pods.containsKey(pod), pod);
        }
        assertEquals(expectedGone.size(), cluster.job.getStatus().aggregate.deleted);
    }

    static ReplicaStatus replica(InMemoryCluster cluster, String name) {
        return cluster.job.getStatus().tasks.stream().flatMap(t -> t.replicas.stream())
                .filter(r -> r.name.equals(name)).findFirst().orElseThrow();
    }

    @Test
    void aFailedReplicasLastOutputOutlivesItsPodInTheEventTheStatusAndTheCondition() {
        InMemoryCluster cluster = running("{backoffLimit: 1}", "OnFailure", "Replica");
        cluster.exit("f-worker-0", 1, "Traceback (most recent call last):\n  File \"train.py\", line 9\nValueError: bad batch");
        Plan<PyTorchTrainingJobStatus> restart = cluster.reconcile();
        assertTrue(restart.events().stream().anyMatch(e -> e.reason().equals("ReplicaRestarted")
                && e.message().endsWith("exited with code 1 (Error) (restart 1 of backoffLimit 1); last output:\nTraceback (most recent call last):\n"
                        + "  File \"train.py\", line 9\nValueError: bad batch")), restart.events().toString());
        cluster.settle();
        cluster.run("f-worker-0");
        cluster.settle();
        assertTrue(replica(cluster, "f-worker-0").lastFailure.endsWith("ValueError: bad batch"),
                "kept after the pod was replaced: " + replica(cluster, "f-worker-0").lastFailure);
        assertNull(replica(cluster, "f-worker-1").lastFailure);

        cluster.exit("f-worker-1", 1, "RuntimeError: NCCL error");
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertTrue(condition(cluster, "Failed").message.endsWith("last output:\nRuntimeError: NCCL error"), condition(cluster, "Failed").message);
        assertTrue(replica(cluster, "f-worker-1").lastFailure.endsWith("RuntimeError: NCCL error"));
        assertTrue(replica(cluster, "f-worker-0").lastFailure.endsWith("ValueError: bad batch"));
    }

    @Test
    void onlyTheEndOfALongOutputIsKept() {
        InMemoryCluster cluster = running("{backoffLimit: 1}", "OnFailure");
        cluster.exit("f-worker-0", 1, "x".repeat(100_000) + "\nthe line that matters");
        cluster.settle();
        String lastFailure = replica(cluster, "f-worker-0").lastFailure;
        String output = lastFailure.substring(lastFailure.indexOf("last output:\n") + "last output:\n".length());
        assertEquals(1024, output.length());
        assertTrue(output.startsWith("...") && output.endsWith("the line that matters"), output);
    }

    @Test
    void replicasThatCannotStartAreSaidInTheRunningConditionAndTheirStatusOnceAndCountNothing() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: f}
                spec:
                  runPolicy: {backoffLimit: 0}
                  replicaSpecs:
                  - {type: master, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                  - {type: worker, replicas: 2, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """);
        cluster.settle();
        dev.torchjob.operator.testing.PodFates.waiting(cluster.pod("f-master-0"), cluster.now, "ErrImageNeverPull",
                "Container image \"torch\" is not present with pull policy of Never");
        dev.torchjob.operator.testing.PodFates.unschedulable(cluster.pod("f-worker-1"), "0/1 nodes are available: 1 Insufficient memory.");
        int plansBefore = cluster.plans.size();
        cluster.settle();
        cluster.now = cluster.now.plus(Duration.ofMinutes(30));
        cluster.settle();

        JobCondition running = condition(cluster, "Running");
        assertEquals("False", running.status);
        assertEquals("ErrImageNeverPull", running.reason, "the first replica's cause, in the kubelet's words");
        assertEquals("pod f-master-0 (container pytorch) cannot start: ErrImageNeverPull: Container image \"torch\" is not present with "
                + "pull policy of Never; pod f-worker-1 cannot be scheduled: 0/1 nodes are available: 1 Insufficient memory. "
                + "The job waits for them; nothing is counted.", running.message);
        ReplicaStatus.CannotStart worker = cluster.job.getStatus().tasks.get(1).replicas.get(1).cannotStart;
        assertEquals("Unschedulable", worker.reason);
        assertNull(cluster.job.getStatus().tasks.get(1).replicas.get(0).cannotStart, "worker 0 is merely pending");
        List<Plan.JobEvent> said = cluster.plans.subList(plansBefore, cluster.plans.size()).stream().flatMap(p -> p.events().stream())
                .filter(e -> e.reason().equals("ReplicaCannotStart")).toList();
        assertEquals(2, said.size(), "one Warning event per pod, through the stored status: " + said);
        assertEquals(JobPhase.Pending, cluster.job.getStatus().phase);
        assertEquals(0, cluster.job.getStatus().backoffCount, "backoffLimit 0 and still nothing failed");

        cluster.runAll();
        cluster.settle();
        assertEquals("AllReplicasRunning", condition(cluster, "Running").reason, "fixed: the job starts by itself");
        assertNull(cluster.job.getStatus().tasks.get(0).replicas.get(0).cannotStart);
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase);
    }
}
