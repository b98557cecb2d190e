package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.RunMode;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.TrainingContainer;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;

/** Spec §9 (debug, pause/resume), §10 (T9k scheduler) and §12 in the planner. */
class RunModesTest {

    static final String TWO_GROUPS = """
            metadata: {name: m}
            spec:
              %s
              torchrunConfig: {enabled: %s}
              replicaSpecs:
              - type: master
                template:
                  spec:
                    initContainers: [{name: fetch, image: busybox}]
                    containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]
              - type: worker
                replicas: 2
                template:
                  spec:
                    initContainers: [{name: fetch, image: busybox}]
                    containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]
            """;

    static InMemoryCluster cluster(String extraSpec, boolean torchrun) {
        return new InMemoryCluster(TWO_GROUPS.formatted(extraSpec, torchrun));
    }

    static Container training(Pod pod) {
        return TrainingContainer.of(pod.getSpec().getContainers());
    }

    static JobCondition condition(InMemoryCluster cluster, String type) {
        return Conditions.find(cluster.job.getStatus().conditions, type);
    }

    // ---- debug ------------------------------------------------------------------------------

    @Test
    void debugPodsHaveTheTrainingEnvironmentAndRunTheDebugCommand() {
        InMemoryCluster cluster = cluster("runMode: {debug: {enabled: true, replicaSpecs: [{type: worker, skipInitContainer: true, command: [/usr/bin/sshd]}]}}", true);
        List<Pod> pods = cluster.plan().podsToCreate();
        assertEquals(3, pods.size());
        Container master = training(pods.get(0));
        assertEquals(List.of("sleep", "inf"), master.getCommand(), "default debug command");
        assertNull(master.getArgs(), "no args, no torchrun");
        assertEquals(1, pods.get(0).getSpec().getInitContainers().size(), "master keeps its init containers");
        Container worker = training(pods.get(2));
        assertEquals(List.of("/usr/bin/sshd"), worker.getCommand());
        assertTrue(pods.get(2).getSpec().getInitContainers() == null || pods.get(2).getSpec().getInitContainers().isEmpty());
        Map<String, String> env = PodTemplatesTest.env(pods.get(2));
        assertEquals("m-master-0.m", env.get("MASTER_ADDR"));
        assertEquals("2", env.get("RANK"));
        assertEquals("3", env.get("WORLD_SIZE"));
    }

