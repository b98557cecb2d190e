package dev.torchjob.operator.testing;

import dev.torchjob.operator.engine.TrainingContainer;
import io.fabric8.kubernetes.api.model.ContainerStateBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodConditionBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;

/**
 * What the kubelet and the cluster do to a pod, as status the planners read: it runs, its training
 * container exits, the kubelet restarts it in place, it is evicted. For the in-memory planner tests
 * of every job API.
 */
public final class PodFates {
    private PodFates() {
    }

    public static void running(Pod pod) {
        pod.setStatus(new PodStatusBuilder().withPhase("Running").withContainerStatuses(new ContainerStatusBuilder()
                .withName(TrainingContainer.of(pod).getName()).withRestartCount(restarts(pod))
                .withState(new ContainerStateBuilder().withNewRunning().endRunning().build()).build()).build());
    }

    /** Running, and Ready as the kubelet says of a running pod without a readiness probe. */
    public static void ready(Pod pod) {
        running(pod);
        pod.getStatus().setConditions(java.util.List.of(new io.fabric8.kubernetes.api.model.PodConditionBuilder()
                .withType("Ready").withStatus("True").build()));
    }

    /** The training container ends; {@code message} is its termination message (its last log lines, with FallbackToLogsOnError). */
    public static void exited(Pod pod, int exitCode, String message) {
        pod.setStatus(new PodStatusBuilder().withPhase(exitCode == 0 ? "Succeeded" : "Failed")
                .withContainerStatuses(new ContainerStatusBuilder()
                        .withName(TrainingContainer.of(pod).getName()).withRestartCount(restarts(pod))
                        .withState(new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode)
                                .withReason(reason(exitCode)).withMessage(message).endTerminated().build())
                        .build())
                .build());
    }

    /** The training container exited while a sidecar (a mesh's proxy) runs on: the kubelet keeps the pod Running. */
    public static void exitedBesideSidecar(Pod pod, int exitCode) {
        pod.setStatus(new PodStatusBuilder().withPhase("Running")
                .withContainerStatuses(new ContainerStatusBuilder().withName("istio-proxy")
                        .withState(new ContainerStateBuilder().withNewRunning().endRunning().build()).build(),
                        new ContainerStatusBuilder().withName(TrainingContainer.of(pod).getName()).withRestartCount(restarts(pod))
                        .withState(new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode)
                                .withReason(reason(exitCode)).endTerminated().build())
                        .build())
                .build());
    }

    /** The operator stopped the pod's sidecars: annotated, its deadline past; its kubelet ends it (DeadlineExceeded). */
    public static void sidecarsStopped(Pod pod) {
        var annotations = new java.util.HashMap<String, String>(pod.getMetadata().getAnnotations() == null ? java.util.Map.of()
                : pod.getMetadata().getAnnotations());
        annotations.put(dev.torchjob.operator.engine.Pods.SIDECARS_STOPPED, "2026-12-01T00:00:00Z");
        pod.getMetadata().setAnnotations(annotations);
        pod.getSpec().setActiveDeadlineSeconds(1L);
        deadlineExceeded(pod);
    }

    /** Past its activeDeadlineSeconds: the kubelet kills what still runs (exit 137) and the pod is Failed, DeadlineExceeded. */
    public static void deadlineExceeded(Pod pod) {
        pod.getStatus().setPhase("Failed");
        pod.getStatus().setReason("DeadlineExceeded");
        pod.getStatus().setMessage("Pod was active on the node longer than the specified deadline");
        pod.getStatus().getContainerStatuses().stream().filter(c -> c.getState() != null && c.getState().getTerminated() == null)
                .forEach(c -> c.setState(new ContainerStateBuilder().withNewTerminated().withExitCode(137).withReason("Error")
                        .endTerminated().build()));
    }

    /** The training container exited and the kubelet started it again (pod restartPolicy OnFailure or Always): the pod stays Running. */
    public static void restartedInPlace(Pod pod, int exitCode) {
        pod.setStatus(new PodStatusBuilder().withPhase("Running").withContainerStatuses(new ContainerStatusBuilder()
                .withName(TrainingContainer.of(pod).getName()).withRestartCount(restarts(pod) + 1)
                .withState(new ContainerStateBuilder().withNewRunning().endRunning().build())
                .withLastState(new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode).withReason(reason(exitCode))
                        .endTerminated().build())
                .build()).build());
    }

    /** The scheduler finds no node for the pod. */
    public static void unschedulable(Pod pod, String message) {
        notScheduled(pod, "Unschedulable", message);
    }

    /** The scheduler could not place the pod, for {@code reason} (Unschedulable, SchedulerError). */
    public static void notScheduled(Pod pod, String reason, String message) {
        pod.setStatus(new PodStatusBuilder().withPhase("Pending").withConditions(new PodConditionBuilder().withType("PodScheduled")
                .withStatus("False").withReason(reason).withMessage(message).build()).build());
    }

    /** Scheduled at {@code scheduledAt}; the training container waits for the kubelet: ContainerCreating, or another {@code reason}. */
    public static void waiting(Pod pod, java.time.Instant scheduledAt, String reason, String message) {
        pod.setStatus(new PodStatusBuilder().withPhase("Pending")
                .withConditions(new PodConditionBuilder().withType("PodScheduled").withStatus("True")
                        .withLastTransitionTime(scheduledAt.toString()).build())
                .withContainerStatuses(new ContainerStatusBuilder().withName(TrainingContainer.of(pod).getName()).withRestartCount(0)
                        .withState(new ContainerStateBuilder().withNewWaiting().withReason(reason).withMessage(message).endWaiting().build())
                        .build())
                .build());
    }

    /**
     * The device plugin reports the health of a device the training container was given ({@code Healthy},
     * {@code Unhealthy}, {@code Unknown}), and the kubelet writes it in the container's {@code allocatedResourcesStatus};
     * a pod not seen running yet is running.
     */
    public static void deviceHealth(Pod pod, String resource, String device, String health) {
        String training = TrainingContainer.of(pod).getName();
        if (pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null
                || pod.getStatus().getContainerStatuses().stream().noneMatch(s -> training.equals(s.getName()))) {
            running(pod);
        }
        pod.getStatus().getContainerStatuses().stream().filter(s -> training.equals(s.getName())).findFirst().orElseThrow()
                .setAllocatedResourcesStatus(java.util.List.of(new io.fabric8.kubernetes.api.model.ResourceStatusBuilder().withName(resource)
                        .addNewResource().withResourceID(device).withHealth(health).endResource().build()));
    }

    public static void evicted(Pod pod) {
        pod.setStatus(new PodStatusBuilder().withPhase("Failed").withReason("Evicted")
                .withConditions(new PodConditionBuilder().withType("DisruptionTarget").withStatus("True").build()).build());
    }

    private static String reason(int exitCode) {
        return exitCode == 137 ? "OOMKilled" : exitCode == 0 ? "Completed" : "Error";
    }

    private static int restarts(Pod pod) {
        if (pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null) {
            return 0;
        }
        return pod.getStatus().getContainerStatuses().stream().mapToInt(s -> s.getRestartCount() == null ? 0 : s.getRestartCount())
                .max().orElse(0);
    }
}
