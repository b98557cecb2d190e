package dev.torchjob.operator.t9k;

import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

import dev.torchjob.operator.api.ElasticConfig;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.ReplicaSpec;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.podtemplate.PodTemplateCheck;
import dev.torchjob.operator.podtemplate.PodTemplateCheck.Scope;

/**
 * Checks what the operator relies on and the API server may not have checked (the pod
 * template is schema-less, and §3's master rules are the operator's). The first problem found
 * is returned as a message that names the field and the fix; the job then fails InvalidSpec.
 */
public final class SpecValidator {
    static final int MAX_NAME_LENGTH = 63;
    private static final Pattern DNS_1035 = Pattern.compile("^[a-z]([-a-z0-9]*[a-z0-9])?$");
    private static final Pattern DNS_1123 = Pattern.compile("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
    private static final Pattern PROC_PER_NODE = Pattern.compile("^([1-9][0-9]*|gpu|cpu|auto)$");
    public static final String MASTER = "master";

    private SpecValidator() {
    }

    public static Optional<String> problemWith(PyTorchTrainingJob job) {
        return problemWith(job, Scope.WHOLE_SPEC);
    }

    public static Optional<String> problemWith(PyTorchTrainingJob job, Scope reading) {
        String name = job.getMetadata().getName();
        if (name == null || !DNS_1035.matcher(name).matches()) {
            return Optional.of("metadata.name \"" + name + "\" must be a DNS-1035 label (lowercase letters, digits and '-', "
                    + "starting with a letter) because it names the job's Service; rename the job");
        }
        Optional<String> scope = TrainingJob.RestartScope.problemWith(job.getMetadata().getAnnotations());
        if (scope.isPresent()) {
            return scope;
        }
        PyTorchTrainingJobSpec spec = job.getSpec();
        if (spec != null && spec.unreadable != null) {
            return Optional.of(spec.unreadable + "; the API server holds a value this operator's CRD does not allow: set the field anew");
        }
        if (spec == null || spec.replicaSpecs == null || spec.replicaSpecs.isEmpty()) {
            return Optional.of("spec.replicaSpecs must have at least one entry");
        }
        Optional<String> elastic = elasticProblem(spec);
        if (elastic.isPresent()) {
            return elastic;
        }
        Optional<String> size = sizeProblem(spec);
        if (size.isPresent()) {
            return size;
        }
        Set<String> types = new HashSet<>();
        for (int i = 0; i < spec.replicaSpecs.size(); i++) {
            ReplicaSpec group = spec.replicaSpecs.get(i);
            String field = "spec.replicaSpecs[" + i + "]";
            if (group == null) {
                return Optional.of(field + " is empty; give it a type and a template");
            }
            if (group.type == null || !DNS_1123.matcher(group.type).matches()) {
                return Optional.of(field + ".type \"" + group.type + "\" must be a lowercase DNS label such as master or worker");
            }
            if (!types.add(group.type)) {
                return Optional.of(field + ".type \"" + group.type + "\" is used twice; each replica type must be unique");
            }
            if (group.replicas != null && group.replicas < 1) {
                return Optional.of(field + ".replicas must be at least 1 (found " + group.replicas + ")");
            }
            if (MASTER.equals(group.type) && i != 0) {
                return Optional.of(field + ": the master group must be the first entry of spec.replicaSpecs; move it to the top");
            }
            if (MASTER.equals(group.type) && T9kModel.replicaCount(spec, group) != 1) {
                return Optional.of(field + ".replicas must be 1 for type master (found " + T9kModel.replicaCount(spec, group)
                        + "); put the other replicas in a worker group");
            }
            int maxIndex = maxReplicas(spec, group) - 1;
            String longestPod = JobTopology.podName(name, group.type, maxIndex);
            if (longestPod.length() > MAX_NAME_LENGTH) {
                return Optional.of("pod name " + longestPod + " is longer than " + MAX_NAME_LENGTH
                        + " characters; shorten metadata.name or " + field + ".type");
            }
            Optional<String> template = reading == Scope.WHOLE_SPEC ? templateProblem(group, field) : Optional.empty();
            if (template.isPresent()) {
                return template;
            }
        }
        if (spec.runPolicy != null) {
            if (spec.runPolicy.backoffLimit != null && spec.runPolicy.backoffLimit < 0) {
                return Optional.of("spec.runPolicy.backoffLimit must be 0 or more (found " + spec.runPolicy.backoffLimit + ")");
            }
            if (spec.runPolicy.activeDeadlineSeconds != null && spec.runPolicy.activeDeadlineSeconds <= 0) {
                return Optional.of("spec.runPolicy.activeDeadlineSeconds must be positive (found "
                        + spec.runPolicy.activeDeadlineSeconds + ")");
            }
        }
        if (spec.torchrunConfig != null) {
            String procPerNode = spec.torchrunConfig.procPerNode;
            if (procPerNode != null && !PROC_PER_NODE.matcher(procPerNode).matches()) {
                return Optional.of("spec.torchrunConfig.procPerNode \"" + procPerNode
                        + "\" must be a positive number, gpu, cpu or auto");
            }
            if (spec.torchrunConfig.maxRestarts != null && spec.torchrunConfig.maxRestarts < 0) {
                return Optional.of("spec.torchrunConfig.maxRestarts must be 0 or more");
            }
        }
        if (spec.scheduler != null && spec.scheduler.t9kScheduler != null) {
            Integer priority = spec.scheduler.t9kScheduler.priority;
            if (priority != null && (priority < 0 || priority > 100)) {
                return Optional.of("spec.scheduler.t9kScheduler.priority must be between 0 and 100 (found " + priority + ")");
            }
        }
        return Optional.empty();
    }

    /** Checked before anything is built per replica: an admitted spec cannot make the operator allocate without bound. */
    private static Optional<String> sizeProblem(PyTorchTrainingJobSpec spec) {
        if (spec.elastic != null && spec.elastic.isOn() && spec.elastic.maxReplicas != null
                && spec.elastic.maxReplicas > JobTopology.MAX_REPLICAS) {
            return Optional.of("spec.elastic.maxReplicas must be at most " + JobTopology.MAX_REPLICAS + " (found "
                    + shown(spec.elastic.maxReplicas) + ")");
        }
        long total = 0;
        for (int i = 0; i < spec.replicaSpecs.size(); i++) {
            ReplicaSpec group = spec.replicaSpecs.get(i);
            if (group == null) {
                continue;
            }
            if (group.replicas != null && group.replicas > JobTopology.MAX_REPLICAS) {
                return Optional.of("spec.replicaSpecs[" + i + "].replicas must be at most " + JobTopology.MAX_REPLICAS
                        + " (found " + shown(group.replicas) + ")");
            }
            total += group.replicas == null ? 1 : Math.max(0, group.replicas);
        }
        if (total > JobTopology.MAX_REPLICAS) {
            return Optional.of("spec.replicaSpecs asks for " + total + " replicas in all; a job has at most "
                    + JobTopology.MAX_REPLICAS + ": split it into several jobs or use fewer, larger replicas");
        }
        return Optional.empty();
    }

    /** A value saturated when read (it was beyond the int range) is shown as such. */
    private static String shown(int value) {
        return value == Integer.MAX_VALUE ? "2147483647 or more" : Integer.toString(value);
    }

    private static Optional<String> elasticProblem(PyTorchTrainingJobSpec spec) {
        ElasticConfig elastic = spec.elastic;
        if (elastic == null || !elastic.isOn()) {
            return Optional.empty();
        }
        if (spec.torchrunConfig == null || !spec.torchrunConfig.isOn()) {
            return Optional.of("spec.elastic.enabled requires spec.torchrunConfig.enabled: elastic training is run by torchrun");
        }
        if (spec.replicaSpecs.size() != 1) {
            return Optional.of("spec.elastic.enabled needs exactly one entry in spec.replicaSpecs (found "
                    + spec.replicaSpecs.size() + ")");
        }
        if (elastic.minReplicas == null || elastic.maxReplicas == null) {
            return Optional.of("spec.elastic needs minReplicas and maxReplicas");
        }
        if (elastic.minReplicas < 1 || elastic.minReplicas > elastic.maxReplicas) {
            return Optional.of("spec.elastic needs 1 <= minReplicas <= maxReplicas (found " + elastic.minReplicas + " and "
                    + elastic.maxReplicas + ")");
        }
        int expected = elastic.expectedReplicas != null ? elastic.expectedReplicas : elastic.minReplicas;
        if (expected < elastic.minReplicas || expected > elastic.maxReplicas) {
            return Optional.of("spec.elastic.expectedReplicas must be between minReplicas and maxReplicas (found " + expected + ")");
        }
        return Optional.empty();
    }

    private static int maxReplicas(PyTorchTrainingJobSpec spec, ReplicaSpec group) {
        if (spec.elastic != null && spec.elastic.isOn() && spec.elastic.maxReplicas != null) {
            return spec.elastic.maxReplicas;
        }
        return T9kModel.replicaCount(spec, group);
    }

    private static Optional<String> templateProblem(ReplicaSpec group, String field) {
        return PodTemplateCheck.problemWith(group.template, field, Optional.empty());
    }
}
