package dev.torchjob.operator.reconciler;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.kueue.KueueWorkload;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * A new Workload's priority, as Kueue resolves it: the job's kueue.x-k8s.io/priority-class label
 * names a WorkloadPriorityClass, else the first pod template's priorityClassName a PriorityClass.
 * A class that does not exist is an error the job shows until it is created or the name fixed.
 */
final class WorkloadPriorities {
    static final ResourceDefinitionContext WORKLOAD_PRIORITY_CLASSES = KueueWorkloads.api("workloadpriorityclasses",
            "WorkloadPriorityClass", false);
    static final ResourceDefinitionContext PRIORITY_CLASSES = new ResourceDefinitionContext.Builder().withGroup("scheduling.k8s.io")
            .withVersion("v1").withKind("PriorityClass").withPlural("priorityclasses").withNamespaced(false).build();

    private final KubernetesClient client;

    WorkloadPriorities(KubernetesClient client) {
        this.client = client;
    }

    Optional<KueueWorkload.Priority> of(HasMetadata job, List<KueueWorkload.PodSet> podSets) {
        Map<String, String> jobLabels = job.getMetadata().getLabels();
        String workloadClass = jobLabels == null ? null : jobLabels.get(KueueWorkload.PRIORITY_CLASS_LABEL);
        if (workloadClass != null) {
            return Optional.of(new KueueWorkload.Priority("kueue.x-k8s.io", "WorkloadPriorityClass", workloadClass,
                    valueOf(WORKLOAD_PRIORITY_CLASSES, workloadClass, "label " + KueueWorkload.PRIORITY_CLASS_LABEL)));
        }
        Optional<String> podClass = podSets.stream().map(p -> p.template().getSpec().getPriorityClassName())
                .filter(n -> n != null && !n.isBlank()).findFirst();
        return podClass.map(name -> new KueueWorkload.Priority("scheduling.k8s.io", "PriorityClass", name,
                valueOf(PRIORITY_CLASSES, name, "the pod template's priorityClassName")));
    }

    private int valueOf(ResourceDefinitionContext kind, String name, String namedBy) {
        String target = kind.getKind() + " " + name;
        GenericKubernetesResource found = ApplyFailure.reading("FailedCreateWorkload", target,
                () -> client.genericKubernetesResources(kind).withName(name).get());
        if (found == null || !(found.getAdditionalProperties().get("value") instanceof Number value)) {
            throw new ApplyFailure("FailedCreateWorkload", target,
                    new IllegalStateException(target + " (" + namedBy + ") does not exist"));
        }
        return value.intValue();
    }
}
