package dev.torchjob.operator.planning;

import dev.torchjob.operator.api.ReplicaSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;

/** One replica the job should have: its group, index in the group and global rank (spec §3). */
public record ReplicaSlot(ReplicaSpec group, PodTemplateSpec template, int groupIndex, int index, int rank, String podName) {

    public String type() {
        return group.type;
    }

    public boolean isMaster() {
        return rank == 0;
    }
}
