package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.local.DownwardApi.Resolved;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVarSource;
import io.fabric8.kubernetes.api.model.EnvVarSourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;

/** A replica's valueFrom on this machine: what the kubelet would give the container, in its units and rounding. */
class DownwardApiTest {
    /** A stand-in machine: 8 CPUs, 32 GiB, 500 GiB of disk. */
    static final DownwardApi.Node WORKSTATION = new DownwardApi.Node("workstation", Map.of("cpu", new Quantity("8"),
            "memory", new Quantity("32Gi"), "ephemeral-storage", new Quantity("500Gi")));

    static final Container TRAINING = new ContainerBuilder().withName("pytorch").withNewResources()
            .withLimits(Map.of("cpu", new Quantity("1500m"), "memory", new Quantity("2Gi")))
            .withRequests(Map.of("memory", new Quantity("1Gi"))).endResources().build();
    static final Pod POD = new PodBuilder().withNewMetadata().withName("j-worker-1").withNamespace("default").withUid("u-1")
            .withLabels(Map.of("training.kubeflow.org/replica-index", "1")).endMetadata()
            .withNewSpec().withContainers(TRAINING, new ContainerBuilder().withName("sidecar").withNewResources()
                    .withLimits(Map.of("cpu", new Quantity("250m"))).endResources().build())
            .endSpec().build();

    static Resolved field(String path) {
        return DownwardApi.of(new EnvVarSourceBuilder().withNewFieldRef().withFieldPath(path).endFieldRef().build(), POD, TRAINING,
                WORKSTATION);
    }

    static Resolved resource(String resource, String divisor) {
        return resource(resource, divisor, null);
    }

    static Resolved resource(String resource, String divisor, String containerName) {
        EnvVarSource source = new EnvVarSourceBuilder().withNewResourceFieldRef().withResource(resource)
                .withDivisor(divisor == null ? null : new Quantity(divisor)).withContainerName(containerName).endResourceFieldRef().build();
        return DownwardApi.of(source, POD, TRAINING, WORKSTATION);
    }

    static String value(Resolved resolved) {
        assertTrue(resolved instanceof Resolved.Value, resolved.toString());
        return ((Resolved.Value) resolved).value();
    }

    @Test
    void thePodsOwnFieldsAreItsAndItsAddressIsThisMachine() {
        assertEquals("j-worker-1", value(field("metadata.name")));
        assertEquals("default", value(field("metadata.namespace")));
        assertEquals("u-1", value(field("metadata.uid")));
        assertEquals("1", value(field("metadata.labels['training.kubeflow.org/replica-index']")));
        assertEquals("", value(field("metadata.annotations['none']")), "a key the pod does not have is empty, as in a cluster");
        assertEquals("workstation", value(field("spec.nodeName")));
        assertEquals("default", value(field("spec.serviceAccountName")), "the API server's default");
        assertEquals("127.0.0.1", value(field("status.podIP")));
        assertEquals("127.0.0.1", value(field("status.hostIP")));
        assertTrue(field("spec.hostname") instanceof Resolved.Unresolved, "not a field Kubernetes gives an env var");
    }

    @Test
    void resourcesAreInTheDivisorsUnitsRoundedUp() {
        assertEquals("2", value(resource("limits.cpu", null)), "1500m is 2 whole CPUs, rounded up");
        assertEquals("1500", value(resource("limits.cpu", "1m")));
        assertEquals("2048", value(resource("limits.memory", "1Mi")));
        assertEquals("2147483648", value(resource("limits.memory", null)));
        assertEquals("1", value(resource("requests.memory", "1Gi")));
    }

    @Test
    void whatTheContainerDoesNotSetIsWhatTheKubeletWouldSay() {
        assertEquals("2", value(resource("requests.cpu", null)), "a request not set is its limit (the API server's defaulting)");
        assertEquals("0", value(resource("requests.ephemeral-storage", null)), "neither set: none");
        assertEquals("500", value(resource("limits.ephemeral-storage", "1Gi")), "a limit not set: what the node can give");
        assertEquals("32", value(resource("limits.memory", "1Gi", "sidecar")), "the sidecar sets no memory limit: the node's");
        assertEquals("250", value(resource("limits.cpu", "1m", "sidecar")), "another container's, by name");
    }

    @Test
    void whatIsNotOnThisMachineOrNotAResourceIsSaidWithWhy() {
        assertEquals(new Resolved.Unresolved("its Secret hub is not on this machine"), DownwardApi.of(new EnvVarSourceBuilder()
                .withNewSecretKeyRef().withName("hub").withKey("token").endSecretKeyRef().build(), POD, TRAINING, WORKSTATION));
        assertEquals(new Resolved.Unresolved("its ConfigMap settings is not on this machine"), DownwardApi.of(new EnvVarSourceBuilder()
                .withNewConfigMapKeyRef().withName("settings").withKey("lr").endConfigMapKeyRef().build(), POD, TRAINING, WORKSTATION));
        assertEquals(new Resolved.Unresolved("the pod has no container launcher"), resource("limits.cpu", null, "launcher"));
        assertTrue(resource("limits.nvidia.com/gpu", null) instanceof Resolved.Unresolved);
        assertTrue(resource("limits.cpu", "0") instanceof Resolved.Unresolved, "a divisor of 0 is no number, never a crash");
    }

    @Test
    void thisMachinesMemoryIsReadAsTheKernelSaysIt() {
        assertEquals(Optional.of(16_318_468L * 1024), DownwardApi.memTotalBytes("MemTotal:       16318468 kB\nMemFree:  1 kB\n"));
        assertEquals(Optional.empty(), DownwardApi.memTotalBytes("nothing"));
        DownwardApi.Node here = DownwardApi.Node.thisMachine();
        assertTrue(!here.name().isEmpty() && here.allocatable().keySet().containsAll(java.util.List.of("cpu", "memory", "ephemeral-storage")),
                here.toString());
    }
}
