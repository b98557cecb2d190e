package dev.torchjob.operator.status;

import java.util.ArrayList;
import java.util.List;

import dev.torchjob.operator.api.ReplicaStatus;
import dev.torchjob.operator.api.TaskStatus;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;
import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.StartBlocker;

/**
 * The engine's replicas as both job APIs keep them in their status ({@code status.tasks}), and back:
 * the pod UIDs and counted restarts there are what make restarts count once across operator restarts.
 */
public final class ReplicaRecords {
    private ReplicaRecords() {
    }

    public static List<TaskStatus> of(JobState state) {
        List<TaskStatus> tasks = new ArrayList<>();
        for (ReplicaGroupState group : state.replicaGroups()) {
            TaskStatus task = new TaskStatus();
            task.type = group.type();
            task.restartCount = group.restartCount();
            for (ReplicaState replica : group.replicas()) {
                ReplicaStatus status = new ReplicaStatus();
                status.name = replica.name();
                status.uid = replica.uid();
                status.phase = replica.phase();
                status.lastFailure = replica.lastFailure();
                status.failuresInARow = replica.failuresInARow() == 0 ? null : replica.failuresInARow();
                status.restartsInPlace = replica.restartsInPlace() == 0 ? null : replica.restartsInPlace();
                status.refusalsInARow = replica.refusalsInARow() == 0 ? null : replica.refusalsInARow();
                if (replica.cannotStart() != null) {
                    status.cannotStart = new ReplicaStatus.CannotStart();
                    status.cannotStart.reason = replica.cannotStart().reason();
                    status.cannotStart.message = replica.cannotStart().message();
                }
                for (JobState.ContainerState container : replica.containers()) {
                    ReplicaStatus.ContainerStatus c = new ReplicaStatus.ContainerStatus();
                    c.name = container.name();
                    c.state = container.state();
                    c.exitCode = container.exitCode();
                    c.reason = container.reason();
                    status.containers.add(c);
                }
                task.replicas.add(status);
            }
            tasks.add(task);
        }
        return tasks;
    }

    public static List<ReplicaGroupState> state(List<TaskStatus> tasks) {
        List<ReplicaGroupState> groups = new ArrayList<>();
        for (TaskStatus task : tasks == null ? List.<TaskStatus>of() : tasks) {
            List<ReplicaState> replicas = new ArrayList<>();
            for (ReplicaStatus replica : task.replicas) {
                replicas.add(new ReplicaState(replica.name, replica.uid,
                        replica.phase,
                        replica.containers.stream().map(c -> new JobState.ContainerState(c.name, c.state, c.exitCode, c.reason)).toList(),
                        replica.lastFailure, replica.failuresInARow == null ? 0 : replica.failuresInARow,
                        replica.restartsInPlace == null ? 0 : replica.restartsInPlace,
                        replica.cannotStart == null || replica.cannotStart.reason == null ? null
                                : new StartBlocker(replica.cannotStart.reason, replica.cannotStart.message),
                        replica.refusalsInARow == null ? 0 : replica.refusalsInARow));
            }
            groups.add(new ReplicaGroupState(task.type, task.restartCount == null ? 0 : task.restartCount, replicas));
        }
        return groups;
    }
}
