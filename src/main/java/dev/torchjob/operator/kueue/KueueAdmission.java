package dev.torchjob.operator.kueue;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.status.StatusTime;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSchedulingGate;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * Where a job's Workload stands with Kueue, read from its status, and what an admission asks of
 * the pods: per podSet, the node labels and tolerations of the flavors it was admitted to, the
 * admitted count, and every admission check's podSetUpdates.
 */
public final class KueueAdmission {
    public static final String POD_SET_LABEL = "kueue.x-k8s.io/podset";
    public static final String LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/local-queue-name";
    public static final String CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name";
    /** Topology-aware scheduling: Kueue's ungater finds a gated pod by its Workload and places it in its domain. */
    public static final String WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload";
    public static final String TOPOLOGY_GATE = "kueue.x-k8s.io/topology";
    private static final KubernetesSerialization JSON = new KubernetesSerialization();

    private KueueAdmission() {
    }

    /** The Workload's state, as the job's engine needs it. */
    public sealed interface State {
    }

    /** Waiting for quota in its queue. */
    public record Queued(String queue, String message) implements State {
    }

    /** Admitted: what each podSet's pods get. */
    public record Admitted(String clusterQueue, Map<String, PodSetInfo> podSets) implements State {
    }

    /**
     * Evicted (preempted, PodsReadyTimeout, deactivated, ...) with its quota still held, or the Workload is
     * being deleted: the pods must go (not a failure), then the reservation is released.
     */
    public record Evicted(String queue, String reason, String message) implements State {
    }

    /** Admitted, but the admission cannot be applied (two sources set one key differently): the Workload fails FailedToStart. */
    public record Unusable(String message) implements State {
    }

    /** A ResourceFlavor's node labels and tolerations. */
    public record Flavor(Map<String, String> nodeLabels, List<Toleration> tolerations) {
    }

    /**
     * What the pods of one podSet get on admission; {@code schedulingGates}: Kueue's topology gate when
     * the admission places the podSet in a topology, which Kueue lifts pod by pod with each one's domain.
     */
    public record PodSetInfo(String name, int count, Map<String, String> nodeSelector, List<Toleration> tolerations,
            Map<String, String> labels, Map<String, String> annotations, List<String> schedulingGates) {

        /** Adds this admission to a pod about to be created; a key the pod sets differently is a conflict. */
        public Pod applyTo(Pod pod) {
            Pod admitted = JSON.clone(pod);
            admitted.getSpec().setNodeSelector(merged("nodeSelector", admitted.getSpec().getNodeSelector(), nodeSelector));
            admitted.getMetadata().setLabels(merged("label", admitted.getMetadata().getLabels(), labels));
            admitted.getMetadata().setAnnotations(merged("annotation", admitted.getMetadata().getAnnotations(), annotations));
            Set<Toleration> all = new LinkedHashSet<>(admitted.getSpec().getTolerations() == null ? List.of() : admitted.getSpec().getTolerations());
            all.addAll(tolerations);
            admitted.getSpec().setTolerations(all.isEmpty() ? null : new ArrayList<>(all));
            List<PodSchedulingGate> gates = new ArrayList<>(admitted.getSpec().getSchedulingGates() == null ? List.of()
                    : admitted.getSpec().getSchedulingGates());
            schedulingGates.stream().filter(gate -> gates.stream().noneMatch(g -> gate.equals(g.getName())))
                    .forEach(gate -> gates.add(new PodSchedulingGate(gate)));
            admitted.getSpec().setSchedulingGates(gates.isEmpty() ? null : gates);
            return admitted;
        }
    }

    /** Reason of the eviction of a Workload that is being deleted. */
    public static final String WORKLOAD_DELETED = "WorkloadDeleted";

    /** The admission names a ResourceFlavor that cannot be read: not the job's fault, so retried, as Kueue does. */
    public static final class MissingFlavor extends RuntimeException {
        MissingFlavor(String message) {
            super(message);
        }
    }

    /**
     * The state in the engine's terms. An admission is tried on the first pod of each podSet (the
     * podSets the job asks with): one that contradicts the pod is refused, as Kueue's FailedToStart.
     */
    public static QueueAdmission toQueue(State state, List<KueueWorkload.PodSet> podSets) {
        if (state instanceof Queued queued) {
            return new QueueAdmission.Waiting(queued.queue(), queued.message());
        }
        if (state instanceof Evicted evicted) {
            return new QueueAdmission.Evicted(evicted.queue(), evicted.reason(), evicted.message());
        }
        if (state instanceof Unusable unusable) {
            return new QueueAdmission.Refused(unusable.message());
        }
        Admitted admitted = (Admitted) state;
        Map<String, Integer> replicas = new LinkedHashMap<>();
        try {
            for (KueueWorkload.PodSet podSet : podSets) {
                PodSetInfo info = admitted.podSets().get(podSet.name());
                if (info == null) {
                    return new QueueAdmission.Refused("the admission has no assignment for podSet " + podSet.name());
                }
                Pod pod = new Pod();
                pod.setMetadata(podSet.template().getMetadata());
                pod.setSpec(podSet.template().getSpec());
                info.applyTo(pod);
                replicas.put(podSet.name(), info.count());
            }
        } catch (Conflict e) {
            return new QueueAdmission.Refused("podSet " + e.getMessage());
        }
        return new QueueAdmission.Admitted(admitted.clusterQueue(), Map.copyOf(replicas), (type, pod) -> {
            PodSetInfo info = admitted.podSets().get(type.toLowerCase(Locale.ROOT));
            return info == null ? pod : info.applyTo(pod);
        });
    }

