package dev.torchjob.operator.engine;

import java.util.List;

import io.fabric8.kubernetes.api.model.Container;

/** Which container of a replica's pod runs the training: the one the env goes to and whose exit code decides restarts. */
public final class TrainingContainer {
    /** T9k names it python or pytorch; Kubeflow requires pytorch. */
    static final List<String> NAMES = List.of("python", "pytorch");

    private TrainingContainer() {
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
