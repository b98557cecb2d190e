package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.stream.Collectors;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/** Spec §4, §6 (success) and §7 against the mock API server, the test acting as kubelet. */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
class JobSuccessTest {
    @Inject
    KubernetesClient client;

    static final String DEMO = """
            apiVersion: batch.tensorstack.dev/v1beta1
            kind: PyTorchTrainingJob
            metadata:
              name: demo
            spec:
              replicaSpecs:
              - type: master
                template:
                  metadata:
                    labels: {team: vision}
                  spec:
                    containers:
                    - name: pytorch
                      image: pytorch/pytorch:2.0.0
                      command: [python, train.py]
                      env: [{name: RANK, value: "42"}]
              - type: worker
                replicas: 2
                template:
                  spec:
                    restartPolicy: OnFailure
                    containers:
                    - name: pytorch
                      image: pytorch/pytorch:2.0.0
                      command: [python, train.py]
            """;

    @Test
    void masterAndWorkersRunToSuccess() {
        OperatorHarness cluster = new OperatorHarness(client, "success");
        PyTorchTrainingJob submitted = cluster.submit(DEMO);
        cluster.awaitPodNames("demo-master-0", "demo-worker-0", "demo-worker-1");

        Service service = client.services().inNamespace("success").withName("demo").get();
        assertEquals("None", service.getSpec().getClusterIP());
        assertTrue(service.getSpec().getPublishNotReadyAddresses());
        assertEquals("demo", service.getSpec().getSelector().get("tensorstack.dev/owner-name"));

        Pod worker = cluster.pod("demo-worker-1");
        assertEquals("Never", worker.getSpec().getRestartPolicy());
        assertEquals("demo-worker-1", worker.getSpec().getHostname());
        assertEquals("demo", worker.getSpec().getSubdomain());
        assertEquals(submitted.getMetadata().getUid(), worker.getMetadata().getOwnerReferences().get(0).getUid());
        assertEquals("2", worker.getMetadata().getLabels().get("tensorstack.dev/rank"));
        Map<String, String> env = env(worker.getSpec().getContainers().get(0));
        assertEquals(Map.of("MASTER_ADDR", "demo-master-0.demo", "MASTER_PORT", "23456", "WORLD_SIZE", "3", "RANK", "2",
                "PYTHONUNBUFFERED", "1"), env);
        Pod master = cluster.pod("demo-master-0");
        assertEquals("0", env(master.getSpec().getContainers().get(0)).get("RANK"), "operator values replace the user's");
        assertEquals("vision", master.getMetadata().getLabels().get("team"));

        PyTorchTrainingJob pending = cluster.awaitJob("demo", j -> j.getStatus() != null && j.getStatus().startTime != null);
        assertEquals(JobPhase.Pending, pending.getStatus().phase);
        cluster.awaitEvent("PodsCreated", "demo-worker-1");

        cluster.runAll();
        PyTorchTrainingJob running = cluster.awaitPhase("demo", JobPhase.Running);
        assertEquals(3, running.getStatus().aggregate.running);
        assertTrue(cluster.condition("demo", "Running").isTrue());
        assertTrue(cluster.condition("demo", "Initialized").isTrue());

        cluster.kubelet.exit("demo-master-0", 0);
        PyTorchTrainingJob done = cluster.awaitPhase("demo", JobPhase.Succeeded);
        assertNotNull(done.getStatus().completionTime);
        assertEquals(1L, done.getStatus().observedGeneration);
        assertEquals("tensorstack.dev/owner-name=demo", done.getStatus().selector);
        assertEquals("Succeeded", cluster.condition("demo", "Completed").reason);
        assertTrue(cluster.condition("demo", "Completed").isTrue());
        assertTrue(!cluster.condition("demo", "Running").isTrue());
        assertTrue(!cluster.condition("demo", "Failed").isTrue());
        assertEquals(0, done.getStatus().tasks.get(0).replicas.get(0).containers.get(0).exitCode);
        cluster.awaitEvent("Succeeded", "master pod demo-master-0 succeeded");
        assertEquals(3, cluster.pods().size(), "cleanUpPolicy None keeps the pods");
    }