    /** Thrown when an admission cannot be applied: Kueue expects the Workload to finish with FailedToStart. */
    public static final class Conflict extends RuntimeException {
        Conflict(String message) {
            super(message);
        }
    }

    static Map<String, String> merged(String what, Map<String, String> base, Map<String, String> added) {
        Map<String, String> result = new LinkedHashMap<>(base == null ? Map.of() : base);
        added.forEach((key, value) -> {
            String before = result.putIfAbsent(key, value);
            if (before != null && !before.equals(value)) {
                throw new Conflict(what + " " + key + " is " + before + " and the admission asks for " + value);
            }
        });
        return result.isEmpty() ? null : result;
    }

    /** The LocalQueue the Workload is in. */
    public static String queueOf(GenericKubernetesResource workload) {
        return String.valueOf(map(workload.getAdditionalProperties().get("spec")).get("queueName"));
    }

    /** Whether Kueue holds quota for the Workload (admitted, waiting for its admission checks, or evicted and not yet released). */
    public static boolean quotaReserved(GenericKubernetesResource workload) {
        return condition(list(map(workload.getAdditionalProperties().get("status")).get("conditions")), "QuotaReserved").isPresent();
    }

    /** Whether the Workload is finished (its job ended). */
    public static boolean finished(GenericKubernetesResource workload) {
        return condition(list(map(workload.getAdditionalProperties().get("status")).get("conditions")), "Finished").isPresent();
    }

    /** Since when the Workload's job has waited: the Workload's creation, or its last requeue after an eviction. */
    public static Optional<Instant> waitingSince(GenericKubernetesResource workload) {
        Instant created = StatusTime.parse(workload.getMetadata().getCreationTimestamp());
        Instant requeued = list(map(workload.getAdditionalProperties().get("status")).get("conditions")).stream()
                .filter(c -> "Requeued".equals(c.get("type"))).map(c -> StatusTime.parse(String.valueOf(c.get("lastTransitionTime"))))
                .filter(Objects::nonNull).findFirst().orElse(null);
        return Optional.ofNullable(requeued != null && (created == null || requeued.isAfter(created)) ? requeued : created);
    }

    /**
     * Since when Kueue itself has kept the Workload deactivated (maximum execution time, requeuing limit,
     * a rejected admission check: an eviction whose reason is {@code DeactivatedDueTo...}); empty when it is
     * active, or was deactivated by someone else (a pause, an administrator).
     */
    public static Optional<Instant> deactivatedByKueueSince(GenericKubernetesResource workload) {
        if (!Boolean.FALSE.equals(map(workload.getAdditionalProperties().get("spec")).get("active"))) {
            return Optional.empty();
        }
        return condition(list(map(workload.getAdditionalProperties().get("status")).get("conditions")), "Evicted")
                .filter(c -> String.valueOf(c.get("reason")).startsWith("DeactivatedDueTo"))
                .map(c -> StatusTime.parse(String.valueOf(c.get("lastTransitionTime"))));
    }

