package dev.torchjob.operator.reconciler;

import dev.torchjob.operator.testing.UserEdits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.RunMode;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinitionBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/** Spec §8, §9 and §10 end to end against the mock API server. */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
class RunModesIntegrationTest {
    @Inject
    KubernetesClient client;

    static Container training(Pod pod) {
        return pod.getSpec().getContainers().get(0);
    }

    @Test
    void elasticJobScalesThreeToFiveToTwoWithoutCountingRestarts() {
        OperatorHarness cluster = new OperatorHarness(client, "elastic");
        cluster.submit(OperatorHarness.elasticJob(1, 6, 3));
        cluster.awaitPodNames("el-node-0", "el-node-1", "el-node-2");
        assertEquals("--nnodes=1:6", training(cluster.pod("el-node-0")).getArgs().get(0));
        cluster.runAll();
        cluster.awaitJob("el", j -> j.getStatus().elastic != null && j.getStatus().elastic.currentReplicas == 3);
        String firstUid = cluster.pod("el-node-0").getMetadata().getUid();

        scale(5);
        cluster.awaitPodNames("el-node-0", "el-node-1", "el-node-2", "el-node-3", "el-node-4");
        cluster.awaitJob("el", j -> j.getStatus().elastic.currentReplicas == 5);
        scale(2);
        cluster.awaitPodNames("el-node-0", "el-node-1");
        PyTorchTrainingJob job = cluster.awaitJob("el", j -> j.getStatus().elastic.currentReplicas == 2);
        assertEquals(0, job.getStatus().backoffCount);
        assertEquals(firstUid, cluster.pod("el-node-0").getMetadata().getUid(), "index 0 is never removed");
        assertEquals("tensorstack.dev/owner-name=el", job.getStatus().selector);
    }

    private void scale(int replicas) {
        UserEdits.edit(client.resources(PyTorchTrainingJob.class).inNamespace("elastic").withName("el"), j -> {
                    j.getSpec().elastic.expectedReplicas = replicas;
                    return j;
                });
    }

