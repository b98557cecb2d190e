package dev.torchjob.operator.reconciler;

import dev.torchjob.operator.engine.TrainingContainer;
import java.time.Instant;
import java.util.List;

import io.fabric8.kubernetes.api.model.ContainerStateBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;

/** The mock tier's kubelet: the mock API server runs no pods, so the test writes pod status itself. */
public final class StatusWritingKubelet implements Kubelet {
    private final KubernetesClient client;
    private final String namespace;

    public StatusWritingKubelet(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
    }

    @Override
    public void run(String podName) {
        setStatus(podName, "Running", null, running(podName));
    }

    @Override
    public void exit(String podName, int exitCode) {
        setStatus(podName, exitCode == 0 ? "Succeeded" : "Failed", null, terminated(podName, exitCode, exitCode == 0 ? "Completed" : "Error"));
    }

    @Override
    public void fail(String podName, int exitCode, String message) {
        setStatus(podName, "Failed", null, List.of(new ContainerStatusBuilder().withName(trainingContainer(podName)).withReady(false)
                .withState(new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode).withReason("Error").withMessage(message)
                        .withFinishedAt(Instant.now().toString()).endTerminated().build())
                .build()));
    }

    @Override
    public void oomKill(String podName) {
        setStatus(podName, "Failed", null, terminated(podName, 137, "OOMKilled"));
    }

    @Override
    public void evict(String podName) {
        setStatus(podName, "Failed", "Evicted", List.of());
    }

    /** The training container exited with this code and the kubelet started it again in place: restartCount grows, the pod stays Running. */
    public void restartInPlace(String podName, int exitCode) {
        Pod pod = client.pods().inNamespace(namespace).withName(podName).get();
        int restarts = pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null ? 0
                : pod.getStatus().getContainerStatuses().stream().mapToInt(c -> c.getRestartCount() == null ? 0 : c.getRestartCount()).max().orElse(0);
        setStatus(podName, "Running", null, List.of(new ContainerStatusBuilder().withName(trainingContainer(podName)).withReady(true)
                .withRestartCount(restarts + 1)
                .withState(new ContainerStateBuilder().withNewRunning().withStartedAt(Instant.now().toString()).endRunning().build())
                .withLastState(new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode).withReason("Error")
                        .withFinishedAt(Instant.now().toString()).endTerminated().build())
                .build()));
    }

    /** The training container exited with this code while the pod's other container (a sidecar) runs on: the pod stays Running. */
    public void exitBesideSidecar(String podName, int exitCode) {
        List<ContainerStatus> statuses = new java.util.ArrayList<>(terminated(podName, exitCode, exitCode == 0 ? "Completed" : "Error"));
        statuses.add(new ContainerStatusBuilder().withName("sidecar").withReady(true)
                .withState(new ContainerStateBuilder().withNewRunning().withStartedAt(Instant.now().toString()).endRunning().build()).build());
        setStatus(podName, "Running", null, statuses);
    }

    /** Scheduled at {@code scheduledAt}, its containers still being created (a volume not mounted, an image being pulled). */
    public void creating(String podName, Instant scheduledAt) {
        Pod pod = client.pods().inNamespace(namespace).withName(podName).get();
        pod.setStatus(new PodStatusBuilder().withPhase("Pending")
                .addNewCondition().withType("PodScheduled").withStatus("True").withLastTransitionTime(scheduledAt.toString()).endCondition()
                .withContainerStatuses(new ContainerStatusBuilder().withName(trainingContainer(podName)).withReady(false)
                        .withState(new ContainerStateBuilder().withNewWaiting().withReason("ContainerCreating").endWaiting().build()).build())
                .build());
        client.pods().inNamespace(namespace).resource(pod).updateStatus();
    }

    private List<ContainerStatus> running(String podName) {
        return List.of(new ContainerStatusBuilder().withName(trainingContainer(podName)).withReady(true)
                .withState(new ContainerStateBuilder().withNewRunning().withStartedAt(Instant.now().toString()).endRunning().build())
                .build());
    }

    private List<ContainerStatus> terminated(String podName, int exitCode, String reason) {
        return List.of(new ContainerStatusBuilder().withName(trainingContainer(podName)).withReady(false)
                .withState(new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode).withReason(reason)
                        .withFinishedAt(Instant.now().toString()).endTerminated().build())
                .build());
    }

    private String trainingContainer(String podName) {
        Pod pod = client.pods().inNamespace(namespace).withName(podName).get();
        return dev.torchjob.operator.engine.TrainingContainer.of(pod).getName();
    }

    private void setStatus(String podName, String phase, String reason, List<ContainerStatus> containers) {
        Pod pod = client.pods().inNamespace(namespace).withName(podName).get();
        PodStatus status = new PodStatusBuilder().withPhase(phase).withReason(reason).withContainerStatuses(containers).build();
        pod.setStatus(status);
        client.pods().inNamespace(namespace).resource(pod).updateStatus();
    }
}
