package dev.torchjob.operator.kubeflow;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobSpec;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscalerBuilder;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscalerSpec;

/**
 * The HorizontalPodAutoscaler of an elastic PyTorchJob with {@code elasticPolicy.metrics}, as
 * Kubeflow makes it: named after the job, owned by it, scaling its Workers through the job's scale
 * subresource between the elastic bounds. None while the job is suspended.
 */
public final class ElasticAutoscaler {
    private ElasticAutoscaler() {
    }

    /** The autoscaler the job should have now, if any. Needs a valid spec. */
    public static Optional<HorizontalPodAutoscaler> wanted(PyTorchJob job, boolean active) {
        PyTorchJobSpec spec = job.getSpec();
        if (!active || spec.elasticPolicy == null || spec.elasticPolicy.metrics == null || spec.elasticPolicy.metrics.isEmpty()) {
            return Optional.empty();
        }
        String name = job.getMetadata().getName();
        return Optional.of(new HorizontalPodAutoscalerBuilder()
                .withNewMetadata()
                .withName(name)
                .withNamespace(job.getMetadata().getNamespace())
                .withLabels(KubeflowLabels.ofJob(name))
                .withOwnerReferences(KubeflowPods.ownerReference(job))
                .endMetadata()
                .withNewSpec()
                .withNewScaleTargetRef(PyTorchJob.GROUP + "/" + PyTorchJob.VERSION, PyTorchJob.KIND, name)
                .withMinReplicas(KubeflowModel.elasticMin(spec))
                .withMaxReplicas(KubeflowModel.elasticMax(spec))
                .withMetrics(List.copyOf(spec.elasticPolicy.metrics))
                .endSpec()
                .build());
    }

    /** True when the observed autoscaler already does what the wanted one does. */
    public static boolean same(HorizontalPodAutoscaler observed, HorizontalPodAutoscaler wanted) {
        HorizontalPodAutoscalerSpec a = observed.getSpec();
        HorizontalPodAutoscalerSpec b = wanted.getSpec();
        return a != null && Objects.equals(a.getScaleTargetRef(), b.getScaleTargetRef()) && Objects.equals(a.getMinReplicas(), b.getMinReplicas())
                && Objects.equals(a.getMaxReplicas(), b.getMaxReplicas()) && Objects.equals(a.getMetrics(), b.getMetrics());
    }
}
