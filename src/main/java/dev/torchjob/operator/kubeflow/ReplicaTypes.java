package dev.torchjob.operator.kubeflow;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.api.kubeflow.KubeflowReplicaSpec;
import dev.torchjob.operator.api.kubeflow.PyTorchJobSpec;

/**
 * PyTorchJob's two replica types. Kubeflow accepts their keys in any casing and calls them Master
 * and Worker; pods and labels use the lower-case form.
 */
public final class ReplicaTypes {
    public static final String MASTER = "Master";
    public static final String WORKER = "Worker";

    private ReplicaTypes() {
    }

    /** Master or Worker for a key in any casing; empty for any other key. */
    public static Optional<String> canonical(String key) {
        String lower = key == null ? "" : key.toLowerCase(Locale.ROOT);
        return lower.equals("master") ? Optional.of(MASTER) : lower.equals("worker") ? Optional.of(WORKER) : Optional.empty();
    }

    /** The replica specs by canonical type, Master first; keys that are not a type are left out (the validator names them). */
    public static Map<String, KubeflowReplicaSpec> of(PyTorchJobSpec spec) {
        Map<String, KubeflowReplicaSpec> byType = new LinkedHashMap<>();
        for (String type : new String[] {MASTER, WORKER}) {
            spec.pytorchReplicaSpecs.forEach((key, replicaSpec) -> {
                if (canonical(key).filter(type::equals).isPresent()) {
                    byType.putIfAbsent(type, replicaSpec);
                }
            });
        }
        return byType;
    }

    /** The key the user wrote for a type (for messages that name the field). */
    public static String keyOf(PyTorchJobSpec spec, String type) {
        return spec.pytorchReplicaSpecs.keySet().stream().filter(k -> canonical(k).filter(type::equals).isPresent()).findFirst()
                .orElse(type);
    }
}