    @Test
    void debugModeRestartsNothingAndDecidesNoOutcome() {
        InMemoryCluster cluster = cluster("runMode: {debug: {enabled: true}}", false);
        cluster.settle();
        cluster.runAll();
        cluster.settle();
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase);
        assertEquals("DebugMode", condition(cluster, "Running").reason);
        cluster.exit("m-worker-0", 1);
        cluster.exit("m-master-0", 0);
        cluster.settle();
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase, "no outcome in debug mode");
        assertEquals(0, cluster.job.getStatus().backoffCount);
        assertEquals("Failed", cluster.pod("m-worker-0").getStatus().getPhase(), "no restart in debug mode");
        assertTrue(condition(cluster, "ReplicaFailure").isTrue());
    }

    // ---- pause and resume ---------------------------------------------------------------------

    static void pause(InMemoryCluster cluster, boolean on) {
        if (cluster.job.getSpec().runMode == null) {
            cluster.job.getSpec().runMode = new RunMode();
        }
        if (cluster.job.getSpec().runMode.pause == null) {
            cluster.job.getSpec().runMode.pause = new RunMode.Pause();
        }
        cluster.job.getSpec().runMode.pause.enabled = on;
    }

    @Test
    void pauseDeletesEveryPodWithoutCountingAndResumeRecreatesThemWithTheOverrides() {
        InMemoryCluster cluster = cluster("runMode: {pause: {enabled: false, resumeSpecs: [{type: worker, command: [python], args: [resume.py, --from-checkpoint]}]}}", false);
        cluster.settle();
        cluster.runAll();
        cluster.exit("m-worker-1", 1);
        cluster.settle(); // one restart before the pause
        cluster.runAll();
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount);
        String startedFirst = cluster.job.getStatus().startTime;

        pause(cluster, true);
        Plan<PyTorchTrainingJobStatus> pausing = cluster.plan();
        assertEquals(3, pausing.podsToDelete().size());
        assertTrue(pausing.podsToDelete().stream().allMatch(d -> d.reason() == Plan.DeletionReason.PAUSE));
        cluster.applyStatus(pausing);
        cluster.applyPods(pausing);
        cluster.settle();
        assertEquals(JobPhase.Paused, cluster.job.getStatus().phase);
        assertTrue(condition(cluster, "Paused").isTrue());
        assertTrue(cluster.pods.isEmpty());
        assertEquals(1, cluster.job.getStatus().backoffCount, "pausing is not a restart");
        assertTrue(cluster.plans.stream().anyMatch(p -> p.events().stream().anyMatch(e -> e.reason().equals("Paused"))));

        cluster.now = cluster.now.plusSeconds(600);
        pause(cluster, false);
        Plan<PyTorchTrainingJobStatus> resuming = cluster.reconcile();
        assertEquals(JobPhase.Resuming, resuming.status().phase);
        assertTrue(resuming.events().stream().anyMatch(e -> e.reason().equals("Resumed")));
        assertEquals(3, resuming.podsToCreate().size());
        Container worker = training(cluster.pod("m-worker-0"));
        assertEquals(List.of("python"), worker.getCommand());
        assertEquals(List.of("resume.py", "--from-checkpoint"), worker.getArgs());
        assertEquals(List.of("train.py"), training(cluster.pod("m-master-0")).getArgs(), "types without resumeSpecs keep the template");
        assertNotEquals(startedFirst, cluster.job.getStatus().startTime, "startTime restarts on resume");
        assertEquals("2026-01-01T00:10:00Z", cluster.job.getStatus().startTime);
        cluster.runAll();
        cluster.settle();
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase);
        assertEquals(1, cluster.job.getStatus().backoffCount, "backoffCount is kept");
        assertFalse(condition(cluster, "Paused").isTrue());
    }

    /** A pod a lost node never lets go: the pause says what holds it, and is complete once it is gone. */
    @Test
    void aPauseHeldByAPodOnALostNodeSaysWhatHoldsIt() {
        InMemoryCluster cluster = cluster("", false);
        cluster.settle();
        cluster.runAll();
        cluster.settle();
        Pod lost = cluster.pods.get("m-worker-0");
        lost.getSpec().setNodeName("node-7");
        lost.getMetadata().setDeletionTimestamp(cluster.now.minusSeconds(61).toString());
        pause(cluster, true);
        cluster.settle();
        JobCondition paused = condition(cluster, "Paused");
        assertFalse(paused.isTrue());
        assertTrue(paused.message.startsWith("Deleting 1 pods. pod m-worker-0 is still terminating, its grace period ended at "
                + cluster.now.minusSeconds(61) + ": node node-7 has not confirmed that it stopped"), paused.message);
        assertTrue(paused.message.endsWith("; the job is paused once they are gone."), paused.message);

        cluster.pods.remove("m-worker-0");
        cluster.settle();
        assertEquals(JobPhase.Paused, cluster.job.getStatus().phase);
        assertTrue(condition(cluster, "Paused").isTrue());
    }

    @Test
    void aPausedDebugJobResumesOnceIntoDebugMode() {
        InMemoryCluster cluster = cluster("runMode: {debug: {enabled: true}, pause: {enabled: true}}", false);
        cluster.settle();
        assertEquals(JobPhase.Paused, cluster.job.getStatus().phase);
        pause(cluster, false);
        Plan<PyTorchTrainingJobStatus> resumed = cluster.reconcile();
        assertTrue(resumed.events().stream().anyMatch(e -> e.reason().equals("Resumed")));
        assertEquals(List.of("sleep", "inf"), training(resumed.podsToCreate().get(0)).getCommand());
        assertFalse(condition(cluster, "Paused").isTrue());
        cluster.runAll();
        cluster.settle();
        assertTrue(cluster.plans.stream().filter(p -> p.events().stream().anyMatch(e -> e.reason().equals("Resumed"))).count() == 1,
                "Resumed is said once");
        assertEquals(JobPhase.Running, cluster.job.getStatus().phase);
    }

    @Test
    void aJobCreatedPausedCreatesNoPods() {
        InMemoryCluster cluster = cluster("runMode: {pause: {enabled: true}}", false);
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        assertTrue(plan.podsToCreate().isEmpty());
        assertTrue(plan.servicesToCreate().isEmpty());
        assertEquals(JobPhase.Paused, plan.status().phase);
        assertTrue(condition(cluster, "Paused").isTrue());
        assertNull(plan.status().startTime);
    }

    @Test
    void pausingAFinishedJobChangesNothingButSaysSoOnce() {
        InMemoryCluster cluster = cluster("", false);
        cluster.settle();
        cluster.runAll();
        cluster.exit("m-master-0", 0);
        cluster.settle();
        pause(cluster, true);
        Plan<PyTorchTrainingJobStatus> first = cluster.reconcile();
        assertEquals(JobPhase.Succeeded, first.status().phase);
        assertTrue(first.podsToDelete().isEmpty());
        assertEquals(List.of("PauseIgnored"), first.events().stream().map(Plan.JobEvent::reason).toList());
        Plan<PyTorchTrainingJobStatus> second = cluster.reconcile();
        assertTrue(second.events().isEmpty(), "said once");
        assertFalse(second.statusChanged());
    }

    // ---- T9k scheduler ------------------------------------------------------------------------

    @Test
    void t9kSchedulerPodsAndPodGroup() {
        InMemoryCluster cluster = cluster("scheduler: {t9kScheduler: {queue: gpu-a100, priority: 50}}", false);
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        var podGroup = plan.podGroupToCreate().orElseThrow();
        assertEquals("scheduler.tensorstack.dev/v1beta1", podGroup.getApiVersion());
        assertEquals("PodGroup", podGroup.getKind());
        assertEquals("m", podGroup.getMetadata().getName());
        assertEquals("job-uid-m", podGroup.getMetadata().getOwnerReferences().get(0).getUid());
        assertEquals(Map.of("minMember", 3, "queue", "gpu-a100", "priority", 50), podGroup.getAdditionalProperties().get("spec"));
        Pod worker = plan.podsToCreate().get(1);
        assertEquals("t9k-scheduler", worker.getSpec().getSchedulerName());
        assertEquals("m", worker.getMetadata().getLabels().get("scheduler.tensorstack.dev/group-name"));
        assertEquals("gpu-a100", worker.getMetadata().getLabels().get("scheduler.tensorstack.dev/queue"));
        assertEquals("worker", worker.getMetadata().getLabels().get("scheduler.tensorstack.dev/role"));
        assertTrue(cluster.reconcile().podGroupToCreate().isEmpty(), "created once");
    }

    @Test
    void elasticPodGroupNeedsOnlyMinReplicas() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: e}
                spec:
                  scheduler: {t9kScheduler: {queue: default}}
                  torchrunConfig: {enabled: true}
                  elastic: {enabled: true, minReplicas: 2, maxReplicas: 8, expectedReplicas: 5}
                  replicaSpecs:
                  - type: node
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """);
        @SuppressWarnings("unchecked")
        var spec = (Map<String, Object>) cluster.plan().podGroupToCreate().orElseThrow().getAdditionalProperties().get("spec");
        assertEquals(2, spec.get("minMember"));
        assertEquals(0, spec.get("priority"));
    }

    @Test
    void withoutThePodGroupApiTheJobWaitsAndSaysWhy() {
        InMemoryCluster cluster = cluster("scheduler: {t9kScheduler: {queue: default}}", false);
        cluster.podGroupApiInstalled = false;
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        assertTrue(plan.podsToCreate().isEmpty());
        assertEquals(JobPhase.Pending, plan.status().phase);
        JobCondition initialized = condition(cluster, "Initialized");
        assertFalse(initialized.isTrue());
        assertEquals("SchedulerUnavailable", initialized.reason);
        assertTrue(initialized.message.contains("scheduler.tensorstack.dev/v1beta1"));
        assertTrue(plan.recheckAfter().isPresent(), "re-checked without waiting for an event");
        assertEquals(List.of("SchedulerUnavailable"), plan.events().stream().map(Plan.JobEvent::reason).toList());
        assertTrue(cluster.reconcile().events().isEmpty(), "said once");

        cluster.podGroupApiInstalled = true;
        Plan<PyTorchTrainingJobStatus> installed = cluster.reconcile();
        assertTrue(installed.podGroupToCreate().isPresent());
        assertEquals(3, installed.podsToCreate().size());
    }

    // ---- spec §12 -----------------------------------------------------------------------------

    @Test
    void tensorboardSpecAndMinNodesAreKeptAndWarnedAboutOnce() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: tb}
                spec:
                  tensorboardSpec: {trainingLogFilesets: ["t9k://pvc/logs"], image: tensorflow/tensorflow:2.11.0}
                  torchrunConfig: {enable: true, minNodes: 2}
                  replicaSpecs:
                  - type: worker
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python], args: [t.py]}]}}
                """);
        Plan<PyTorchTrainingJobStatus> first = cluster.reconcile();
        List<String> reasons = new ArrayList<>(first.events().stream().map(Plan.JobEvent::reason).toList());
        assertTrue(reasons.containsAll(List.of("TensorBoardNotManaged", "IgnoredField")), reasons.toString());
        assertEquals("tensorflow/tensorflow:2.11.0", cluster.job.getSpec().tensorboardSpec.get("image"), "preserved");
        assertEquals(List.of("torchrun"), training(first.podsToCreate().get(0)).getCommand(), "enable counts as enabled");
        assertTrue(cluster.reconcile().events().stream().noneMatch(e -> e.reason().equals("TensorBoardNotManaged")));
    }
}
