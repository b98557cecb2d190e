package dev.torchjob.operator.engine;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.ResourceHealth;
import io.fabric8.kubernetes.api.model.ResourceStatus;

/**
 * The devices of a pod that its kubelet reports failed. Each container's {@code allocatedResourcesStatus} (Kubernetes'
 * ResourceHealthStatus, on by default since 1.36) names every device a device plugin or DRA driver gave it and its
 * health as the vendor's plugin reports it: NVIDIA's marks a GPU Unhealthy after a fatal Xid error (an uncorrectable
 * ECC error, fallen off the bus). A rank on such a device fails or hangs through no fault of its code. The kubelet
 * writes a pod's health while the pod runs and once more as it ends, never after: a device reported after that is
 * not seen here.
 */
final class FailedDevices {
    static final String UNHEALTHY = "Unhealthy";

    private FailedDevices() {
    }

    /**
     * "nvidia.com/gpu GPU-1" for each Unhealthy device of the pod's containers, with the driver's words when it gave
     * some (a DRA driver may: "claim:gpu/gpu gpu.example.com/node-1/gpu-1 (ECC error count exceeded threshold)");
     * empty when none is (or nothing is said).
     */
    static List<String> of(Pod pod) {
        if (pod.getStatus() == null) {
            return List.of();
        }
        Set<String> failed = new LinkedHashSet<>();
        Stream.concat(statuses(pod.getStatus().getInitContainerStatuses()), statuses(pod.getStatus().getContainerStatuses()))
                .map(ContainerStatus::getAllocatedResourcesStatus).filter(Objects::nonNull).flatMap(List::stream)
                .forEach(resource -> unhealthy(resource).forEach(device -> failed.add(resource.getName() + " " + device)));
        return List.copyOf(failed);
    }

    private static Stream<ContainerStatus> statuses(List<ContainerStatus> statuses) {
        return statuses == null ? Stream.empty() : statuses.stream().filter(Objects::nonNull);
    }

    private static Stream<String> unhealthy(ResourceStatus resource) {
        return resource.getResources() == null ? Stream.empty() : resource.getResources().stream()
                .filter(health -> health != null && UNHEALTHY.equals(health.getHealth())).map(FailedDevices::device);
    }

    /** The device's ID, then the driver's words about it ({@code message}, Kubernetes 1.36+: newer than the model, so read as an extra field). */
    private static String device(ResourceHealth health) {
        Object message = health.getAdditionalProperties() == null ? null : health.getAdditionalProperties().get("message");
        String words = message instanceof String text ? ReplicaEnding.brief(text) : null;
        return words == null ? health.getResourceID() : health.getResourceID() + " (" + words + ")";
    }

    /** "nvidia.com/gpu GPU-1 is Unhealthy, as its kubelet reports" (and the others). */
    static String said(List<String> devices) {
        return String.join(", ", devices) + (devices.size() == 1 ? " is " : " are ") + UNHEALTHY + ", as its kubelet reports";
    }
}
