package dev.torchjob.operator.kubeflow;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.api.kubeflow.KubeflowReplicaSpec;
import dev.torchjob.operator.api.kubeflow.KubeflowRunPolicy;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobSpec;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;
import dev.torchjob.operator.podtemplate.PodTemplateCheck.Scope;

/** Reads a PyTorchJob into the engine's model, with Kubeflow v1.9's defaults and rules. */
public final class KubeflowModel {
    /** runPolicy.backoffLimit unset: Kubeflow sets no limit. */
    static final int NO_LIMIT = Integer.MAX_VALUE;

    private KubeflowModel() {
    }

    /** The job as the engine sees it; a spec that fails {@link KubeflowSpecValidator} becomes an invalid job. */
    public static TrainingJob job(PyTorchJob job) {
        return job(job, Scope.WHOLE_SPEC);
    }

    /** The job with only {@code reading} of its spec validated. */
    public static TrainingJob job(PyTorchJob job, Scope reading) {
        PyTorchJobSpec spec = job.getSpec();
        var meta = job.getMetadata();
        TrainingJob.RunPolicy runPolicy = runPolicy(spec == null ? null : spec.runPolicy)
                .withRestartScope(TrainingJob.RestartScope.of(meta.getAnnotations()));
        RunMode runMode = spec != null && spec.runPolicy != null && Boolean.TRUE.equals(spec.runPolicy.suspend) ? RunMode.PAUSE : RunMode.TRAIN;
        Optional<String> problem = KubeflowSpecValidator.problemWith(job, reading);
        if (problem.isPresent()) {
            return TrainingJob.invalid(meta.getName(), meta.getNamespace(), meta.getUid(), meta.getGeneration(), runPolicy, runMode,
                    problem.get());
        }
        Map<String, KubeflowReplicaSpec> types = ReplicaTypes.of(spec);
        List<ReplicaGroup> groups = new ArrayList<>();
        types.forEach((type, replicas) -> groups.add(new ReplicaGroup(type, replicas(spec, type, replicas),
                RestartPolicy.valueOf((replicas.restartPolicy == null ? "OnFailure" : replicas.restartPolicy.name())))));
        boolean elastic = spec.elasticPolicy != null;
        // v1.9: the master decides; without one, every worker must succeed, or any one when elastic.
        SuccessRule success = types.containsKey(ReplicaTypes.MASTER) ? SuccessRule.MASTER
                : elastic ? SuccessRule.ANY_REPLICA : SuccessRule.ALL_REPLICAS;
        return new TrainingJob(meta.getName(), meta.getNamespace(), meta.getUid(), meta.getGeneration(), List.copyOf(groups),
                runPolicy, runMode, success, RetryableExitCodes.FROM_128, elastic, Optional.empty());
    }

    /** Pods of a type: Master 1; Worker as written (an HPA changes it through the scale subresource). */
    static int replicas(PyTorchJobSpec spec, String type, KubeflowReplicaSpec replicas) {
        return ReplicaTypes.MASTER.equals(type) ? 1 : replicas.replicas == null ? 1 : replicas.replicas;
    }

    /** elasticPolicy.minReplicas, defaulted as Kubeflow does: from maxReplicas, else Worker.replicas. */
    static int elasticMin(PyTorchJobSpec spec) {
        Integer min = spec.elasticPolicy.minReplicas;
        return min != null ? min : spec.elasticPolicy.maxReplicas != null ? spec.elasticPolicy.maxReplicas : workers(spec);
    }

    /** elasticPolicy.maxReplicas, defaulted as Kubeflow does: from minReplicas, else Worker.replicas. */
    static int elasticMax(PyTorchJobSpec spec) {
        Integer max = spec.elasticPolicy.maxReplicas;
        return max != null ? max : spec.elasticPolicy.minReplicas != null ? spec.elasticPolicy.minReplicas : workers(spec);
    }

    private static int workers(PyTorchJobSpec spec) {
        KubeflowReplicaSpec worker = ReplicaTypes.of(spec).get(ReplicaTypes.WORKER);
        return worker == null || worker.replicas == null ? 1 : worker.replicas;
    }

    /** Kubeflow fails a job once its restarts reach backoffLimit. */
    private static TrainingJob.RunPolicy runPolicy(KubeflowRunPolicy policy) {
        int backoffLimit = policy == null || policy.backoffLimit == null ? NO_LIMIT : policy.backoffLimit;
        CleanPodPolicy cleanPods = policy == null || policy.cleanPodPolicy == null ? CleanPodPolicy.None
                : switch (policy.cleanPodPolicy) {
                    case None -> CleanPodPolicy.None;
                    case Running -> CleanPodPolicy.Unfinished;
                    case All -> CleanPodPolicy.All;
                };
        return new TrainingJob.RunPolicy(backoffLimit, policy == null ? null : policy.activeDeadlineSeconds, cleanPods,
                TrainingJob.BudgetRule.FAILS_WHEN_RESTARTS_REACH_LIMIT,
                policy == null || policy.ttlSecondsAfterFinished == null ? null : policy.ttlSecondsAfterFinished.longValue());
    }
}
