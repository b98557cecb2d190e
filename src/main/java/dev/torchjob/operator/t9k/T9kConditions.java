package dev.torchjob.operator.t9k;

import java.util.List;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.engine.Decision;
import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.engine.ReplicaHealth;
import dev.torchjob.operator.engine.Situation;
import dev.torchjob.operator.engine.Wording;

/**
 * T9k's condition set (Initialized, Running, ReplicaFailure, Completed, Failed, Paused, and Queued for
 * jobs queued with Kueue) for each
 * situation the engine can leave a job in: one place that says what each condition reads.
 */
final class T9kConditions {
    static final String SCHEDULER_UNAVAILABLE = "SchedulerUnavailable";
    static final String PAUSE_IGNORED = "JobFinished";
    static final String DEBUG_MODE = "DebugMode";
    private static final String CREATED = "The job's Service and pods have been created.";
    private static final String NOT_FINISHED = "The job has not finished.";
    private static final String NOT_FAILED = "The job has not failed.";
    private static final String HEALTHY = ReplicaHealth.HEALTHY;

    private T9kConditions() {
    }

    static List<JobCondition> of(List<JobCondition> previous, Decision decision, Wording wording) {
        JobState state = decision.state();
        Conditions conditions = new Conditions(previous, decision.decidedAt().toString());
        Situation situation = decision.situation();
        if (situation instanceof Situation.Active active) {
            initializedWhileStarting(conditions, state.initialized());
            if (!active.cannotStart().isEmpty()) {
                // Not running while a replica cannot start, whatever ran before: the reason is the scheduler's or the kubelet's.
                conditions.set(JobCondition.RUNNING, false, active.cannotStart().get(0).reason(), active.cannotStartMessage());
            } else {
                conditions.set(JobCondition.RUNNING, state.running(), state.running() ? "AllReplicasRunning" : "WaitingForReplicas",
                        state.running() ? "All replicas have started running." : "Waiting for all replicas to run.");
            }
            conditions.set(JobCondition.REPLICA_FAILURE, active.replicaFailure(),
                            active.replicaFailure() ? "ReplicaRestarting" : "AllReplicasHealthy", active.replicaFailureMessage())
                    .set(JobCondition.COMPLETED, false, "Active", NOT_FINISHED)
                    .set(JobCondition.FAILED, false, "Active", NOT_FAILED);
        } else if (situation instanceof Situation.Pausing pausing) {
            String message = pausing.paused() ? wording.paused() : wording.pausing(pausing.podsLeft()) + pausing.lingeringSaid("the job is paused");
            conditions.set(JobCondition.INITIALIZED, state.initialized(), state.initialized() ? "PodsCreated" : "Paused",
                            state.initialized() ? CREATED : "The job was created paused.")
                    .set(JobCondition.RUNNING, false, "Paused", message)
                    .set(JobCondition.REPLICA_FAILURE, false, "Paused", message)
                    .set(JobCondition.COMPLETED, false, "Paused", NOT_FINISHED)
                    .set(JobCondition.FAILED, false, "Paused", NOT_FAILED)
                    .set(JobCondition.PAUSED, pausing.paused(), pausing.paused() ? "Paused" : "Pausing", message);
        } else if (situation instanceof Situation.Debugging debugging) {
            String message = "Debug mode: the pods run the debug command; the operator restarts nothing and decides no outcome.";
            initializedWhileStarting(conditions, state.initialized());
            conditions.set(JobCondition.RUNNING, state.running(), state.running() ? DEBUG_MODE : "WaitingForReplicas",
                            state.running() ? message : "Waiting for all debug pods to run.")
                    .set(JobCondition.REPLICA_FAILURE, !debugging.failedPods().isEmpty(), DEBUG_MODE,
                            debugging.failedPods().isEmpty() ? HEALTHY
                                    : "Debug pods failed (not restarted): " + String.join(", ", debugging.failedPods()))
                    .set(JobCondition.COMPLETED, false, DEBUG_MODE, message)
                    .set(JobCondition.FAILED, false, DEBUG_MODE, message);
        } else if (situation instanceof Situation.AwaitingAdmission) {
            String message = wording.awaitingAdmission();
            conditions.set(JobCondition.INITIALIZED, false, SCHEDULER_UNAVAILABLE, message)
                    .set(JobCondition.RUNNING, false, "WaitingForScheduler", message)
                    .set(JobCondition.REPLICA_FAILURE, false, "AllReplicasHealthy", HEALTHY)
                    .set(JobCondition.COMPLETED, false, "Active", NOT_FINISHED)
                    .set(JobCondition.FAILED, false, "Active", NOT_FAILED);
        } else if (situation instanceof Situation.Queued queued) {
            String message = queued.message();
            conditions.set(JobCondition.INITIALIZED, state.initialized(), state.initialized() ? "PodsCreated" : "Queued",
                            state.initialized() ? CREATED : message)
                    .set(JobCondition.RUNNING, false, queued.reason(), message)
                    .set(JobCondition.REPLICA_FAILURE, false, "AllReplicasHealthy", HEALTHY)
                    .set(JobCondition.COMPLETED, false, "Active", NOT_FINISHED)
                    .set(JobCondition.FAILED, false, "Active", NOT_FAILED)
                    .set(JobCondition.QUEUED, true, queued.reason(), message);
        } else if (situation instanceof Situation.Ended ended) {
            ended(conditions, ended, state.initialized());
        } else if (situation instanceof Situation.Finished finished && finished.pauseRequested()) {
            conditions.set(JobCondition.PAUSED, false, PAUSE_IGNORED, "The job has finished; pausing it changes nothing.");
        }
        if (Conditions.isTrue(previous, JobCondition.QUEUED) && !(situation instanceof Situation.Queued)) {
            // No longer waiting in the queue: admitted, paused, ended, or running without one (the Workload says the rest).
            if (decision.queue() instanceof QueueAdmission.Admitted admitted) {
                conditions.set(JobCondition.QUEUED, false, "Admitted", "Admitted by ClusterQueue " + admitted.clusterQueue() + ".");
            } else {
                conditions.set(JobCondition.QUEUED, false, situation instanceof Situation.Pausing ? "Paused"
                        : situation instanceof Situation.Ended || situation instanceof Situation.Finished ? "Ended" : "NotQueued",
                        "The job no longer waits in its queue.");
            }
        }
        List<JobCondition> next = conditions.build();
        if (decision.resumed()) {
            // Whatever path the pass took (training, debug, waiting for the scheduler), the pause is over.
            next.stream().filter(c -> JobCondition.PAUSED.equals(c.type)).forEach(c -> {
                c.status = "False";
                c.reason = "Resumed";
                c.message = "The job was paused and has been resumed.";
                c.lastTransitionTime = decision.decidedAt().toString();
            });
        }
        return next;
    }

