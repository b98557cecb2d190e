package dev.torchjob.operator.reconciler;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobPhase;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

@QuarkusTest
@WithKubernetesTestServer(crud = true)
class SuccessPathTest {
    @Inject
    KubernetesClient client;

    @Test
    void masterAndWorkersRunToSuccess() {
        String ns = "success";
        PyTorchTrainingJob job = client.getKubernetesSerialization().unmarshal("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata:
                  name: demo
                spec:
                  replicaSpecs:
                  - type: master
                    template:
                      spec:
                        containers:
                        - name: pytorch
                          image: pytorch/pytorch:2.0.0
                          command: [python, train.py]
                  - type: worker
                    replicas: 2
                    template:
                      spec:
                        containers:
                        - name: pytorch
                          image: pytorch/pytorch:2.0.0
                          command: [python, train.py]
                """, PyTorchTrainingJob.class);
        client.resources(PyTorchTrainingJob.class).inNamespace(ns).resource(job).create();
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertEquals(3, client.pods().inNamespace(ns).list().getItems().size()));
        Kubelet kubelet = new Kubelet(client, ns);
        for (String pod : List.of("demo-master-0", "demo-worker-0", "demo-worker-1")) {
            kubelet.run(pod);
        }
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertEquals(JobPhase.Running,
                client.resources(PyTorchTrainingJob.class).inNamespace(ns).withName("demo").get().getStatus().phase));
        kubelet.exit("demo-master-0", 0);
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertEquals(JobPhase.Succeeded,
                client.resources(PyTorchTrainingJob.class).inNamespace(ns).withName("demo").get().getStatus().phase));
        PyTorchTrainingJob done = client.resources(PyTorchTrainingJob.class).inNamespace(ns).withName("demo").get();
        assertNotNull(done.getStatus().completionTime);
        assertTrue(client.services().inNamespace(ns).withName("demo").get() != null);
    }
}
