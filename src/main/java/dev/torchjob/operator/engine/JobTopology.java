package dev.torchjob.operator.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;

/**
 * Roles and ranks: walk the replica groups in order, then the index within the group. Rank 0
 * (index 0 of the first group) is the master.
 */
public record JobTopology(String jobName, List<ReplicaSlot> slots) {
    /**
     * Replicas one job may have in all. The status lists every replica (about 200 bytes each) and an
     * object must stay well under etcd's 1.5 MiB; adapters refuse a job beyond it before anything
     * is allocated per replica.
     */
    public static final int MAX_REPLICAS = 1000;

    /** Needs a job without a problem. */
    public static JobTopology of(TrainingJob job) {
        List<ReplicaSlot> slots = new ArrayList<>();
        int rank = 0;
        for (int groupIndex = 0; groupIndex < job.groups().size(); groupIndex++) {
            ReplicaGroup group = job.groups().get(groupIndex);
            for (int index = 0; index < group.replicas(); index++) {
                slots.add(new ReplicaSlot(group.type(), groupIndex, index, rank++, podName(job.name(), group.type(), index),
                        group.restartPolicy()));
            }
        }
        return new JobTopology(job.name(), List.copyOf(slots));
    }

    /** {@code <job>-<type>-<index>}, the type in lower case (Kubeflow's Master becomes master). */
    public static String podName(String jobName, String type, int index) {
        return jobName + "-" + type.toLowerCase(Locale.ROOT) + "-" + index;
    }

    public ReplicaSlot master() {
        return slots.get(0);
    }

    public int worldSize() {
        return slots.size();
    }
}
