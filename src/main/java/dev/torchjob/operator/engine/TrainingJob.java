package dev.torchjob.operator.engine;

import java.util.List;
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

    /** activeDeadlineSeconds is counted from the job's start time; null means no deadline. */
    public record RunPolicy(int backoffLimit, Long activeDeadlineSeconds, CleanPodPolicy cleanPodPolicy) {
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
        MASTER
    }

    /** A job whose spec failed validation: it fails with this problem and creates nothing. */
    public static TrainingJob invalid(String name, String namespace, String uid, Long generation, RunPolicy runPolicy,
            RunMode runMode, String problem) {
        return new TrainingJob(name, namespace, uid, generation, List.of(), runPolicy, runMode, SuccessRule.MASTER, false,
                Optional.of(problem));
    }
}
