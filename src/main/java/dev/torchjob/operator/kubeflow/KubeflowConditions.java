package dev.torchjob.operator.kubeflow;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

import dev.torchjob.operator.api.kubeflow.KubeflowCondition;
import dev.torchjob.operator.engine.Decision;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.engine.Situation;

/**
 * PyTorchJob's conditions by Kubeflow v1.9's rules: Created, then Running or Restarting (each
 * replaces the other), Succeeded or Failed (Running turns False), Suspended; a condition is appended
 * when it changes, so the last one is the job's state (the State column); once Failed, nothing changes.
 */
public final class KubeflowConditions {
    public static final String CREATED = "Created";
    public static final String RUNNING = "Running";
    public static final String RESTARTING = "Restarting";
    public static final String SUCCEEDED = "Succeeded";
    public static final String FAILED = "Failed";
    public static final String SUSPENDED = "Suspended";
    /** This operator's, for jobs queued with Kueue: True while the job waits for admission (the State column says Queued). */
    public static final String QUEUED = "Queued";
    /** This operator's: it cannot apply its decision. Kept first, so the State column is Kubeflow's. */
    public static final String RECONCILE_ERROR = "ReconcileError";
    /**
     * This operator's: True while a replica's pod cannot start (reason: the scheduler's or kubelet's).
     * Kept at the front, after ReconcileError, so the State column is Kubeflow's.
     */
    public static final String REPLICA_CANNOT_START = "ReplicaCannotStart";

    private final List<KubeflowCondition> conditions;
    private final String now;

    private KubeflowConditions(List<KubeflowCondition> previous, String now) {
        this.conditions = new ArrayList<>();
        for (KubeflowCondition c : previous == null ? List.<KubeflowCondition>of() : previous) {
            conditions.add(copy(c));
        }
        this.now = now;
    }

    /**
     * {@code job}: its name; {@code qualified}: namespace/name, which Kubeflow's running and succeeded
     * messages use instead for a job without a Master (its Worker branch words them so).
     */
    static List<KubeflowCondition> of(List<KubeflowCondition> previous, Decision decision, String job, String qualified, boolean hasMaster) {
        KubeflowConditions next = new KubeflowConditions(previous, decision.decidedAt().toString());
        next.set(CREATED, true, "PyTorchJobCreated", "PyTorchJob " + job + " is created.");
        Situation situation = decision.situation();
        if (situation instanceof Situation.Active) {
            if (next.isTrue(SUSPENDED)) {
                next.set(SUSPENDED, false, "PyTorchJobResumed", "PyTorchJob " + job + " is resumed.");
            }
            // As in Kubeflow, only pods the operator recreates make the job Restarting; the kubelet's in-place restarts do not.
            List<Plan.RestartCounted> recreated = decision.restarts().stream().filter(r -> !r.inPlace()).toList();
            if (!recreated.isEmpty()) {
                next.set(RESTARTING, true, "PyTorchJobRestarting", "PyTorchJob " + job + " is restarting because "
                        + restarted(recreated) + " replica(s) failed.");
            } else if (decision.state().running()) {
                next.set(RUNNING, true, "PyTorchJobRunning", "PyTorchJob " + (hasMaster ? job : qualified) + " is running.");
            }
        } else if (situation instanceof Situation.Pausing pausing) {
            String message = "PyTorchJob " + job + " is suspended." + pausing.lingeringSaid("the suspension is complete");
            if (next.find(RUNNING) != null) {
                next.set(RUNNING, false, "PyTorchJobSuspended", message);
            }
            next.set(SUSPENDED, true, "PyTorchJobSuspended", message);
        } else if (situation instanceof Situation.Queued queued) {
            if (next.isTrue(RUNNING)) {
                next.set(RUNNING, false, "PyTorchJobQueued", queued.message());
            }
            next.set(QUEUED, true, queued.reason(), queued.message());
        } else if (situation instanceof Situation.Ended ended) {
            boolean ran = ended.outcome() == Outcome.Succeeded || ended.outcome() == Outcome.BackoffLimitExceeded
                    || ended.outcome() == Outcome.ReplicaFailedPermanently;
            if (ran && find(next.conditions, RUNNING) == null) {
                // Its pods ran and ended between two passes: the history still says it ran, as for any job
                // (Running, turned False by the end), in the same status write.
                next.set(RUNNING, true, "PyTorchJobRunning", "PyTorchJob " + (hasMaster ? job : qualified) + " is running.");
            }
            if (ended.outcome() == Outcome.Succeeded) {
                next.set(SUCCEEDED, true, "PyTorchJobSucceeded", hasMaster ? "PyTorchJob " + job + " is successfully completed."
                        : "PyTorchJob " + qualified + " successfully completed.");
            } else {
                next.set(FAILED, true, "PyTorchJobFailed", "PyTorchJob " + job + " is failed because " + ended.message());
            }
        }
        next.cannotStart(situation instanceof Situation.Active active ? active : null);
        if (next.isTrue(QUEUED) && !(situation instanceof Situation.Queued)) {
            // In place: a condition that turned False must not become the State column.
            KubeflowCondition queued = next.find(QUEUED);
            queued.status = "False";
            queued.reason = decision.queue() instanceof QueueAdmission.Admitted ? "Admitted" : "NotQueued";
            queued.message = decision.queue() instanceof QueueAdmission.Admitted admitted
                    ? "Admitted by ClusterQueue " + admitted.clusterQueue() + "." : "The job no longer waits in its queue.";
            queued.lastTransitionTime = next.now;
            queued.lastUpdateTime = next.now;
        }
        return next.conditions;
    }