    /** Reads the Workload's state; {@code flavors}: the ResourceFlavors it may name, by name. */
    public static State of(GenericKubernetesResource workload, Map<String, Flavor> flavors) {
        Map<String, Object> status = map(workload.getAdditionalProperties().get("status"));
        List<Map<String, Object>> conditions = list(status.get("conditions"));
        String queue = queueOf(workload);
        if (workload.getMetadata().getDeletionTimestamp() != null) {
            return new Evicted(queue, WORKLOAD_DELETED, "the Workload " + workload.getMetadata().getName() + " is being deleted");
        }
        boolean reserved = quotaReserved(workload);
        Optional<Map<String, Object>> evicted = condition(conditions, "Evicted");
        if (evicted.isPresent() && reserved) {
            return new Evicted(queue, String.valueOf(evicted.get().get("reason")), String.valueOf(evicted.get().get("message")));
        }
        if (condition(conditions, "Admitted").isEmpty()) {
            if (Boolean.FALSE.equals(map(workload.getAdditionalProperties().get("spec")).get("active"))) {
                // Deactivated by Kueue itself (maximum execution time, requeuing limit, a rejected check): its eviction says why.
                String why = evicted.filter(c -> String.valueOf(c.get("reason")).startsWith("DeactivatedDueTo"))
                        .map(c -> ": " + c.get("message")).orElse("");
                return new Queued(queue, "the Workload " + workload.getMetadata().getName() + " is deactivated (spec.active is false)" + why);
            }
            String message = reserved ? "quota reserved, waiting for admission checks"
                    : conditions.stream().filter(c -> "QuotaReserved".equals(c.get("type")))
                            .map(c -> String.valueOf(c.get("message"))).findFirst().orElse("waiting for quota");
            return new Queued(queue, message);
        }
        Map<String, Object> admission = map(status.get("admission"));
        List<Map<String, Object>> specPodSets = list(map(workload.getAdditionalProperties().get("spec")).get("podSets"));
        Map<String, PodSetInfo> infos = new LinkedHashMap<>();
        try {
            for (Map<String, Object> assignment : list(admission.get("podSetAssignments"))) {
                String name = String.valueOf(assignment.get("name"));
                Map<String, Object> specPodSet = specPodSets.stream().filter(p -> name.equals(p.get("name"))).findFirst().orElse(Map.of());
                Map<String, String> nodeSelector = new LinkedHashMap<>();
                List<Toleration> tolerations = new ArrayList<>();
                for (Object flavorName : new LinkedHashSet<>(map(assignment.get("flavors")).values())) {
                    Flavor flavor = flavors.get(String.valueOf(flavorName));
                    if (flavor == null) {
                        throw new MissingFlavor("ResourceFlavor " + flavorName + " of podSet " + name + " does not exist");
                    }
                    nodeSelector = merged("nodeSelector", nodeSelector, flavor.nodeLabels());
                    nodeSelector = nodeSelector == null ? new LinkedHashMap<>() : nodeSelector;
                    flavor.tolerations().stream().filter(t -> !tolerations.contains(t)).forEach(tolerations::add);
                }
                int count = assignment.get("count") instanceof Number n ? n.intValue()
                        : specPodSet.get("count") instanceof Number n ? n.intValue() : 1;
                Map<String, String> labels = new LinkedHashMap<>();
                labels.put(POD_SET_LABEL, name);
                // As Kueue labels its own jobs' pods (AssignQueueLabelsForPods): which queues admitted them.
                labels.put(LOCAL_QUEUE_LABEL, queue);
                labels.put(CLUSTER_QUEUE_LABEL, String.valueOf(admission.get("clusterQueue")));
                Map<String, String> annotations = new LinkedHashMap<>();
                List<String> gates = new ArrayList<>();
                if (assignment.get("topologyAssignment") != null) {
                    // As Kueue's integrations: gated until Kueue's ungater gives the pod its domain.
                    annotations.put(WORKLOAD_ANNOTATION, workload.getMetadata().getName());
                    Map<String, Object> request = map(specPodSet.get("topologyRequest"));
                    if (!request.containsKey("required") && !request.containsKey("preferred") && !request.containsKey("unconstrained")) {
                        annotations.put(TopologyRequest.UNCONSTRAINED, "true");
                    }
                    gates.add(TOPOLOGY_GATE);
                }
                for (Map<String, Object> check : list(status.get("admissionChecks"))) {
                    for (Map<String, Object> update : list(check.get("podSetUpdates"))) {
                        if (!name.equals(update.get("name"))) {
                            continue;
                        }
                        labels = nonNull(merged("label", labels, strings(update.get("labels"))));
                        annotations = nonNull(merged("annotation", annotations, strings(update.get("annotations"))));
                        nodeSelector = nonNull(merged("nodeSelector", nodeSelector, strings(update.get("nodeSelector"))));
                        for (Object toleration : list(update.get("tolerations"))) {
                            Toleration t = JSON.convertValue(toleration, Toleration.class);
                            if (!tolerations.contains(t)) {
                                tolerations.add(t);
                            }
                        }
                    }
                }
                infos.put(name, new PodSetInfo(name, count, nodeSelector, List.copyOf(tolerations), labels, annotations, List.copyOf(gates)));
            }
        } catch (Conflict e) {
            return new Unusable(e.getMessage());
        }
        return new Admitted(String.valueOf(admission.get("clusterQueue")), infos);
    }

    private static Map<String, String> nonNull(Map<String, String> map) {
        return map == null ? new LinkedHashMap<>() : map;
    }

    private static Optional<Map<String, Object>> condition(List<Map<String, Object>> conditions, String type) {
        return conditions.stream().filter(c -> type.equals(c.get("type")) && "True".equals(c.get("status"))).findFirst();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object value) {
        return value instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> list(Object value) {
        return value instanceof List<?> l ? l.stream().filter(Map.class::isInstance).map(e -> (Map<String, Object>) e).toList() : List.of();
    }

    private static Map<String, String> strings(Object value) {
        Map<String, String> result = new LinkedHashMap<>();
        map(value).forEach((k, v) -> result.put(k, String.valueOf(v)));
        return result;
    }
}
