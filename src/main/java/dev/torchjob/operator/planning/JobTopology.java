package dev.torchjob.operator.planning;

import java.util.ArrayList;
import java.util.List;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.ReplicaSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;

/**
 * Roles and ranks (spec §3): walk replicaSpecs in order, then index within the group.
 * The master is index 0 of the first group.
 */
public record JobTopology(String jobName, List<ReplicaSlot> slots) {

    /** Needs a spec that passed {@link SpecValidator}. */
    public static JobTopology of(PyTorchTrainingJob job) {
        PyTorchTrainingJobSpec spec = job.getSpec();
        String jobName = job.getMetadata().getName();
        List<ReplicaSlot> slots = new ArrayList<>();
        int rank = 0;
        for (int groupIndex = 0; groupIndex < spec.replicaSpecs.size(); groupIndex++) {
            ReplicaSpec group = spec.replicaSpecs.get(groupIndex);
            int replicas = replicaCount(spec, group);
            PodTemplateSpec template = PodTemplateParser.parse(group.template);
            for (int index = 0; index < replicas; index++) {
                slots.add(new ReplicaSlot(group, template, groupIndex, index, rank++, podName(jobName, group.type, index)));
            }
        }
        return new JobTopology(jobName, List.copyOf(slots));
    }

    /** Replicas of a group: elastic jobs run expectedReplicas (default minReplicas) of their single group. */
    static int replicaCount(PyTorchTrainingJobSpec spec, ReplicaSpec group) {
        if (spec.elastic != null && spec.elastic.isOn()) {
            return spec.elastic.expectedReplicas != null ? spec.elastic.expectedReplicas : spec.elastic.minReplicas;
        }
        return group.replicas == null ? 1 : group.replicas;
    }

    public static String podName(String jobName, String type, int index) {
        return jobName + "-" + type + "-" + index;
    }

    public ReplicaSlot master() {
        return slots.get(0);
    }

    public int worldSize() {
        return slots.size();
    }

    /** Resolvable name of the master: pod hostname under the job's headless Service. */
    public String masterAddress() {
        return master().podName() + "." + jobName;
    }
}
