package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import dev.torchjob.operator.engine.JobState.CountedRestart;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;
import dev.torchjob.operator.engine.JobState.ReplicaState;

/**
 * Whether a training job's replicas are failing, and in which words (T9k's {@code ReplicaFailure} condition): a
 * group restart whose verdict waits says what it waits for; else the replicas that failed this pass, each as it
 * ended; else the restarts still to come, each with its time while it is ahead; else all are healthy. A replica
 * whose pod its kubelet refused is being replaced, not restarted: it is said as one that cannot start, not here.
 */
public record ReplicaHealth(boolean failing, String message) {
    /** Said while no replica fails (T9k: {@code AllReplicasHealthy}). */
    public static final String HEALTHY = "All replicas are healthy.";

    static ReplicaHealth of(Optional<String> groupRestartUnderWay, List<ReplicaEnding> failures, List<CountedRestart> counted,
            List<ReplicaGroupState> groups, Instant now) {
        if (groupRestartUnderWay.isPresent()) {
            return new ReplicaHealth(true, groupRestartUnderWay.get());
        }
        if (!failures.isEmpty()) {
            return new ReplicaHealth(true, failures.stream().map(ReplicaEnding::describe).collect(Collectors.joining("; ")));
        }
        Set<String> refused = groups.stream().flatMap(group -> group.replicas().stream())
                .filter(replica -> replica.refusalsInARow() > 0).map(ReplicaState::name).collect(Collectors.toSet());
        List<CountedRestart> restarting = counted.stream().filter(restart -> !refused.contains(restart.pod())).toList();
        if (!restarting.isEmpty()) {
            return new ReplicaHealth(true, "Restarting " + restarting.stream()
                    .map(r -> r.restartAt() != null && now.isBefore(r.restartAt()) ? r.pod() + " at " + r.restartAt() : r.pod())
                    .collect(Collectors.joining(", ")) + ".");
        }
        return new ReplicaHealth(false, HEALTHY);
    }
}
