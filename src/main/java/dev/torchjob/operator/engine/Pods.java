package dev.torchjob.operator.engine;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.torchjob.operator.engine.ReplicaPhase;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Pod;

/** How the engine reads an observed pod. */
public final class Pods {
    private Pods() {
    }

    static boolean isTerminating(Pod pod) {
        return pod.getMetadata().getDeletionTimestamp() != null;
    }

    static String phase(Pod pod) {
        return pod.getStatus() == null ? null : pod.getStatus().getPhase();
    }

    static String phaseOrNull(Pod pod) {
        return pod == null ? null : phase(pod);
    }

    /** A pod with no phase yet was just created: Pending. */
    static ReplicaPhase replicaPhase(Pod pod) {
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