    /**
     * ReplicaCannotStart: True (and its message kept current) while pods cannot start; False once none
     * is held any more, or the job is no longer training. Never added before a pod was first held.
     */
    private void cannotStart(Situation.Active active) {
        KubeflowCondition current = find(REPLICA_CANNOT_START);
        boolean held = active != null && !active.cannotStart().isEmpty();
        if (held) {
            String reason = active.cannotStart().get(0).reason();
            String message = active.cannotStartMessage();
            if (current != null && "True".equals(current.status) && reason.equals(current.reason) && message.equals(current.message)) {
                return;
            }
            KubeflowCondition condition = current != null ? current : new KubeflowCondition();
            if (current == null) {
                condition.type = REPLICA_CANNOT_START;
                conditions.add(find(RECONCILE_ERROR) == null ? 0 : 1, condition);
            }
            if (!"True".equals(condition.status)) {
                condition.lastTransitionTime = now;
            }
            condition.status = "True";
            condition.reason = reason;
            condition.message = message;
            condition.lastUpdateTime = now;
        } else if (current != null && "True".equals(current.status)) {
            current.status = "False";
            current.reason = "ReplicasStarting";
            current.message = "No replica is held from starting.";
            current.lastTransitionTime = now;
            current.lastUpdateTime = now;
        }
    }

    /** "1 Master and 2 Worker": the types restarted this pass and how many of each. */
    private static String restarted(List<Plan.RestartCounted> restarts) {
        Map<String, Integer> byType = new TreeMap<>();
        restarts.forEach(r -> byType.merge(r.replicaType(), 1, Integer::sum));
        List<String> parts = new ArrayList<>();
        byType.forEach((type, count) -> parts.add(count + " " + type));
        return String.join(" and ", parts);
    }

    /** Kubeflow's setCondition: same status and reason changes nothing; otherwise the condition moves to the end. */
    private void set(String type, boolean status, String reason, String message) {
        if (isTrue(FAILED)) {
            return;
        }
        KubeflowCondition current = find(type);
        String value = status ? "True" : "False";
        if (current != null && value.equals(current.status) && Objects.equals(reason, current.reason)) {
            // Kubeflow's own types keep their first message; Queued (ours) follows Kueue's as it changes.
            if (type.equals(QUEUED) && !Objects.equals(message, current.message)) {
                current.message = message;
                current.lastUpdateTime = now;
            }
            return;
        }
        KubeflowCondition condition = new KubeflowCondition();
        condition.type = type;
        condition.status = value;
        condition.reason = reason;
        condition.message = message;
        condition.lastUpdateTime = now;
        condition.lastTransitionTime = current != null && value.equals(current.status) ? current.lastTransitionTime : now;
        List<KubeflowCondition> kept = new ArrayList<>();
        for (KubeflowCondition c : conditions) {
            if (c.type.equals(type) || (type.equals(RESTARTING) && c.type.equals(RUNNING)) || (type.equals(RUNNING) && c.type.equals(RESTARTING))) {
                continue;
            }
            if ((type.equals(SUCCEEDED) || type.equals(FAILED)) && c.type.equals(RUNNING) && "True".equals(c.status)) {
                c.status = "False";
                c.lastTransitionTime = now;
                c.lastUpdateTime = now;
            }
            kept.add(c);
        }
        kept.add(condition);
        conditions.clear();
        conditions.addAll(kept);
    }

    private KubeflowCondition find(String type) {
        return conditions.stream().filter(c -> type.equals(c.type)).findFirst().orElse(null);
    }

    private boolean isTrue(String type) {
        KubeflowCondition c = find(type);
        return c != null && "True".equals(c.status);
    }

    static KubeflowCondition find(List<KubeflowCondition> conditions, String type) {
        return conditions == null ? null : conditions.stream().filter(c -> type.equals(c.type)).findFirst().orElse(null);
    }

    private static KubeflowCondition copy(KubeflowCondition c) {
        KubeflowCondition copy = new KubeflowCondition();
        copy.type = c.type;
        copy.status = c.status;
        copy.reason = c.reason;
        copy.message = c.message;
        copy.lastUpdateTime = c.lastUpdateTime;
        copy.lastTransitionTime = c.lastTransitionTime;
        return copy;
    }

    /**
     * The conditions with ReconcileError set (the operator could not apply its decision) or cleared
     * (null message), first in the list so the State column stays Kubeflow's; null when already so.
     */
    static List<KubeflowCondition> withReconcileError(List<KubeflowCondition> previous, String reason, String message, String now) {
        KubeflowCondition before = find(previous, RECONCILE_ERROR);
        boolean failing = message != null;
        if (before == null ? !failing : "True".equals(before.status) == failing && (!failing || message.equals(before.message))) {
            return null;
        }
        List<KubeflowCondition> next = new ArrayList<>();
        KubeflowCondition condition = new KubeflowCondition();
        condition.type = RECONCILE_ERROR;
        condition.status = failing ? "True" : "False";
        condition.reason = failing ? reason : "Recovered";
        condition.message = failing ? message : "The operator applies its decisions again.";
        condition.lastUpdateTime = now;
        condition.lastTransitionTime = before != null && "True".equals(before.status) == failing ? before.lastTransitionTime : now;
        next.add(condition);
        for (KubeflowCondition c : previous == null ? List.<KubeflowCondition>of() : previous) {
            if (!RECONCILE_ERROR.equals(c.type)) {
                next.add(copy(c));
            }
        }
        return next;
    }
}