    /** The master's training exited 0 while its sidecar runs on: the job succeeded, and the kubelet is told to end the pod. */
    @Test
    void aMastersSuccessBesideARunningSidecarEndsTheJobAndItsPod() {
        OperatorHarness cluster = new OperatorHarness(client, "sidecar");
        String rank = "          env: [{name: RANK, value: \"42\"}]\n";
        assertTrue(DEMO.contains(rank));
        cluster.submit(DEMO.replace(rank, rank + "        - name: sidecar\n          image: envoyproxy/envoy:v1.31.0\n"));
        cluster.awaitPodNames("demo-master-0", "demo-worker-0", "demo-worker-1");
        cluster.runAll();
        cluster.awaitPhase("demo", JobPhase.Running);
        ((StatusWritingKubelet) cluster.kubelet).exitBesideSidecar("demo-master-0", 0);
        PyTorchTrainingJob done = cluster.awaitPhase("demo", JobPhase.Succeeded);
        assertEquals("Succeeded", cluster.condition("demo", "Completed").reason);
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).untilAsserted(() -> {
            Pod master = cluster.pod("demo-master-0");
            assertEquals(1L, master.getSpec().getActiveDeadlineSeconds(), "a deadline already past: its kubelet ends it");
            assertNotNull(master.getMetadata().getAnnotations().get("torchjob.dev/sidecars-stopped"));
        });
        assertEquals(null, cluster.pod("demo-worker-0").getSpec().getActiveDeadlineSeconds(), "a pod whose training runs is left alone");
        assertEquals(3, cluster.pods().size(), "kept (cleanUpPolicy None), logs and all");
        assertEquals(0, done.getStatus().tasks.get(0).replicas.get(0).containers.stream()
                .filter(c -> "pytorch".equals(c.name)).findFirst().orElseThrow().exitCode);
    }

    @Test
    void malformedJobFailsWithInvalidSpecAndOtherJobsAreStillServed() {
        OperatorHarness cluster = new OperatorHarness(client, "invalid");
        cluster.submit("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: two-masters}
                spec:
                  replicaSpecs:
                  - type: master
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """);
        cluster.submit("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: shapeless}
                spec:
                  replicaSpecs:
                  - type: worker
                    template: {spec: {containers: "python"}}
                """);
        cluster.submit("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: fine}
                spec:
                  replicaSpecs:
                  - type: worker
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """);
        // The mock server checks no schema: this one is stored as written, as an older CRD would let it be.
        cluster.submit("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: wordy}
                spec:
                  runPolicy: {backoffLimit: three}
                  replicaSpecs:
                  - type: worker
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """);
        PyTorchTrainingJob failed = cluster.awaitPhase("two-masters", JobPhase.Failed);
        assertNotNull(failed.getStatus().completionTime);
        assertEquals("InvalidSpec", cluster.condition("two-masters", "Failed").reason);
        assertTrue(cluster.condition("two-masters", "Failed").message.contains("spec.replicaSpecs[0].replicas must be 1"));
        cluster.awaitEvent("InvalidSpec", "spec.replicaSpecs[0].replicas");
        cluster.awaitPhase("shapeless", JobPhase.Failed);
        assertTrue(cluster.condition("shapeless", "Failed").message.contains("template is not a valid pod template"));
        cluster.awaitPhase("wordy", JobPhase.Failed);
        assertTrue(cluster.condition("wordy", "Failed").message.startsWith("spec.runPolicy.backoffLimit cannot be read: "),
                cluster.condition("wordy", "Failed").message);
        assertEquals("three", cluster.job("wordy").getSpec().stored().at("/runPolicy/backoffLimit").asText(), "the spec is kept as written");
        cluster.awaitPodNames("fine-worker-0");
    }

    static Map<String, String> env(Container container) {
        return container.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, EnvVar::getValue));
    }
}
