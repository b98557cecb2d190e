package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ManagedFieldsEntryBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.client.utils.Serialization;

/** What a job pass reads of its pods survives the cache; the rest of a pod does not take memory. */
class LeanCacheTest {

    private static Pod runningPod() {
        return new PodBuilder().withNewMetadata().withName("j-worker-0").withNamespace("ns").withResourceVersion("7")
                .addToLabels("training.kubeflow.org/replica-type", "worker")
                .addToAnnotations("kubectl.kubernetes.io/default-container", "pytorch")
                .withManagedFields(new ManagedFieldsEntryBuilder().withManager("kubelet").withOperation("Update").build())
                .endMetadata()
                .withNewSpec().withNodeName("kwok-node-3").withRestartPolicy("Never").withHostname("j-worker-0").withSubdomain("j")
                .addNewContainer().withName("sidecar").withImage("busybox").endContainer()
                .addNewContainer().withName("pytorch").withImage("pytorch/pytorch").withCommand("python", "train.py")
                .addNewEnv().withName("RANK").withValue("1").endEnv().endContainer()
                .addNewVolume().withName("kube-api-access").withNewProjected().endProjected().endVolume()
                .addNewToleration().withKey("node.kubernetes.io/not-ready").withOperator("Exists").endToleration()
                .endSpec()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("pytorch").withRestartCount(2).endContainerStatus()
                .endStatus().build();
    }

    @Test
    void aPodKeepsItsMetadataStatusContainerNamesAndNode() {
        Pod full = runningPod();
        Pod expectedStatus = Serialization.clone(full);
        LeanCache<Pod> cache = new LeanCache<>();
        cache.put("ns/j-worker-0", full);
        Pod cached = cache.get("ns/j-worker-0");

        assertEquals(List.of("sidecar", "pytorch"), cached.getSpec().getContainers().stream().map(Container::getName).toList());
        assertEquals("kwok-node-3", cached.getSpec().getNodeName());
        assertEquals(expectedStatus.getStatus(), cached.getStatus());
        assertEquals(expectedStatus.getMetadata().getLabels(), cached.getMetadata().getLabels());
        assertEquals("pytorch", cached.getMetadata().getAnnotations().get("kubectl.kubernetes.io/default-container"));
        assertEquals("7", cached.getMetadata().getResourceVersion());
        assertNull(cached.getMetadata().getManagedFields());
        assertEquals(List.of(), cached.getSpec().getContainers().get(1).getEnv(), "no env");
        assertEquals(List.of(), cached.getSpec().getVolumes());
        assertEquals(List.of(), cached.getSpec().getTolerations());
        assertEquals("Never", cached.getSpec().getRestartPolicy(), "whether the kubelet starts an ended training again");
    }

    @Test
    void aPendingPodKeepsTheSchedulingGatesThatHoldItBack() {
        Pod gated = runningPod();
        gated.getSpec().setNodeName(null);
        gated.getSpec().setSchedulingGates(List.of(new io.fabric8.kubernetes.api.model.PodSchedulingGate("kueue.x-k8s.io/topology")));
        LeanCache<Pod> cache = new LeanCache<>();
        cache.put("ns/j-worker-0", gated);
        assertEquals(List.of("kueue.x-k8s.io/topology"), cache.get("ns/j-worker-0").getSpec().getSchedulingGates().stream()
                .map(io.fabric8.kubernetes.api.model.PodSchedulingGate::getName).toList());
    }

    @Test
    void theTrainingContainerIsStillFoundInACachedPod() {
        LeanCache<Pod> cache = new LeanCache<>();
        cache.put("ns/j-worker-0", runningPod());
        assertEquals("pytorch", dev.torchjob.operator.engine.TrainingContainer.of(cache.get("ns/j-worker-0")).getName());
    }

    @Test
    void aServiceLosesOnlyItsManagedFields() {
        var service = new ServiceBuilder().withNewMetadata().withName("j").withNamespace("ns")
                .withManagedFields(new ManagedFieldsEntryBuilder().withManager("torchjob-operator").build()).endMetadata()
                .withNewSpec().withClusterIP("None").addToSelector("job", "j").endSpec().build();
        var expected = Serialization.clone(service);
        LeanCache<io.fabric8.kubernetes.api.model.Service> cache = new LeanCache<>();
        cache.put("ns/j", service);
        assertEquals(expected.getSpec(), cache.get("ns/j").getSpec());
        assertNull(cache.get("ns/j").getMetadata().getManagedFields());
    }
}
