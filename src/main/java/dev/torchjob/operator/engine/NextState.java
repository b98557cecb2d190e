package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.List;

import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.Pause;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;

/**
 * The job's state after this pass, as its steps write it: it starts as the previous one, and what a step leaves
 * alone stays as the status said it. The restart ledger keeps its own part ({@code backoffCount}, the counted
 * restarts). Scratch space of one pass, never shared.
 */
final class NextState {
    JobPhase phase;
    Instant startTime;
    Instant completionTime;
    List<ReplicaGroupState> replicaGroups;
    Integer elasticReplicas;
    boolean initialized;
    boolean running;
    Pause pause;
    boolean awaitingAdmission;
    boolean queued;
    Outcome outcome;

    NextState(JobState previous) {
        phase = previous.phase();
        startTime = previous.startTime();
        completionTime = previous.completionTime();
        replicaGroups = previous.replicaGroups();
        elasticReplicas = previous.elasticReplicas();
        initialized = previous.initialized();
        running = previous.running();
        pause = previous.pause();
        awaitingAdmission = previous.awaitingAdmission();
        queued = previous.queued();
        outcome = previous.outcome();
    }

    JobState with(RestartLedger ledger) {
        return new JobState(true, phase, startTime, completionTime, ledger.backoffCount(), ledger.entries(), List.copyOf(replicaGroups),
                elasticReplicas, initialized, running, pause, awaitingAdmission, queued, outcome);
    }
}
