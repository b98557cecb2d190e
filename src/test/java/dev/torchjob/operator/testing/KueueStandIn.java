package dev.torchjob.operator.testing;

import static org.awaitility.Awaitility.await;

import java.net.HttpURLConnection;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinitionBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * Plays Kueue's controllers against any API server (the mock or a real one): ResourceFlavors, and
 * Workload status as Kueue writes it when it admits, evicts, or readmits. The operator under test
 * must do the rest of the protocol itself.
 */
public final class KueueStandIn {
    public static final ResourceDefinitionContext WORKLOADS = api("workloads", "Workload", true);
    public static final ResourceDefinitionContext FLAVORS = api("resourceflavors", "ResourceFlavor", false);
    public static final ResourceDefinitionContext WORKLOAD_PRIORITY_CLASSES = api("workloadpriorityclasses", "WorkloadPriorityClass", false);
    public static final ResourceDefinitionContext LOCAL_QUEUES = api("localqueues", "LocalQueue", true);
    static final Duration WAIT = Duration.ofSeconds(30);

    private final KubernetesClient client;
    private final String namespace;

    public KueueStandIn(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
    }

    static ResourceDefinitionContext api(String plural, String kind, boolean namespaced) {
        return new ResourceDefinitionContext.Builder().withGroup("kueue.x-k8s.io").withVersion("v1beta2").withKind(kind)
                .withPlural(plural).withNamespaced(namespaced).build();
    }

    /** Enough of Kueue's API for a server that checks no schema (the mock): the four kinds, served, with a status subresource. */
    public static void installNamesOnly(KubernetesClient client) {
        for (ResourceDefinitionContext kind : List.of(WORKLOADS, FLAVORS, WORKLOAD_PRIORITY_CLASSES, LOCAL_QUEUES)) {
            String singular = kind.getKind().toLowerCase();
            client.apiextensions().v1().customResourceDefinitions().resource(new CustomResourceDefinitionBuilder()
                    .withNewMetadata().withName(kind.getPlural() + ".kueue.x-k8s.io").endMetadata()
                    .withNewSpec().withGroup("kueue.x-k8s.io").withScope(kind.isNamespaceScoped() ? "Namespaced" : "Cluster")
                    .withNewNames().withKind(kind.getKind()).withPlural(kind.getPlural()).withSingular(singular).endNames()
                    .addNewVersion().withName("v1beta2").withServed(true).withStorage(true).withNewSubresources().withNewStatus()
                    .endStatus().endSubresources().endVersion()
                    .endSpec().build()).createOr(existing -> existing.update());
        }
    }