    @Test
    void debugPodsRunTheDebugCommandWithTheTrainingEnvironment() {
        OperatorHarness cluster = new OperatorHarness(client, "debug");
        cluster.submit("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: dbg}
                spec:
                  runMode:
                    debug:
                      enabled: true
                      replicaSpecs: [{type: worker, skipInitContainer: true, command: [/usr/bin/sshd, -D]}]
                  replicaSpecs:
                  - type: master
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]}}
                  - type: worker
                    template:
                      spec:
                        initContainers: [{name: fetch, image: busybox}]
                        containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]
                """);
        cluster.awaitPods(2);
        assertEquals(List.of("sleep", "inf"), training(cluster.pod("dbg-master-0")).getCommand());
        Pod worker = cluster.pod("dbg-worker-0");
        assertEquals(List.of("/usr/bin/sshd", "-D"), training(worker).getCommand());
        assertTrue(training(worker).getArgs() == null || training(worker).getArgs().isEmpty(), "no args");
        assertTrue(worker.getSpec().getInitContainers() == null || worker.getSpec().getInitContainers().isEmpty());
        assertEquals("dbg-master-0.dbg", JobSuccessTest.env(training(worker)).get("MASTER_ADDR"));
        assertEquals("1", JobSuccessTest.env(training(worker)).get("RANK"));
        cluster.runAll();
        cluster.awaitPhase("dbg", JobPhase.Running);
        assertEquals("DebugMode", cluster.condition("dbg", "Running").reason);
    }

    @Test
    void pauseDeletesThePodsAndResumeRecreatesThemWithTheOverrideCommand() {
        OperatorHarness cluster = new OperatorHarness(client, "pause");
        cluster.submit("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: p}
                spec:
                  runMode:
                    pause:
                      enabled: false
                      resumeSpecs: [{type: worker, command: [python], args: [resume.py]}]
                  replicaSpecs:
                  - type: master
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]}}
                  - type: worker
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]}}
                """);
        cluster.awaitPods(3);
        cluster.runAll();
        cluster.awaitPhase("p", JobPhase.Running);

        setPause(true);
        cluster.awaitPods(0);
        PyTorchTrainingJob paused = cluster.awaitPhase("p", JobPhase.Paused);
        assertTrue(cluster.condition("p", "Paused").isTrue());
        assertEquals(0, paused.getStatus().backoffCount);
        cluster.awaitEvent("Paused", "All pods are deleted");

        setPause(false);
        cluster.awaitPods(3);
        assertEquals(List.of("resume.py"), training(cluster.pod("p-worker-1")).getArgs());
        assertEquals(List.of("train.py"), training(cluster.pod("p-master-0")).getArgs());
        cluster.awaitEvent("Resumed", "resumeSpecs");
        cluster.runAll();
        PyTorchTrainingJob running = cluster.awaitPhase("p", JobPhase.Running);
        assertEquals(0, running.getStatus().backoffCount);
    }

    private void setPause(boolean on) {
        UserEdits.edit(client.resources(PyTorchTrainingJob.class).inNamespace("pause").withName("p"), j -> {
            if (j.getSpec().runMode.pause == null) {
                j.getSpec().runMode.pause = new RunMode.Pause();
            }
            j.getSpec().runMode.pause.enabled = on;
            return j;
        });
    }

    static final String SCHEDULED = """
            apiVersion: batch.tensorstack.dev/v1beta1
            kind: PyTorchTrainingJob
            metadata: {name: s}
            spec:
              scheduler: {t9kScheduler: {queue: research, priority: 80}}
              replicaSpecs:
              - type: worker
                replicas: 3
                template: {spec: {containers: [{name: pytorch, image: torch}]}}
            """;

    @Test
    void withoutThePodGroupApiTheJobStaysPendingAndSaysWhyThenStartsOnceInstalled() {
        OperatorHarness cluster = new OperatorHarness(client, "no-scheduler");
        cluster.submit(SCHEDULED);
        cluster.awaitJob("s", j -> j.getStatus() != null && j.getStatus().conditions.stream()
                .anyMatch(c -> c.type.equals("Initialized") && "SchedulerUnavailable".equals(c.reason)));
        assertEquals(JobPhase.Pending, cluster.job("s").getStatus().phase);
        assertTrue(cluster.condition("s", "Initialized").message.contains("scheduler.tensorstack.dev/v1beta1"));
        cluster.awaitEvent("SchedulerUnavailable", "not installed");
        assertEquals(0, cluster.pods().size());
    }

    @Test
    void podGroupIsCreatedWithQueuePriorityAndMinMember() {
        client.apiextensions().v1().customResourceDefinitions().resource(new CustomResourceDefinitionBuilder()
                .withNewMetadata().withName("podgroups.scheduler.tensorstack.dev").endMetadata()
                .withNewSpec().withGroup("scheduler.tensorstack.dev").withScope("Namespaced")
                .withNewNames().withKind("PodGroup").withPlural("podgroups").withSingular("podgroup").endNames()
                .addNewVersion().withName("v1beta1").withServed(true).withStorage(true).endVersion()
                .endSpec().build()).createOr(existing -> existing.update());
        OperatorHarness cluster = new OperatorHarness(client, "scheduler");
        cluster.submit(SCHEDULED);
        cluster.awaitPods(3);
        GenericKubernetesResource podGroup = client.genericKubernetesResources(PodGroupApi.POD_GROUPS)
                .inNamespace("scheduler").withName("s").get();
        assertNotNull(podGroup);
        assertEquals(Map.of("minMember", 3, "queue", "research", "priority", 80), podGroup.getAdditionalProperties().get("spec"));
        assertEquals(cluster.job("s").getMetadata().getUid(), podGroup.getMetadata().getOwnerReferences().get(0).getUid());
        Pod pod = cluster.pod("s-worker-2");
        assertEquals("t9k-scheduler", pod.getSpec().getSchedulerName());
        assertEquals("research", pod.getMetadata().getLabels().get("scheduler.tensorstack.dev/queue"));
    }
}
