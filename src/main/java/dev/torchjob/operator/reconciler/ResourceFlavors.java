package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.torchjob.operator.kueue.KueueAdmission;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * Kueue's ResourceFlavors, as a Workload's admission names them: the node labels and tolerations
 * its pods get. A flavor is read at most every 30 seconds, so admitting many jobs costs no list.
 */
final class ResourceFlavors {
    static final ResourceDefinitionContext API = KueueWorkloads.api("resourceflavors", "ResourceFlavor", false);
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final KubernetesSerialization JSON = new KubernetesSerialization();

    private final KubernetesClient client;
    private final Clock clock;
    private final Map<String, Cached> cache = new ConcurrentHashMap<>();

    private record Cached(KueueAdmission.Flavor flavor, Instant readAt) {
    }

    ResourceFlavors(KubernetesClient client, Clock clock) {
        this.client = client;
        this.clock = clock;
    }

    /** The flavors the Workload's admission names that exist; one that does not is left out (KueueAdmission says so). */
    Map<String, KueueAdmission.Flavor> namedIn(GenericKubernetesResource workload) {
        Map<String, KueueAdmission.Flavor> named = new LinkedHashMap<>();
        Object status = workload.getAdditionalProperties().get("status");
        Object admission = status instanceof Map<?, ?> s ? s.get("admission") : null;
        Object assignments = admission instanceof Map<?, ?> a ? a.get("podSetAssignments") : null;
        if (!(assignments instanceof List<?> list)) {
            return named;
        }
        Instant now = clock.instant();
        for (Object assignment : list) {
            Object flavorsOfSet = assignment instanceof Map<?, ?> m ? m.get("flavors") : null;
            if (!(flavorsOfSet instanceof Map<?, ?> byResource)) {
                continue;
            }
            for (Object flavorName : byResource.values()) {
                String name = String.valueOf(flavorName);
                Cached cached = cache.get(name);
                if (cached == null || cached.readAt().plus(TTL).isBefore(now)) {
                    GenericKubernetesResource flavor = ApplyFailure.reading("FailedAdmission", "ResourceFlavor " + name,
                            () -> client.genericKubernetesResources(API).withName(name).get());
                    if (flavor == null) {
                        cache.remove(name);
                        continue;
                    }
                    cached = new Cached(flavorOf(flavor), now);
                    cache.put(name, cached);
                }
                named.put(name, cached.flavor());
            }
        }
        return named;
    }

    private static KueueAdmission.Flavor flavorOf(GenericKubernetesResource flavor) {
        Map<?, ?> spec = flavor.getAdditionalProperties().get("spec") instanceof Map<?, ?> m ? m : Map.of();
        Map<String, String> nodeLabels = new LinkedHashMap<>();
        if (spec.get("nodeLabels") instanceof Map<?, ?> labels) {
            labels.forEach((k, v) -> nodeLabels.put(String.valueOf(k), String.valueOf(v)));
        }
        List<Toleration> tolerations = spec.get("tolerations") instanceof List<?> t
                ? t.stream().map(o -> JSON.convertValue(o, Toleration.class)).toList() : List.of();
        return new KueueAdmission.Flavor(nodeLabels, tolerations);
    }
}
