package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.ReplicaPhase;

/** The success path of spec §6 and the status of §7, planned pass by pass. */
class PlannerLifecycleTest {

    static final String MASTER_WORKERS = """
            metadata: {name: demo}
            spec:
              replicaSpecs:
              - type: master
                template:
                  spec:
                    containers: [{name: pytorch, image: torch, command: [python, train.py]}]
              - type: worker
                replicas: 2
                template:
                  spec:
                    containers: [{name: pytorch, image: torch, command: [python, train.py]}]
            """;

    static Map<String, JobCondition> conditions(InMemoryCluster cluster) {
        return cluster.job.getStatus().conditions.stream().collect(Collectors.toMap(c -> c.type, c -> c));
    }

    @Test
    void firstPassCreatesTheServiceAndEveryPodAtOnce() {
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS);
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        assertEquals(1, plan.servicesToCreate().size());
        assertEquals(List.of("demo-master-0", "demo-worker-0", "demo-worker-1"),
                plan.podsToCreate().stream().map(p -> p.getMetadata().getName()).toList());
        assertEquals(JobPhase.Pending, plan.status().phase);
        assertEquals("2026-01-01T00:00:00Z", plan.status().startTime);
        assertEquals("tensorstack.dev/owner-name=demo", plan.status().selector);
        assertEquals(1L, plan.status().observedGeneration);
        assertEquals(3, plan.status().aggregate.creating);
        var created = plan.podsCreated().orElseThrow().event(List.of("demo-master-0", "demo-worker-1"));
        assertEquals("PodsCreated", created.reason());
        assertEquals("Created pods demo-master-0, demo-worker-1", created.message(), "names only the pods created");
    }

    @Test
    void aNewJobsFirstStatusReportsItsPodsAsCreated() {
        // A first pass that only creates may write its status after the creates (the reconciler plans
        // again then): the first status a user sees has the pods, and one write per job is saved.
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS);
        Plan<PyTorchTrainingJobStatus> first = cluster.plan();
        assertTrue(first.statusCanFollowCreates());
        assertFalse(first.withoutStatus().statusChanged());
        cluster.applyPods(first.withoutStatus());

        cluster.job.setStatus(first.status()); // what the reconciler plans from; the server has no status yet
        Plan<PyTorchTrainingJobStatus> again = first.followedBy(cluster.plan());
        assertTrue(again.podsToCreate().isEmpty() && again.servicesToCreate().isEmpty(), "nothing is created twice");
        assertTrue(again.events().isEmpty(), "nothing is said twice");
        assertTrue(again.statusChanged());
        assertFalse(again.before().planned(), "still the job's first status (its metrics count a new job)");
        assertFalse(again.statusCanFollowCreates());
        assertEquals(3, again.status().aggregate.pending);
        assertEquals(0, again.status().aggregate.creating);
        assertEquals(first.status().startTime, again.status().startTime);
        cluster.applyStatus(again);

        cluster.exit("demo-worker-0", 137);
        assertFalse(cluster.plan().statusCanFollowCreates(), "once a status was written, it always goes first");
    }

    @Test
    void aFirstPassThatSaysSomethingWritesItsStatusFirst() {
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS.replace("\nspec:\n", "\nspec:\n  tensorboardSpec: {}\n"));
        Plan<PyTorchTrainingJobStatus> first = cluster.plan();
        assertEquals(List.of("TensorBoardNotManaged"), first.events().stream().map(Plan.JobEvent::reason).toList());
        assertFalse(first.statusCanFollowCreates(), "a warning and the status it explains go out in one pass, status first");
    }

    @Test
    void jobRunsWhenAllPodsRunAndSucceedsWhenTheMasterSucceeds() {
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS);
        cluster.settle();
        assertEquals(JobPhase.Pending, cluster.job.getStatus().phase);
        assertTrue(conditions(cluster).get(JobCondition.INITIALIZED).isTrue());
        assertEquals(3, cluster.job.getStatus().aggregate.pending);

        cluster.run("demo-master-0");
        cluster.run("demo-worker-0");
        cluster.settle();
        assertEquals(JobPhase.Pending, cluster.job.getStatus().phase, "one worker is not running yet");

        cluster.run("demo-worker-1");
        cluster.now = cluster.now.plusSeconds(30);
        cluster.settle();
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase);
        assertTrue(conditions(cluster).get(JobCondition.RUNNING).isTrue());
        assertEquals("2026-01-01T00:00:30Z", conditions(cluster).get(JobCondition.RUNNING).lastTransitionTime);
        assertEquals(3, cluster.job.getStatus().aggregate.running);

        cluster.exit("demo-worker-0", 0);
        cluster.settle();
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase, "a worker finishing first does not end the job");

        cluster.exit("demo-master-0", 0);
        cluster.now = cluster.now.plusSeconds(60);
        Plan<PyTorchTrainingJobStatus> done = cluster.reconcile();
        assertEquals(JobPhase.Succeeded, done.status().phase);
        assertEquals("2026-01-01T00:01:30Z", done.status().completionTime);
        Map<String, JobCondition> conditions = conditions(cluster);
        assertTrue(conditions.get(JobCondition.COMPLETED).isTrue());
        assertEquals("Succeeded", conditions.get(JobCondition.COMPLETED).reason);
        assertFalse(conditions.get(JobCondition.RUNNING).isTrue());
        assertFalse(conditions.get(JobCondition.FAILED).isTrue());
        assertEquals("2026-01-01T00:00:00Z", conditions.get(JobCondition.INITIALIZED).lastTransitionTime,
                "lastTransitionTime moves only when the status of a condition changes");
        assertEquals("Succeeded", done.events().get(done.events().size() - 1).reason());
        assertTrue(done.podsToDelete().isEmpty(), "cleanUpPolicy None keeps every pod");
    }

    /**
     * Pods that ran and ended between two passes: the job's status first says it ran (phase Running,
     * Running=True) and does nothing else; the next pass ends it, says so and cleans up once.
     */
    @Test
    void aJobWhosePodsRanAndEndedBetweenTwoPassesShowsRunningBeforeItsOutcome() {
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS.replace("spec:\n  replicaSpecs:",
                "spec:\n  runPolicy: {cleanUpPolicy: All}\n  replicaSpecs:"));
        cluster.settle();
        assertEquals(JobPhase.Pending, cluster.job.getStatus().phase);
        cluster.exit("demo-worker-0", 0);
        cluster.exit("demo-worker-1", 0);
        cluster.exit("demo-master-0", 0);

        Plan<PyTorchTrainingJobStatus> ran = cluster.reconcile();
        assertEquals(JobPhase.Running, ran.status().phase);
        assertTrue(conditions(cluster).get(JobCondition.RUNNING).isTrue());
        assertNull(ran.status().completionTime);
        assertTrue(ran.events().isEmpty() && ran.podsToDelete().isEmpty(), "nothing else happens yet");
        assertTrue(ran.recheckAfter().isPresent(), "the next pass comes without waiting for an event");

        Plan<PyTorchTrainingJobStatus> done = cluster.reconcile();
        assertEquals(JobPhase.Succeeded, done.status().phase);
        assertFalse(conditions(cluster).get(JobCondition.RUNNING).isTrue());
        assertTrue(conditions(cluster).get(JobCondition.COMPLETED).isTrue());
        assertEquals(1, done.events().stream().filter(e -> "Succeeded".equals(e.reason())).count());
        assertEquals(3, done.podsToDelete().size(), "cleanUpPolicy All, once the job has ended");
        cluster.settle();
        assertEquals(JobPhase.Succeeded, cluster.job.getStatus().phase);
    }

    static final String ONE_MASTER_NO_BUDGET = """
            metadata: {name: demo}
            spec:
              runPolicy: {backoffLimit: 0}
              replicaSpecs:
              - type: master
                restartPolicy: OnFailure
                template:
                  spec:
                    containers: [{name: pytorch, image: torch}]
            """;

    /** The same for a job that fails that way: its failure is counted once, in the ending pass, as for a job seen running. */
    @Test
    void aJobWhoseOnlyPodFailedBetweenTwoPassesShowsRunningThenFailsCountingOnce() {
        InMemoryCluster seenRunning = new InMemoryCluster(ONE_MASTER_NO_BUDGET);
        seenRunning.settle();
        seenRunning.runAll();
        seenRunning.settle();
        seenRunning.exit("demo-master-0", 1);
        seenRunning.settle();

        InMemoryCluster cluster = new InMemoryCluster(ONE_MASTER_NO_BUDGET);
        cluster.settle();
        cluster.exit("demo-master-0", 1);
        Plan<PyTorchTrainingJobStatus> ran = cluster.reconcile();
        assertEquals(JobPhase.Running, ran.status().phase);
        assertEquals(0, ran.status().backoffCount);
        Plan<PyTorchTrainingJobStatus> done = cluster.reconcile();
        assertEquals(JobPhase.Failed, done.status().phase);
        assertEquals("BackoffLimitExceeded", conditions(cluster).get(JobCondition.FAILED).reason);
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertEquals(seenRunning.job.getStatus().backoffCount, cluster.job.getStatus().backoffCount);
        assertEquals(seenRunning.job.getStatus().tasks.get(0).restartCount, cluster.job.getStatus().tasks.get(0).restartCount,
                "restarts counted as for a job seen running");
    }

    @Test
    void statusIsReportedUnchangedWhenNothingHappened() {
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS);
        cluster.settle();
        cluster.runAll();
        cluster.settle();
        cluster.now = cluster.now.plusSeconds(300);
        Plan<PyTorchTrainingJobStatus> idle = cluster.reconcile();
        assertFalse(idle.statusChanged(), "no write per reconcile");
        assertTrue(idle.events().isEmpty());
        assertTrue(idle.podsToCreate().isEmpty());
    }

    @Test
    void replicaStatusListsPodsContainersAndExitCodes() {
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS);
        cluster.settle();
        cluster.runAll();
        cluster.exit("demo-master-0", 0);
        cluster.settle();
        var master = cluster.job.getStatus().tasks.get(0);
        assertEquals("master", master.type);
        assertEquals(ReplicaPhase.Succeeded, master.replicas.get(0).phase);
        assertEquals(cluster.pod("demo-master-0").getMetadata().getUid(), master.replicas.get(0).uid);
        assertEquals("Terminated", master.replicas.get(0).containers.get(0).state);
        assertEquals(0, master.replicas.get(0).containers.get(0).exitCode);
        assertEquals(2, cluster.job.getStatus().tasks.get(1).replicas.size());
    }

    @Test
    void finishedJobNeverCreatesPodsOrChangesOutcome() {
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS);
        cluster.settle();
        cluster.runAll();
        cluster.exit("demo-master-0", 0);
        cluster.settle();
        String completion = cluster.job.getStatus().completionTime;
        cluster.vanish("demo-worker-0");
        cluster.exit("demo-worker-1", 1);
        cluster.now = cluster.now.plusSeconds(600);
        Plan<PyTorchTrainingJobStatus> later = cluster.reconcile();
        assertEquals(JobPhase.Succeeded, later.status().phase);
        assertEquals(completion, later.status().completionTime);
        assertTrue(later.podsToCreate().isEmpty());
        assertTrue(later.events().isEmpty());
        assertEquals(ReplicaPhase.Deleted, later.status().tasks.get(1).replicas.get(0).phase);
    }

    @Test
    void invalidSpecFailsTheJobWithAMessageNamingTheField() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: bad}
                spec:
                  replicaSpecs:
                  - type: master
                    replicas: 2
                    template:
                      spec:
                        containers: [{name: pytorch, image: torch}]
                """);
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        assertEquals(JobPhase.Failed, plan.status().phase);
        assertNotNull(plan.status().completionTime);
        JobCondition failed = conditions(cluster).get(JobCondition.FAILED);
        assertEquals("InvalidSpec", failed.reason);
        assertTrue(failed.message.contains("spec.replicaSpecs[0].replicas"), failed.message);
        assertTrue(plan.podsToCreate().isEmpty());
        assertTrue(plan.servicesToCreate().isEmpty());
        assertTrue(plan.events().stream().anyMatch(e -> e.reason().equals("InvalidSpec")));
        Plan<PyTorchTrainingJobStatus> again = cluster.reconcile();
        assertFalse(again.statusChanged());
        assertTrue(again.events().isEmpty(), "the failure is reported once");
    }

    @Test
    void podsOfAnotherJobWithTheSameNameAreIgnored() {
        InMemoryCluster old = new InMemoryCluster(MASTER_WORKERS);
        old.job.getMetadata().setUid("old-job");
        old.settle();
        old.exit("demo-master-0", 1);
        InMemoryCluster cluster = new InMemoryCluster(MASTER_WORKERS);
        cluster.pods.putAll(old.pods);
        Plan<PyTorchTrainingJobStatus> plan = cluster.plan();
        assertEquals(JobPhase.Pending, plan.status().phase, "a failed pod of an older job fails nothing");
        assertEquals(0, plan.status().backoffCount);
        assertNull(plan.status().countedRestarts);
    }
}
