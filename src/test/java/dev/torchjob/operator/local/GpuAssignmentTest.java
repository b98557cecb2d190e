package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.local.MachineGpus.Gpu;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;

/** Each replica gets the NVIDIA GPUs its limits ask for, distinct ones, as the device plugin gives them to pods. */
class GpuAssignmentTest {
    static final MachineGpus TWO = MachineGpusTest.two();
    static final MachineGpus ONE = new MachineGpus(TWO.gpus().subList(0, 1), "nvidia-smi -L");
    static final MachineGpus NONE = new MachineGpus(List.of(), "no nvidia-smi on PATH and no /proc/driver/nvidia/gpus");

    /** A replica's pod whose training container has these limits and requests (null: none). */
    static Pod pod(String name, Map<String, String> limits, Map<String, String> requests) {
        return new PodBuilder().withNewMetadata().withName(name).withUid("uid-" + name).endMetadata().withNewSpec().addNewContainer()
                .withName("pytorch").withNewResources().withLimits(quantities(limits)).withRequests(quantities(requests)).endResources()
                .endContainer().endSpec().build();
    }

    static Pod asking(String name, int gpus) {
        return pod(name, gpus == 0 ? null : Map.of(GpuAssignment.NVIDIA_GPU, Integer.toString(gpus)), null);
    }

    static Map<String, Quantity> quantities(Map<String, String> amounts) {
        if (amounts == null) {
            return null;
        }
        Map<String, Quantity> quantities = new java.util.LinkedHashMap<>();
        amounts.forEach((name, amount) -> quantities.put(name, new Quantity(amount)));
        return quantities;
    }

    static List<Integer> indices(Optional<List<Gpu>> gpus) {
        return gpus.orElseThrow().stream().map(Gpu::index).toList();
    }

    @Test
    void eachReplicaGetsDistinctGpusAndOneAskingNoneSeesNone() {
        GpuAssignment assignment = new GpuAssignment(TWO, false);
        List<Gpu> master = assignment.take("j-master-0", "m1", 1).orElseThrow();
        List<Gpu> worker = assignment.take("j-worker-0", "w1", 1).orElseThrow();
        assertEquals(List.of(0), master.stream().map(Gpu::index).toList());
        assertEquals(List.of(1), worker.stream().map(Gpu::index).toList(), "never the same GPU twice: NCCL refuses it");
        assertEquals(Map.of("CUDA_VISIBLE_DEVICES", TWO.gpus().get(1).uuid(), "NVIDIA_VISIBLE_DEVICES", TWO.gpus().get(1).uuid()),
                assignment.environment(worker, null));
        assertEquals(Map.of("CUDA_VISIBLE_DEVICES", "", "NVIDIA_VISIBLE_DEVICES", "void"),
                assignment.environment(assignment.take("j-launcher-0", "l1", 0).orElseThrow(), null), "asks for none: sees none");
        assertEquals(Map.of(), new GpuAssignment(NONE, false).environment(List.of(), null), "no NVIDIA GPU here: nothing to hide");
    }

    @Test
    void aPodKeepsItsGpusUntilItEndsAndTheReplicasNextPodGetsTheSameOnes() {
        GpuAssignment assignment = new GpuAssignment(TWO, false);
        assignment.take("j-master-0", "m1", 1);
        assertEquals(List.of(1), indices(assignment.take("j-worker-0", "w1", 1)));
        assertEquals(List.of(1), indices(assignment.take("j-worker-0", "w1", 1)), "restarted in place: the same pod, the same GPUs");
        assertTrue(assignment.take("j-worker-0", "w2", 1).isEmpty(), "the next pod waits while the old one still holds them");
        assignment.release("m1");
        assignment.release("w1");
        assertEquals(List.of(1), indices(assignment.take("j-worker-0", "w2", 1)), "the GPU its last pod had, though GPU 0 is free too");
        assertEquals(List.of(0), indices(assignment.take("j-master-0", "m2", 1)));
    }

    @Test
    void sharedReplicasGetTheLeastSharedGpus() {
        GpuAssignment assignment = new GpuAssignment(ONE, true);
        assertEquals(List.of(0), indices(assignment.take("j-master-0", "m1", 1)));
        assertEquals(List.of(0), indices(assignment.take("j-worker-0", "w1", 1)), "shared: both on GPU 0");
        GpuAssignment two = new GpuAssignment(TWO, true);
        two.take("j-master-0", "m1", 1);
        assertEquals(List.of(1), indices(two.take("j-worker-0", "w1", 1)), "while a free one remains, it is taken first");
        assertEquals(List.of(0), indices(two.take("j-worker-1", "w2", 1)));
    }

