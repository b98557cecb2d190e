package dev.torchjob.operator.kubeflow;

import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

import dev.torchjob.operator.api.kubeflow.ElasticPolicy;
import dev.torchjob.operator.api.kubeflow.KubeflowReplicaSpec;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobSpec;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.podtemplate.PodTemplateCheck;
import dev.torchjob.operator.podtemplate.PodTemplateCheck.Scope;

/**
 * Kubeflow's defaulter and webhook rules for PyTorchJob, for what the API server could not check
 * (the CRD says the same in CEL where it can): the first problem, naming the field.
 */
public final class KubeflowSpecValidator {
    /** Kubeflow's webhook requires the training container to be named so. */
    public static final String TRAINING_CONTAINER = "pytorch";
    private static final Pattern DNS_1035 = Pattern.compile("^[a-z]([-a-z0-9]*[a-z0-9])?$");
    private static final Pattern NPROC_PER_NODE = Pattern.compile("^([1-9][0-9]*|auto|cpu|gpu)$");
    private static final int MAX_POD_NAME = 63;

    private KubeflowSpecValidator() {
    }

    public static Optional<String> problemWith(PyTorchJob job) {
        return problemWith(job, Scope.WHOLE_SPEC);
    }

    public static Optional<String> problemWith(PyTorchJob job, Scope reading) {
        String name = job.getMetadata().getName();
        if (name == null || !DNS_1035.matcher(name).matches()) {
            return Optional.of("metadata.name \"" + name + "\" must be a DNS-1035 label (lowercase letters, digits and '-', "
                    + "starting with a letter) because it names the job's Services; rename the job");
        }
        Optional<String> scope = TrainingJob.RestartScope.problemWith(job.getMetadata().getAnnotations());
        if (scope.isPresent()) {
            return scope;
        }
        PyTorchJobSpec spec = job.getSpec();
        if (spec != null && spec.unreadable != null) {
            return Optional.of(spec.unreadable + "; the API server holds a value this operator's CRD does not allow: set the field anew");
        }
        if (spec == null || spec.pytorchReplicaSpecs == null || spec.pytorchReplicaSpecs.isEmpty()) {
            return Optional.of("spec.pytorchReplicaSpecs needs a Master or a Worker");
        }
        Set<String> types = new HashSet<>();
        long total = 0;
        for (Map.Entry<String, KubeflowReplicaSpec> entry : spec.pytorchReplicaSpecs.entrySet()) {
            String field = "spec.pytorchReplicaSpecs." + entry.getKey();
            Optional<String> type = ReplicaTypes.canonical(entry.getKey());
            if (type.isEmpty()) {
                return Optional.of(field + ": a PyTorchJob has only Master and Worker replicas");
            }
            if (!types.add(type.get())) {
                return Optional.of(field + ": " + type.get() + " is given twice (keys are read in any casing)");
            }
            KubeflowReplicaSpec replicas = entry.getValue();
            if (replicas == null) {
                return Optional.of(field + " is empty; give it a template");
            }
            int count = replicas.replicas == null ? 1 : replicas.replicas;
            if (ReplicaTypes.MASTER.equals(type.get()) && count != 1) {
                return Optional.of(field + ".replicas must be 1 (found " + count + "); put the other replicas in Worker");
            }
            if (count < 1 || count > JobTopology.MAX_REPLICAS) {
                return Optional.of(field + ".replicas must be between 1 and " + JobTopology.MAX_REPLICAS + " (found "
                        + (count == Integer.MAX_VALUE ? "2147483647 or more" : count) + ")");
            }
            total += count;
        }
        // Checked before anything is built per replica.
        if (total > JobTopology.MAX_REPLICAS) {
            return Optional.of("spec.pytorchReplicaSpecs asks for " + total + " replicas in all; a job has at most "
                    + JobTopology.MAX_REPLICAS);
        }
        Optional<String> elastic = elasticProblem(spec);
        if (elastic.isPresent()) {
            return elastic;
        }
        if (spec.nprocPerNode != null && !NPROC_PER_NODE.matcher(spec.nprocPerNode).matches()) {
            return Optional.of("spec.nprocPerNode \"" + spec.nprocPerNode + "\" must be a positive number, auto, cpu or gpu");
        }
        for (Map.Entry<String, KubeflowReplicaSpec> entry : ReplicaTypes.of(spec).entrySet()) {
            String field = "spec.pytorchReplicaSpecs." + ReplicaTypes.keyOf(spec, entry.getKey());
            int highestIndex = KubeflowModel.replicas(spec, entry.getKey(), entry.getValue()) - 1;
            String longestPod = JobTopology.podName(name, entry.getKey(), highestIndex);
            if (longestPod.length() > MAX_POD_NAME) {
                return Optional.of("pod name " + longestPod + " is longer than " + MAX_POD_NAME + " characters; shorten metadata.name");
            }
            Optional<String> template = reading == Scope.WHOLE_SPEC
                    ? PodTemplateCheck.problemWith(entry.getValue().template, field, Optional.of(TRAINING_CONTAINER))
                    : Optional.empty();
            if (template.isPresent()) {
                return template;
            }
        }
        if (spec.runPolicy != null && spec.runPolicy.activeDeadlineSeconds != null && spec.runPolicy.activeDeadlineSeconds <= 0) {
            return Optional.of("spec.runPolicy.activeDeadlineSeconds must be positive (found " + spec.runPolicy.activeDeadlineSeconds + ")");
        }
        return Optional.empty();
    }

    private static Optional<String> elasticProblem(PyTorchJobSpec spec) {
        ElasticPolicy elastic = spec.elasticPolicy;
        if (elastic == null) {
            return Optional.empty();
        }
        if (!ReplicaTypes.of(spec).containsKey(ReplicaTypes.WORKER)) {
            return Optional.of("spec.elasticPolicy needs a Worker in spec.pytorchReplicaSpecs");
        }
        if (spec.nprocPerNode != null && elastic.nProcPerNode != null) {
            return Optional.of("spec.nprocPerNode and the deprecated spec.elasticPolicy.nProcPerNode cannot both be set: keep spec.nprocPerNode");
        }
        int min = KubeflowModel.elasticMin(spec);
        int max = KubeflowModel.elasticMax(spec);
        if (min < 1 || max > JobTopology.MAX_REPLICAS || min > max) {
            return Optional.of("spec.elasticPolicy needs 1 <= minReplicas <= maxReplicas <= " + JobTopology.MAX_REPLICAS
                    + " (found " + min + " and " + max + ")");
        }
        return Optional.empty();
    }
}
