package dev.torchjob.operator.kubeflow;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.api.kubeflow.KubeflowReplicaSpec;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.podtemplate.PodRequests;
import dev.torchjob.operator.podtemplate.PodTemplateParser;
import io.fabric8.kubernetes.api.model.Quantity;

/** {@code runPolicy.schedulingPolicy}, as Kubeflow reads it. */
record SchedulingPolicy(Optional<Integer> minAvailable, Optional<String> queue, Optional<String> priorityClass,
        Optional<Map<String, Object>> givenMinResources, Optional<Integer> scheduleTimeoutSeconds) {

    static SchedulingPolicy of(PyTorchJob job) {
        Map<String, Object> policy = job.getSpec().runPolicy == null || job.getSpec().runPolicy.schedulingPolicy == null ? Map.of()
                : job.getSpec().runPolicy.schedulingPolicy;
        @SuppressWarnings("unchecked")
        Optional<Map<String, Object>> minResources = Optional.ofNullable(policy.get("minResources")).filter(Map.class::isInstance)
                .map(m -> (Map<String, Object>) m);
        return new SchedulingPolicy(integer(policy.get("minAvailable")), text(policy.get("queue")), text(policy.get("priorityClass")),
                minResources, integer(policy.get("scheduleTimeoutSeconds")));
    }

    /** minAvailable, else every replica of the job. */
    int minMember(PyTorchJob job) {
        return minAvailable.orElseGet(() -> ReplicaTypes.of(job.getSpec()).values().stream()
                .mapToInt(spec -> spec.replicas == null ? 1 : spec.replicas).sum());
    }

    /**
     * The given minResources, else what the first minMember pods ask of their nodes, Master's first, as the
     * scheduler counts a pod ({@link PodRequests}: limits-only resources, sidecars, init containers, pod-level
     * resources), summed. Kubeflow orders the types by their priority class's value,
     * equal ones in map order, sums only the containers, and takes a container's limits only when it has no
     * requests at all (a GPU in limits beside a CPU request is left out); this operator reads no PriorityClass:
     * Master, then Worker.
     */
    Map<String, Object> minResources(PyTorchJob job) {
        if (givenMinResources.isPresent()) {
            return givenMinResources.get();
        }
        List<Map<String, Quantity>> pods = new ArrayList<>();
        int left = minMember(job);
        for (KubeflowReplicaSpec spec : ReplicaTypes.of(job.getSpec()).values()) {
            Map<String, Quantity> pod = PodRequests.of(PodTemplateParser.parse(spec.template).getSpec());
            for (int i = 0; i < (spec.replicas == null ? 1 : spec.replicas) && left > 0; i++, left--) {
                pods.add(pod);
            }
        }
        Map<String, Object> minResources = new LinkedHashMap<>();
        PodRequests.total(pods).forEach((name, amount) -> minResources.put(name, amount.toString()));
        return minResources;
    }

    private static Optional<Integer> integer(Object value) {
        return value instanceof Number number ? Optional.of(number.intValue()) : Optional.empty();
    }

    private static Optional<String> text(Object value) {
        return value instanceof String s && !s.isEmpty() ? Optional.of(s) : Optional.empty();
    }
}