    @Test
    void aJobAskingForMoreGpusThanTheMachineHasIsRefusedInOneLineNamingEachReplica() {
        List<Pod> pods = List.of(asking("j-master-0", 1), asking("j-worker-0", 1));
        assertEquals(Optional.empty(), GpuAssignment.refusal(TWO, pods, false));
        assertEquals(Optional.of("the job asks for 2 GPUs (nvidia.com/gpu: j-master-0 1, j-worker-0 1) and this machine has 1 GPU: "
                + "GPU 0 (NVIDIA H100 80GB HBM3); --share-gpus lets replicas share them for a small test"), GpuAssignment.refusal(ONE, pods, false));
        assertEquals(Optional.empty(), GpuAssignment.refusal(ONE, pods, true), "shared: both run on GPU 0");
        assertEquals(Optional.of("the job asks for 2 GPUs (nvidia.com/gpu: j-master-0 1, j-worker-0 1) and this machine has no GPU "
                + "(no nvidia-smi on PATH and no /proc/driver/nvidia/gpus)"), GpuAssignment.refusal(NONE, pods, true));
        assertEquals(Optional.of("j-master-0 asks for 2 GPUs (nvidia.com/gpu) and this machine has 1 GPU: GPU 0 (NVIDIA H100 80GB HBM3); "
                + "no replica can have more GPUs than there are, shared or not"),
                GpuAssignment.refusal(ONE, List.of(asking("j-master-0", 2)), true));
        assertEquals(Optional.empty(), GpuAssignment.refusal(NONE, List.of(asking("j-master-0", 0)), false), "a CPU job runs anywhere");
    }

    @Test
    void aGpuCountKubernetesWouldRefuseIsRefusedNamingThePodAndTheField() {
        assertEquals(Optional.of("pod j-master-0 (container pytorch): resources.requests[nvidia.com/gpu] without limits: Kubernetes takes "
                + "extended resources from limits (set resources.limits[nvidia.com/gpu])"),
                GpuAssignment.refusal(TWO, List.of(pod("j-master-0", null, Map.of("nvidia.com/gpu", "1"))), false));
        assertEquals(Optional.of("pod j-master-0 (container pytorch): resources.limits[nvidia.com/gpu] 500m is not a whole number of GPUs"),
                GpuAssignment.refusal(TWO, List.of(pod("j-master-0", Map.of("nvidia.com/gpu", "500m"), null)), false));
        assertEquals(Optional.of("pod j-master-0 (container pytorch): resources.requests[nvidia.com/gpu] 2 differs from its limits 1: "
                + "Kubernetes requires them equal for extended resources"),
                GpuAssignment.refusal(TWO, List.of(pod("j-master-0", Map.of("nvidia.com/gpu", "1"), Map.of("nvidia.com/gpu", "2"))), false));
        assertEquals(Optional.empty(), GpuAssignment.refusal(TWO,
                List.of(pod("j-master-0", Map.of("nvidia.com/gpu", "1"), Map.of("nvidia.com/gpu", "1"))), false));
    }

    @Test
    void aCudaVisibleDevicesTheContainerSetsCountsWithinItsOwnGpus() {
        GpuAssignment assignment = new GpuAssignment(TWO, false);
        List<Gpu> both = assignment.take("j-master-0", "m1", 2).orElseThrow();
        assertEquals(TWO.gpus().get(1).uuid(), assignment.environment(both, "1").get("CUDA_VISIBLE_DEVICES"),
                "its second GPU, as cuda:1 would be in its pod");
        assertEquals(TWO.gpus().get(0).uuid(), assignment.environment(both, "0,5").get("CUDA_VISIBLE_DEVICES"), "up to one it does not have");
    }

    @Test
    void otherExtendedResourcesAreSaidNotGiven() {
        List<String> lines = GpuAssignment.notGiven(List.of(pod("j-master-0", Map.of("amd.com/gpu", "1", "cpu", "2"), null)));
        assertEquals(List.of("j-master-0 asks for amd.com/gpu, which the local mode does not give: its process sees what this machine has"
                + " (only nvidia.com/gpu in limits is assigned, as NVIDIA's device plugin would)"), lines);
        assertTrue(GpuAssignment.notGiven(List.of(asking("j-master-0", 1))).isEmpty());
    }

    @Test
    void devicesClaimedThroughDynamicResourceAllocationAreSaidNotGiven() {
        Pod claiming = asking("j-worker-0", 0);
        claiming.getSpec().setResourceClaims(List.of(new io.fabric8.kubernetes.api.model.PodResourceClaimBuilder().withName("gpu")
                .withResourceClaimTemplateName("one-gpu").build()));
        assertEquals(List.of("j-worker-0 claims devices through resourceClaims (gpu), which the local mode does not allocate: its process"
                + " sees what this machine has (only nvidia.com/gpu in limits is assigned, as NVIDIA's device plugin would)"),
                GpuAssignment.notGiven(List.of(claiming)));
    }
}
