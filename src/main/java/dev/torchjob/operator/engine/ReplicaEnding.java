package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;

/**
 * Why a replica's pod stopped: what the restart rules (spec §5) decide on, and what messages
 * and events name (pod, container, exit code; for a pod stopped from outside, or refused by its
 * kubelet, the words of whoever stopped it: {@code podMessage}; the devices its kubelet reports failed).
 */
public record ReplicaEnding(Cause cause, String podName, String container, Integer exitCode, String reason, String podMessage,
        String output, Duration ran, Instant at, List<String> failedDevices) {

    /**
     * The most of a container's termination message (its last log lines, with
     * FallbackToLogsOnError) that messages repeat: the end, where a traceback says what went wrong.
     */
    public static final int MAX_OUTPUT = 1024;
    /**
     * The most of it that is read: all a kubelet keeps (4096 bytes of a termination message file, 2048 of the log). A
     * rank under torchrun says it lost a peer some 2000 characters before its end, above torchrun's own traceback.
     */
    static final int MAX_READ = 4096;
    /** The most of the words a pod was stopped with that a message repeats (a node-pressure eviction's list every container). */
    static final int MAX_POD_MESSAGE = 300;

    /**
     * What a rank prints when a peer of its process group is gone (gloo, NCCL, torch.distributed) or does not
     * answer within the group's timeout (a peer that hangs: gloo's "Timed out waiting 30000ms for recv operation
     * to complete", NCCL's watchdog): its own failure is then a consequence of another's, not a fault of its own.
     */
    private static final List<String> LOST_PEER = List.of("closed by peer", "reset by peer", "Broken pipe", "DistBackendError",
            "DistNetworkError", "ncclRemoteError", "NCCL communicator was aborted", "Watchdog caught collective operation timeout",
            "ms for recv operation to complete", "ms for send operation to complete",
            // torchrun's agent lost the rendezvous another rank's agent hosts, or found it closed by an agent that gave up.
            "RendezvousConnectionError", "RendezvousClosedError");

    public enum Cause {
        /** The pod ended in phase Failed. */
        FAILED,
        /** The pod was evicted, preempted or lost its node. */
        EVICTED,
        /** The pod disappeared while the job was active (deleted by someone else). */
        VANISHED,
        /** A non-master pod Succeeded under restartPolicy Always while the job is active. */
        SUCCEEDED,
        /** The kubelet restarted a container of the pod in place (pod restartPolicy OnFailure or Always). */
        RESTARTED_IN_PLACE,
        /** The pod runs on, but a device it was given failed ({@link FailedDevices}): the operator stops it. */
        DEVICE_FAILED
    }

    public static ReplicaEnding ofFailedPod(Pod pod) {
        Optional<ContainerStateTerminated> terminated = trainingContainerTermination(pod);
        String container = trainingContainerStatus(pod).map(ContainerStatus::getName).orElse(null);
        Integer exitCode = terminated.map(ContainerStateTerminated::getExitCode).orElse(null);
        String reason = terminated.map(ContainerStateTerminated::getReason).orElse(null);
        String output = kept(terminated.map(ContainerStateTerminated::getMessage).orElse(null));
        Duration ran = terminated.map(ReplicaEnding::runTime).orElse(null);
        Instant at = terminated.map(t -> time(t.getFinishedAt())).orElse(null);
        // Once the operator stopped its sidecars, the pod's DeadlineExceeded is the operator's doing, not why the replica ended.
        boolean podSaysWhy = pod.getStatus() != null && !Pods.sidecarsStopped(pod);
        String podReason = podSaysWhy ? pod.getStatus().getReason() : null;
        String podWords = podSaysWhy ? pod.getStatus().getMessage() : null;
        if (isEvicted(pod)) {
            Optional<PodCondition> disruption = disruption(pod);
            // The kubelet's eviction says why on the pod; the Eviction API, a preemption or the taint manager on its condition.
            String said = podReason != null ? podWords : disruption.map(PodCondition::getMessage).orElse(null);
            String evictedFor = podReason != null ? podReason
                    : disruption.map(PodCondition::getReason).filter(r -> !r.isBlank()).orElse("DisruptionTarget");
            return new ReplicaEnding(Cause.EVICTED, pod.getMetadata().getName(), container, exitCode, evictedFor, brief(said), output, ran,
                    at != null ? at : disruption.map(c -> time(c.getLastTransitionTime())).orElse(null), FailedDevices.of(pod));
        }
        // A pod its kubelet refused (OutOfcpu, NodeAffinity) or ended (DeadlineExceeded) has no exit code: its words say why.
        return new ReplicaEnding(Cause.FAILED, pod.getMetadata().getName(), container, exitCode,
                reason != null ? reason : podReason, brief(podWords), output, ran, at, FailedDevices.of(pod));
    }

    /** A pod that runs on while a device it was given has failed: the operator stops it {@code now}. */
    public static ReplicaEnding ofFailedDevice(Pod pod, Instant now) {
        return new ReplicaEnding(Cause.DEVICE_FAILED, pod.getMetadata().getName(), null, null, null, null, null, null,
                now.truncatedTo(ChronoUnit.SECONDS), FailedDevices.of(pod));
    }

    /**
     * A pod being deleted by someone else (kubectl delete pod, an eviction, a drain): it stops from outside,
     * at the moment the deletion was asked for (its deletion timestamp less its grace period).
     */
    public static ReplicaEnding ofDeletedPod(Pod pod) {
        if (isEvicted(pod)) {
            ReplicaEnding evicted = ofFailedPod(pod);
            return new ReplicaEnding(Cause.EVICTED, evicted.podName(), evicted.container(), evicted.exitCode(), evicted.reason(),
                    evicted.podMessage(), evicted.output(), evicted.ran(), evicted.at() != null ? evicted.at() : deletionAskedAt(pod),
                    evicted.failedDevices());
        }
        return new ReplicaEnding(Cause.VANISHED, pod.getMetadata().getName(), null, null, "PodDeleted", null, null, null, deletionAskedAt(pod),
                FailedDevices.of(pod));
    }

    /** The last in-place restart of the pod's containers: how the container that restarted ended (the training one first). */
    public static ReplicaEnding restartedInPlace(Pod pod) {
        List<ContainerStatus> statuses = pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null ? List.of()
                : pod.getStatus().getContainerStatuses();
        String training = pod.getSpec() == null || pod.getSpec().getContainers() == null || pod.getSpec().getContainers().isEmpty()
                ? null : TrainingContainer.of(pod).getName();
        ContainerStatus restarted = statuses.stream()
                .filter(s -> s.getRestartCount() != null && s.getRestartCount() > 0)
                .sorted(java.util.Comparator.comparing((ContainerStatus s) -> !s.getName().equals(training)))
                .findFirst().orElse(null);
        ContainerStateTerminated last = restarted == null || restarted.getLastState() == null ? null : restarted.getLastState().getTerminated();
        return new ReplicaEnding(Cause.RESTARTED_IN_PLACE, pod.getMetadata().getName(), restarted == null ? null : restarted.getName(),
                last == null ? null : last.getExitCode(), last == null ? null : last.getReason(), null,
                last == null ? null : kept(last.getMessage()), last == null ? null : runTime(last),
                last == null ? null : time(last.getFinishedAt()), FailedDevices.of(pod));
    }

    /**
     * A pod removed between two passes, as it was last seen: deleted (by kubectl, an eviction, a drain: said
     * as if a pass had seen it being deleted), failed and then removed, or removed at once (a forced delete,
     * nothing known of it but its name).
     */
    public static ReplicaEnding ofGonePod(Pod last) {
        if (Pods.isTerminating(last) || isEvicted(last)) {
            return ofDeletedPod(last);
        }
        return "Failed".equals(Pods.phase(last)) ? ofFailedPod(last) : vanished(last.getMetadata().getName());
    }

    /** A pod gone before any pass saw it being deleted: when is not known. */
    public static ReplicaEnding vanished(String podName) {
        return new ReplicaEnding(Cause.VANISHED, podName, null, null, "PodDeleted", null, null, null, null, List.of());
    }

    /** A Kubernetes time (whole seconds, as the API serves them); null when absent or unreadable. */
    static Instant time(String value) {
        try {
            return value == null ? null : Instant.parse(value).truncatedTo(ChronoUnit.SECONDS);
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    private static Instant deletionAskedAt(Pod pod) {
        Instant deadline = time(pod.getMetadata().getDeletionTimestamp());
        Long grace = pod.getMetadata().getDeletionGracePeriodSeconds();
        return deadline == null ? null : grace == null ? deadline : deadline.minusSeconds(grace);
    }

    /** The pod's DisruptionTarget=True condition: who stopped it from outside, why and when. */
    private static Optional<PodCondition> disruption(Pod pod) {
        List<PodCondition> conditions = pod.getStatus() == null ? null : pod.getStatus().getConditions();
        return conditions == null ? Optional.empty() : conditions.stream()
                .filter(c -> "DisruptionTarget".equals(c.getType()) && "True".equals(c.getStatus())).findFirst();
    }

    /** The first {@link #MAX_POD_MESSAGE} characters of a pod's message, without its closing full stop; null when there is none. */
    static String brief(String message) {
        if (message == null || message.isBlank()) {
            return null;
        }
        String trimmed = message.strip().replaceAll("\\s+", " ");
        trimmed = trimmed.length() <= MAX_POD_MESSAGE ? trimmed : trimmed.substring(0, MAX_POD_MESSAGE - 3) + "...";
        return trimmed.endsWith(".") && !trimmed.endsWith("...") ? trimmed.substring(0, trimmed.length() - 1) : trimmed;
    }

    /**
     * It stopped from outside the training code: deleted, evicted, killed for memory, by a signal (exit code
     * above 128), or with a device its kubelet reports failed. Of failures in the same second, one of these is
     * taken as the cause.
     */
    boolean fromOutside() {
        Integer code = judgedExitCode();
        return cause == Cause.VANISHED || cause == Cause.EVICTED || "OOMKilled".equals(reason) || (code != null && code > 128)
                || onFailedDevice();
    }

    /**
     * The exit code restart policies judge: the container's, or, for torchrun's (1, whatever ended its workers), what its
     * last output reports ({@link TorchrunReport}): a worker killed by SIGKILL is judged as 137, one that exited with 3 as 3.
     */
    Integer judgedExitCode() {
        if (exitCode != null && exitCode > 128) {
            return exitCode;
        }
        return torchrun().map(TorchrunReport::exitCode).orElse(exitCode);
    }

    /** How torchrun says its first worker or itself ended, when this replica ran torchrun and its output says so. */
    Optional<TorchrunReport> torchrun() {
        return exitCode == null || exitCode > 128 ? Optional.empty() : TorchrunReport.of(output);
    }

    /** A device it was given failed, as its kubelet reports: whatever its code did, the hardware did not hold. */
    boolean onFailedDevice() {
        return !failedDevices.isEmpty();
    }

    /**
     * How the restart metric labels it: the exit code, {@code device-failed} on a failed device, {@code in-place} for a
     * restart in place whose code was not seen, or the cause ({@code evicted}, {@code vanished}, {@code succeeded}).
     */
    String countedAs() {
        if (onFailedDevice()) {
            return "device-failed";
        }
        if (exitCode != null && (cause == Cause.FAILED || cause == Cause.RESTARTED_IN_PLACE)) {
            return judgedExitCode().toString();
        }
        return cause == Cause.RESTARTED_IN_PLACE ? "in-place" : cause.name().toLowerCase();
    }

    /** Its last output says a peer of its process group was gone: a consequence of another rank's failure. */
    boolean showsLostPeer() {
        return output != null && LOST_PEER.stream().anyMatch(output::contains);
    }

    /** How long the container ran, from its start and finish times; null when either is missing. */
    static Duration runTime(ContainerStateTerminated terminated) {
        try {
            return terminated.getStartedAt() == null || terminated.getFinishedAt() == null ? null
                    : Duration.between(Instant.parse(terminated.getStartedAt()), Instant.parse(terminated.getFinishedAt()));
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    /** The last {@link #MAX_READ} characters of a termination message, or null when there is none. */
    static String kept(String message) {
        if (message == null || message.isBlank()) {
            return null;
        }
        String trimmed = message.strip();
        return trimmed.length() <= MAX_READ ? trimmed : trimmed.substring(trimmed.length() - MAX_READ);
    }

    /** The last {@link #MAX_OUTPUT} characters of the output, as messages repeat it. */
    static String tail(String output) {
        return output.length() <= MAX_OUTPUT ? output : "..." + output.substring(output.length() - MAX_OUTPUT + 3);
    }

    public static ReplicaEnding succeeded(Pod pod) {
        Integer exitCode = trainingContainerTermination(pod).map(ContainerStateTerminated::getExitCode).orElse(0);
        String container = trainingContainerStatus(pod).map(ContainerStatus::getName).orElse(null);
        return new ReplicaEnding(Cause.SUCCEEDED, pod.getMetadata().getName(), container, exitCode, "Completed", null, null, null, null,
                List.of());
    }

    /** Evicted by the kubelet, preempted, or its node was lost: the pod did nothing wrong. */
    static boolean isEvicted(Pod pod) {
        if (pod.getStatus() == null) {
            return false;
        }
        String reason = pod.getStatus().getReason();
        if ("Evicted".equals(reason) || "NodeLost".equals(reason) || "Preempting".equals(reason)
                || "Terminated".equals(reason) || "Shutdown".equals(reason) || "NodeShutdown".equals(reason)) {
            return true;
        }
        return disruption(pod).isPresent();
    }

    static Optional<ContainerStatus> trainingContainerStatus(Pod pod) {
        if (pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null
                || pod.getStatus().getContainerStatuses().isEmpty() || pod.getSpec() == null
                || pod.getSpec().getContainers() == null || pod.getSpec().getContainers().isEmpty()) {
            return Optional.empty();
        }
        String training = TrainingContainer.of(pod).getName();
        return pod.getStatus().getContainerStatuses().stream()
                .filter(status -> training.equals(status.getName()))
                .findFirst();
    }

    static Optional<ContainerStateTerminated> trainingContainerTermination(Pod pod) {
        return trainingContainerStatus(pod)
                .map(status -> status.getState() != null && status.getState().getTerminated() != null
                        ? status.getState().getTerminated()
                        : status.getLastState() == null ? null : status.getLastState().getTerminated());
    }

    /** {@link #summary()} followed by the end of the replica's output: the reason outlives the pod. */
    public String describe() {
        Optional<TorchrunReport> torchrun = torchrun(); // read once: a status lists every failed replica's
        return withOutput(summary(torchrun), torchrun);
    }

    /**
     * A sentence about this ending, then the end of the replica's output, if it left any: under torchrun, what its workers
     * printed above torchrun's own traceback and report (which the sentence sums up), their traceback where they raised.
     */
    public String withOutput(String sentence) {
        return withOutput(sentence, torchrun());
    }

    private String withOutput(String sentence, Optional<TorchrunReport> torchrun) {
        if (output == null) {
            return sentence;
        }
        Optional<String> workers = torchrun.map(TorchrunReport::workersOutput).map(String::strip).filter(words -> !words.isEmpty());
        return workers.isPresent() ? sentence + "; last output of torchrun's workers:\n" + tail(workers.get())
                : sentence + "; last output:\n" + tail(output);
    }

    /** The reason, then the words the pod was stopped with: "Evicted: Usage of EmptyDir volume "scratch" exceeds the limit "64Mi"". */
    private String why() {
        return reason == null ? podMessage : podMessage == null ? reason : reason + ": " + podMessage;
    }

    /** " on a failed device (nvidia.com/gpu GPU-1 is Unhealthy, as its kubelet reports)", or nothing. */
    private String onDevices() {
        return onFailedDevice() ? " on a failed device (" + FailedDevices.said(failedDevices) + ")" : "";
    }

    /** "pod demo-worker-1 (container pytorch) exited with code 137 (OOMKilled)" and its variants. */
    public String summary() {
        return summary(torchrun());
    }

    private String summary(Optional<TorchrunReport> torchrun) {
        StringBuilder text = new StringBuilder("pod ").append(podName);
        switch (cause) {
            case VANISHED -> text.append(" was deleted").append(onDevices());
            case EVICTED -> text.append(" was evicted (").append(why()).append(")").append(onDevices());
            case SUCCEEDED -> text.append(" succeeded and restartPolicy is Always");
            case DEVICE_FAILED -> text.append(" runs").append(onDevices());
            case FAILED, RESTARTED_IN_PLACE -> {
                if (container != null) {
                    text.append(" (container ").append(container).append(")");
                }
                if (exitCode != null) {
                    text.append(" exited with code ").append(exitCode);
                } else {
                    text.append(" failed");
                }
                if (reason != null || podMessage != null) {
                    text.append(" (").append(why()).append(")");
                }
                torchrun.ifPresent(report -> text.append(" after ").append(report.said()));
                text.append(onDevices());
                if (cause == Cause.RESTARTED_IN_PLACE) {
                    text.append(" and was restarted in place");
                }
            }
        }
        return text.toString();
    }
}
