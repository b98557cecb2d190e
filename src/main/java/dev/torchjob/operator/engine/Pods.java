package dev.torchjob.operator.engine;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Pod;

/** How the engine reads an observed pod. */
public final class Pods {
    /**
     * Set on a pod whose sidecars the operator stopped, with the time it did; the pod is then ended by its
     * kubelet as past its {@code activeDeadlineSeconds} (reason {@code DeadlineExceeded}).
     */
    public static final String SIDECARS_STOPPED = "torchjob.dev/sidecars-stopped";

    private Pods() {
    }

    static boolean isTerminating(Pod pod) {
        return pod.getMetadata().getDeletionTimestamp() != null;
    }

    /**
     * The replica's phase: the pod's, except that a pod whose training container has ended for good is
     * Succeeded or Failed by that container's exit code. The kubelet ends a pod only once all its containers
     * have ended: a sidecar (a service mesh's proxy, a log shipper) keeps it Running after the training
     * ended, and one ended by a signal turns a training's success into a Failed pod.
     */
    static String phase(Pod pod) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        if ("Running".equals(phase) || "Failed".equals(phase)) {
            Optional<Integer> exit = trainingExit(pod);
            if (exit.isPresent() && ("Failed".equals(phase) || endedForGood(pod, exit.get()))) {
                return exit.get() == 0 ? "Succeeded" : "Failed";
            }
        }
        return phase;
    }

    /**
     * The training container's exit code, while it is terminated (not while the kubelet waits to restart it);
     * empty while it runs or has not started.
     */
    static Optional<Integer> trainingExit(Pod pod) {
        return ReplicaEnding.trainingContainerStatus(pod)
                .map(status -> status.getState() == null ? null : status.getState().getTerminated())
                .map(terminated -> terminated.getExitCode() == null ? 0 : terminated.getExitCode());
    }

    /** The kubelet will not start the training container again: the pod's restartPolicy Never, or OnFailure after a success. */
    private static boolean endedForGood(Pod pod, int exitCode) {
        String policy = pod.getSpec() == null || pod.getSpec().getRestartPolicy() == null ? "Always" : pod.getSpec().getRestartPolicy();
        return "Never".equals(policy) || "OnFailure".equals(policy) && exitCode == 0;
    }

    /**
     * A pod the training no longer needs that still runs: its training container ended for good, another of its
     * containers did not (a sidecar), and the operator has not stopped it yet ({@link #SIDECARS_STOPPED}). Kubernetes'
     * own sidecars (init containers that restart) are not counted: their kubelet ends them itself, a second later.
     */
    static boolean runsOnlySidecars(Pod pod) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        if (!"Running".equals(phase) || isTerminating(pod) || sidecarsStopped(pod)) {
            return false;
        }
        Optional<Integer> exit = trainingExit(pod);
        return exit.isPresent() && endedForGood(pod, exit.get()) && pod.getStatus().getContainerStatuses().stream()
                .anyMatch(status -> status.getState() == null || status.getState().getTerminated() == null);
    }

    /** The operator stopped the pod's sidecars: what the pod says of its end since is the operator's doing, not the kubelet's. */
    static boolean sidecarsStopped(Pod pod) {
        var annotations = pod.getMetadata().getAnnotations();
        return annotations != null && annotations.containsKey(SIDECARS_STOPPED);
    }

    static String phaseOrNull(Pod pod) {
        return pod == null ? null : phase(pod);
    }

    /** A pod with no phase yet was just created: Pending. Its training container decides, as {@link #phase(Pod)} says. */
    public static ReplicaPhase replicaPhase(Pod pod) {
        String phase = phase(pod);
        if (phase == null || phase.isEmpty()) {
            return ReplicaPhase.Pending;
        }
        return switch (phase) {
            case "Pending" -> ReplicaPhase.Pending;
            case "Running" -> ReplicaPhase.Running;
            case "Succeeded" -> ReplicaPhase.Succeeded;
            case "Failed" -> ReplicaPhase.Failed;
            default -> ReplicaPhase.Unknown;
        };
    }

    /** Restarts the kubelet made of the pod's containers in place, init containers included (as Kubeflow counts them). */
    static int containerRestarts(Pod pod) {
        if (pod.getStatus() == null) {
            return 0;
        }
        int restarts = 0;
        for (var list : java.util.Arrays.asList(pod.getStatus().getInitContainerStatuses(), pod.getStatus().getContainerStatuses())) {
            if (list != null) {
                restarts += list.stream().mapToInt(s -> s.getRestartCount() == null ? 0 : s.getRestartCount()).sum();
            }
        }
        return restarts;
    }

    /** Only pods this job controls, by name: a pod left by an older job of the same name is not ours. */
    public static Map<String, Pod> ownedBy(String jobUid, Collection<Pod> observed) {
        Map<String, Pod> owned = new LinkedHashMap<>();
        for (Pod pod : observed) {
            List<OwnerReference> owners = pod.getMetadata().getOwnerReferences();
            boolean ours = owners != null && owners.stream()
                    .anyMatch(o -> Boolean.TRUE.equals(o.getController()) && Objects.equals(o.getUid(), jobUid));
            if (ours) {
                owned.put(pod.getMetadata().getName(), pod);
            }
        }
        return owned;
    }
}
