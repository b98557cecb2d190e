package dev.torchjob.operator.kubeflow;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;

/** What an observed PodGroup of any gang scheduler says: its spec, its phase, why it cannot be scheduled. */
final class ObservedPodGroup {
    private ObservedPodGroup() {
    }

    /** "NotEnoughResources: 3/3 tasks in gang unschedulable: ...", from a True Unschedulable condition of the PodGroup. */
    static Optional<String> unschedulable(GenericKubernetesResource podGroup) {
        Object status = podGroup.getAdditionalProperties().get("status");
        Object conditions = status instanceof Map<?, ?> map ? map.get("conditions") : null;
        if (!(conditions instanceof List<?> list)) {
            return Optional.empty();
        }
        return list.stream().filter(Map.class::isInstance).map(c -> (Map<?, ?>) c)
                .filter(c -> "Unschedulable".equals(c.get("type")) && "True".equals(String.valueOf(c.get("status"))))
                .map(c -> (c.get("reason") == null ? "" : c.get("reason") + ": ") + String.valueOf(c.get("message")).strip())
                .reduce((first, second) -> second);
    }

    /** Whether the observed PodGroup's spec has every field of the wanted one's, as wanted. */
    static boolean hasSpec(GenericKubernetesResource observed, GenericKubernetesResource wanted) {
        Map<?, ?> has = spec(observed);
        return spec(wanted).entrySet().stream().allMatch(e -> sameValue(e.getValue(), has.get(e.getKey())));
    }

    private static boolean sameValue(Object wanted, Object has) {
        if (wanted instanceof Number a && has instanceof Number b) {
            return a.longValue() == b.longValue();
        }
        if (wanted instanceof Map<?, ?> a && has instanceof Map<?, ?> b) {
            return a.size() == b.size() && a.entrySet().stream().allMatch(e -> sameValue(e.getValue(), b.get(e.getKey())));
        }
        return Objects.equals(wanted == null ? null : wanted.toString(), has == null ? null : has.toString());
    }

    /** The observed PodGroup's status.phase, empty when it has none yet. */
    static String phase(GenericKubernetesResource podGroup) {
        Object status = podGroup.getAdditionalProperties().get("status");
        Object phase = status instanceof Map<?, ?> map ? map.get("phase") : null;
        return phase == null ? "" : phase.toString();
    }

    /** The observed PodGroup's spec, empty when it has none. */
    static Map<?, ?> spec(GenericKubernetesResource podGroup) {
        Object spec = podGroup.getAdditionalProperties().get("spec");
        return spec instanceof Map<?, ?> map ? map : Map.of();
    }
}
