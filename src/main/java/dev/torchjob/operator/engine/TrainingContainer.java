package dev.torchjob.operator.engine;

import java.util.List;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;

/** Which container of a replica's pod runs the training: the one the env goes to and whose exit code decides restarts. */
public final class TrainingContainer {
    /** T9k names it python or pytorch; Kubeflow requires pytorch. */
    static final List<String> NAMES = List.of("python", "pytorch");
    /** Set by an adapter that names the training container itself; kubectl logs and exec then pick it too. */
    public static final String ANNOTATION = "kubectl.kubernetes.io/default-container";

    private TrainingContainer() {
    }

    /** The container the pod's annotation names, else as {@link #of(List)}. */
    public static Container of(Pod pod) {
        var annotations = pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations();
        String named = annotations == null ? null : annotations.get(ANNOTATION);
        if (named != null) {
            for (Container container : pod.getSpec().getContainers()) {
                if (named.equals(container.getName())) {
                    return container;
                }
            }
        }
        return of(pod.getSpec().getContainers());
    }

    /** The container named python, else pytorch, else the first. */
    public static Container of(List<Container> containers) {
        for (String name : NAMES) {
            for (Container container : containers) {
                if (name.equals(container.getName())) {
                    return container;
                }
            }
        }
        return containers.get(0);
    }
}