    public void flavor(String name, Map<String, String> nodeLabels, List<Map<String, Object>> tolerations) {
        GenericKubernetesResource flavor = new GenericKubernetesResource();
        flavor.setApiVersion("kueue.x-k8s.io/v1beta2");
        flavor.setKind("ResourceFlavor");
        flavor.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder().withName(name).build());
        flavor.setAdditionalProperty("spec", Map.of("nodeLabels", nodeLabels, "tolerations", tolerations));
        client.genericKubernetesResources(FLAVORS).resource(flavor).createOr(existing -> existing.update());
    }

    /** A LocalQueue of this namespace feeding the ClusterQueue {@code clusterQueue} (only its name matters to the operator). */
    public void localQueue(String name, String clusterQueue) {
        GenericKubernetesResource queue = new GenericKubernetesResource();
        queue.setApiVersion("kueue.x-k8s.io/v1beta2");
        queue.setKind("LocalQueue");
        queue.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder().withName(name).withNamespace(namespace).build());
        queue.setAdditionalProperty("spec", Map.of("clusterQueue", clusterQueue));
        client.genericKubernetesResources(LOCAL_QUEUES).inNamespace(namespace).resource(queue).createOr(existing -> existing.update());
    }

    public static Map<String, Object> toleration(String key) {
        return Map.of("key", key, "operator", "Exists", "effect", "NoSchedule");
    }

    public List<GenericKubernetesResource> workloads() {
        return client.genericKubernetesResources(WORKLOADS).inNamespace(namespace).list().getItems();
    }

    public GenericKubernetesResource workload(String name) {
        return client.genericKubernetesResources(WORKLOADS).inNamespace(namespace).withName(name).get();
    }

    /** The Workload owned by the job of this name, once it exists. */
    public GenericKubernetesResource awaitWorkloadOf(String jobName) {
        return awaitWorkloadOf(jobName, WAIT);
    }

    public GenericKubernetesResource awaitWorkloadOf(String jobName, Duration wait) {
        await().atMost(wait).pollInterval(Duration.ofMillis(100)).until(() -> workloadOf(jobName) != null);
        return workloadOf(jobName);
    }

    public GenericKubernetesResource workloadOf(String jobName) {
        return workloads().stream().filter(w -> w.getMetadata().getOwnerReferences() != null && w.getMetadata().getOwnerReferences()
                .stream().anyMatch(o -> jobName.equals(o.getName()))).findFirst().orElse(null);
    }

    /**
     * Admits as Kueue does: QuotaReserved and Admitted, an assignment per podSet (its count, and the
     * flavor of its resources), the admission checks' results; a past eviction turns False.
     */
    public void admit(String workload, String clusterQueue, Map<String, Integer> counts, Map<String, String> flavorOfPodSet,
            List<Map<String, Object>> admissionChecks) {
        editStatus(workload, status -> {
            String now = now();
            List<Map<String, Object>> assignments = new ArrayList<>();
            counts.forEach((podSet, count) -> assignments.add(new LinkedHashMap<>(Map.of("name", podSet, "count", count,
                    "flavors", Map.of("cpu", flavorOfPodSet.get(podSet)), "resourceUsage", Map.of("cpu", count + "")))));
            status.put("admission", new LinkedHashMap<>(Map.of("clusterQueue", clusterQueue, "podSetAssignments", assignments)));
            setCondition(status, "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue " + clusterQueue, now);
            setCondition(status, "Admitted", "True", "Admitted", "The workload is admitted", now);
            if (condition(status, "Evicted") != null) {
                setCondition(status, "Evicted", "False", "QuotaReserved", "Previously: evicted", now);
            }
            if (!admissionChecks.isEmpty()) {
                List<Map<String, Object>> checks = new ArrayList<>();
                admissionChecks.forEach(check -> {
                    Map<String, Object> withTime = new LinkedHashMap<>(check);
                    withTime.putIfAbsent("state", "Ready");
                    withTime.putIfAbsent("message", "");
                    withTime.put("lastTransitionTime", now);
                    checks.add(withTime);
                });
                status.put("admissionChecks", checks);
            }
        });
    }

    /** Evicts as Kueue's core does: Evicted=True with the reason; the quota stays held until the job releases it. */
    public void evict(String workload, String reason, String message) {
        editStatus(workload, status -> setCondition(status, "Evicted", "True", reason, message, now()));
    }

    /**
     * Deactivates as Kueue itself does (maximum execution time, requeuing limit): {@code spec.active=false},
     * then Evicted=True with reason {@code DeactivatedDueTo<cause>}.
     */
    public void deactivate(String workload, String cause, String message) {
        UserEdits.edit(client.genericKubernetesResources(WORKLOADS).inNamespace(namespace).withName(workload), w -> {
            w.<Map<String, Object>>get("spec").put("active", false);
            return w;
        });
        evict(workload, "DeactivatedDueTo" + cause, message);
    }

    /** Writes the Workload's status, read fresh, retried when another writer (the operator) came first. */
    @SuppressWarnings("unchecked")
    public void editStatus(String name, Consumer<Map<String, Object>> change) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> {
            GenericKubernetesResource workload = workload(name);
            Map<String, Object> status = workload.getAdditionalProperties().get("status") instanceof Map<?, ?> s
                    ? new LinkedHashMap<>((Map<String, Object>) s) : new LinkedHashMap<>();
            status.put("conditions", new ArrayList<>(status.get("conditions") instanceof List<?> l ? (List<Object>) l : List.of()));
            change.accept(status);
            workload.setAdditionalProperty("status", status);
            try {
                client.genericKubernetesResources(WORKLOADS).inNamespace(namespace).resource(workload).updateStatus();
                return true;
            } catch (KubernetesClientException e) {
                if (e.getCode() == HttpURLConnection.HTTP_CONFLICT) {
                    return false;
                }
                throw e;
            }
        });
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> condition(Map<String, Object> status, String type) {
        Object conditions = status == null ? null : status.get("conditions");
        return conditions instanceof List<?> list ? list.stream().map(c -> (Map<String, Object>) c).filter(c -> type.equals(c.get("type")))
                .findFirst().orElse(null) : null;
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> status(GenericKubernetesResource workload) {
        return workload.getAdditionalProperties().get("status") instanceof Map<?, ?> s ? (Map<String, Object>) s : Map.of();
    }

    @SuppressWarnings("unchecked")
    private static void setCondition(Map<String, Object> status, String type, String value, String reason, String message, String now) {
        List<Object> conditions = (List<Object>) status.get("conditions");
        conditions.removeIf(c -> type.equals(((Map<String, Object>) c).get("type")));
        conditions.add(new LinkedHashMap<>(Map.of("type", type, "status", value, "reason", reason, "message", message,
                "lastTransitionTime", now)));
    }

    private static String now() {
        return Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
    }
}