    private static void initializedWhileStarting(Conditions conditions, boolean initialized) {
        conditions.set(JobCondition.INITIALIZED, initialized, initialized ? "PodsCreated" : "CreatingPods",
                initialized ? CREATED : "Creating the job's Service and pods.");
    }

    private static void ended(Conditions conditions, Situation.Ended ended, boolean initialized) {
        String reason = ended.outcome().name();
        String message = ended.message();
        if (ended.outcome() == Outcome.Succeeded) {
            conditions.set(JobCondition.INITIALIZED, true, "PodsCreated", CREATED)
                    .set(JobCondition.RUNNING, false, reason, message)
                    .set(JobCondition.REPLICA_FAILURE, false, reason, message)
                    .set(JobCondition.COMPLETED, true, reason, message)
                    .set(JobCondition.FAILED, false, reason, message);
            return;
        }
        boolean replicaFailed = ended.outcome() != Outcome.InvalidSpec && ended.outcome() != Outcome.DeadlineExceeded
                && ended.outcome() != Outcome.FailedToStart;
        conditions.set(JobCondition.INITIALIZED, initialized, initialized ? "PodsCreated" : reason, initialized ? CREATED : message)
                .set(JobCondition.RUNNING, false, reason, message)
                .set(JobCondition.REPLICA_FAILURE, replicaFailed, reason, replicaFailed ? message : "No replica failed.")
                .set(JobCondition.COMPLETED, false, reason, message)
                .set(JobCondition.FAILED, true, reason, message);
    }
}
