package dev.torchjob.operator.engine;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A training job as the engine sees it, whatever API it came from: who it is, its replica groups
 * in rank order, its run policy and run mode. Each job API's adapter builds one from its spec,
 * with that API's defaults applied and its validation done ({@code problem}).
 */
public record TrainingJob(
        String name,
        String namespace,
        String uid,
        Long generation,
        List<ReplicaGroup> groups,
        RunPolicy runPolicy,
        RunMode runMode,
        SuccessRule successRule,
        RetryableExitCodes retryableExitCodes,
        boolean elastic,
        Optional<String> problem) {

    /** One replica group: its type (as the API names it), how many replicas, and when they restart. */
    public record ReplicaGroup(String type, int replicas, RestartPolicy restartPolicy) {
    }

    /** When a stopped replica is restarted (the same four policies in T9k and Kubeflow). */
    public enum RestartPolicy {
        Never,
        OnFailure,
        Always,
        /** Restart only when the exit code says the process was stopped from outside (130, 137, 138, 143), or the pod was evicted or deleted. */
        ExitCode
    }

    /** Which pods are deleted once the job has finished. */
    public enum CleanPodPolicy {
        None,
        /** Pods still pending or running (T9k Unfinished, Kubeflow Running). */
        Unfinished,
        All
    }

    /**
     * activeDeadlineSeconds is counted from the job's start time, null: no deadline;
     * ttlSecondsAfterFinished from its completion time, null: the job is kept.
     */
    public record RunPolicy(int backoffLimit, Long activeDeadlineSeconds, CleanPodPolicy cleanPodPolicy, BudgetRule budgetRule,
            Long ttlSecondsAfterFinished, RestartScope restartScope) {
        public RunPolicy(int backoffLimit, Long activeDeadlineSeconds, CleanPodPolicy cleanPodPolicy) {
            this(backoffLimit, activeDeadlineSeconds, cleanPodPolicy, BudgetRule.LIMIT_IS_RESTARTS_ALLOWED, null);
        }

        public RunPolicy(int backoffLimit, Long activeDeadlineSeconds, CleanPodPolicy cleanPodPolicy, BudgetRule budgetRule) {
            this(backoffLimit, activeDeadlineSeconds, cleanPodPolicy, budgetRule, null);
        }

        public RunPolicy(int backoffLimit, Long activeDeadlineSeconds, CleanPodPolicy cleanPodPolicy, BudgetRule budgetRule,
                Long ttlSecondsAfterFinished) {
            this(backoffLimit, activeDeadlineSeconds, cleanPodPolicy, budgetRule, ttlSecondsAfterFinished, RestartScope.Job);
        }

        public RunPolicy withRestartScope(RestartScope scope) {
            return new RunPolicy(backoffLimit, activeDeadlineSeconds, cleanPodPolicy, budgetRule, ttlSecondsAfterFinished, scope);
        }

        /** How many restarts the job may make before the next failure fails it. */
        public int restartsAllowed() {
            return budgetRule == BudgetRule.FAILS_WHEN_RESTARTS_REACH_LIMIT ? backoffLimit - 1 : backoffLimit;
        }
    }

    /**
     * What a replica's failure restarts. A non-elastic job is one process group: once a rank is gone
     * every other rank fails in its next collective, or blocks in it.
     */
    public enum RestartScope {
        /** The job's replicas restart together, one restart counted per fault (the default). */
        Job,
        /** Each replica restarts on its own and each failure is counted (Kubeflow's v1 behaviour). */
        Replica;

        /** The annotation that sets it, on a job of either kind. */
        public static final String ANNOTATION = "torchjob.dev/restart-scope";

        /** The scope a job's annotations ask for (Job when they say nothing); see {@link #problemWith}. */
        public static RestartScope of(Map<String, String> annotations) {
            String value = annotations == null ? null : annotations.get(ANNOTATION);
            return Replica.name().equals(value) ? Replica : Job;
        }

        /** A value of the annotation that is neither scope, in one line. */
        public static Optional<String> problemWith(Map<String, String> annotations) {
            String value = annotations == null ? null : annotations.get(ANNOTATION);
            return value == null || Job.name().equals(value) || Replica.name().equals(value) ? Optional.empty()
                    : Optional.of("metadata.annotations[" + ANNOTATION + "] \"" + value + "\" must be Job or Replica");
        }
    }

    /** What backoffLimit means: the APIs say it differently. */
    public enum BudgetRule {
        /** backoffLimit restarts are made; the failure after them fails the job (T9k, like a Kubernetes Job). */
        LIMIT_IS_RESTARTS_ALLOWED,
        /** The job fails once its restarts reach backoffLimit (Kubeflow v1): backoffLimit 0 fails at the first failure. */
        FAILS_WHEN_RESTARTS_REACH_LIMIT
    }

    public enum RunMode {
        /** Run the replicas, restart them by policy and budget, decide the outcome. */
        TRAIN,
        /** Delete every pod without counting it and create none (T9k pause, Kubeflow suspend). */
        PAUSE,
        /** Run the replicas with a debug command: no restarts, no outcome (T9k debug mode). */
        DEBUG
    }

    /** How the job succeeds. */
    public enum SuccessRule {
        /** When the first replica (rank 0, the master) succeeds. */
        MASTER,
        /** When every replica has succeeded (Kubeflow, no master). */
        ALL_REPLICAS,
        /** When any replica succeeds (Kubeflow, elastic, no master). */
        ANY_REPLICA
    }

    /** The exit codes of the training container that ExitCode restarts: the process was stopped from outside. */
    public enum RetryableExitCodes {
        /** 130, 137, 138 and 143: SIGINT, SIGKILL, SIGUSR1, SIGTERM (T9k). */
        SIGNALS(List.of(130, 137, 138, 143)),
        /** 128 and above: any signal (Kubeflow); 1 to 127 are the program's own. */
        FROM_128(List.of());

        private final List<Integer> codes;

        RetryableExitCodes(List<Integer> codes) {
            this.codes = codes;
        }

        public boolean contains(int exitCode) {
            return this == FROM_128 ? exitCode >= 128 : codes.contains(exitCode);
        }
    }

    /**
     * Whether a failure restarts every replica together. Elastic jobs restart replicas one by one: torchrun's
     * rendezvous takes the survivors into a new round by itself.
     */
    public boolean restartsAsGroup() {
        return !elastic && runPolicy.restartScope() == RestartScope.Job;
    }

    /**
     * The job as its queue admitted it: an elastic job runs the replicas admitted of each group (keyed
     * by type in lower case, as Kueue's podSets are named); any other job is admitted whole.
     */
    public TrainingJob admitted(Map<String, Integer> replicas) {
        if (!elastic || problem.isPresent()) {
            return this;
        }
        List<ReplicaGroup> admitted = groups.stream().map(group -> {
            Integer count = replicas.get(group.type().toLowerCase(Locale.ROOT));
            return count == null ? group : new ReplicaGroup(group.type(), count, group.restartPolicy());
        }).toList();
        return new TrainingJob(name, namespace, uid, generation, admitted, runPolicy, runMode, successRule, retryableExitCodes,
                elastic, problem);
    }

    /** A job whose spec failed validation: it fails with this problem and creates nothing. */
    public static TrainingJob invalid(String name, String namespace, String uid, Long generation, RunPolicy runPolicy,
            RunMode runMode, String problem) {
        return new TrainingJob(name, namespace, uid, generation, List.of(), runPolicy, runMode, SuccessRule.MASTER,
                RetryableExitCodes.SIGNALS, false, Optional.of(problem));
    }
}
