package dev.torchjob.operator.engine;

import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;

/** One replica the job should have: its group, index in the group, global rank and pod name. */
public record ReplicaSlot(String type, int groupIndex, int index, int rank, String podName, RestartPolicy restartPolicy) {

    public boolean isMaster() {
        return rank == 0;
    }
}
