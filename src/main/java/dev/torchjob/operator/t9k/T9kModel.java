package dev.torchjob.operator.t9k;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import dev.torchjob.operator.api.CleanUpPolicy;
import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.ReplicaSpec;
import dev.torchjob.operator.api.RunPolicy;
import dev.torchjob.operator.engine.JobState.CountedRestart;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.Pause;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;
import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.Situation;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.podtemplate.PodTemplateCheck.Scope;
import dev.torchjob.operator.status.ReplicaRecords;
import dev.torchjob.operator.status.StatusTime;

/** Reads a PyTorchTrainingJob into the engine's model: the spec with T9k's defaults, the status as the engine's state. */
public final class T9kModel {
    private T9kModel() {
    }

    /** The job as the engine sees it; a spec that fails {@link SpecValidator} becomes an invalid job. */
    public static TrainingJob job(PyTorchTrainingJob job) {
        return job(job, Scope.WHOLE_SPEC);
    }

    /** The job with only {@code reading} of its spec validated. */
    public static TrainingJob job(PyTorchTrainingJob job, Scope reading) {
        PyTorchTrainingJobSpec spec = job.getSpec();
        var meta = job.getMetadata();
        TrainingJob.RunPolicy runPolicy = runPolicy(spec == null ? null : spec.runPolicy)
                .withRestartScope(TrainingJob.RestartScope.of(meta.getAnnotations()));
        RunMode runMode = runMode(spec);
        Optional<String> problem = SpecValidator.problemWith(job, reading);
        if (problem.isPresent()) {
            return TrainingJob.invalid(meta.getName(), meta.getNamespace(), meta.getUid(), meta.getGeneration(), runPolicy, runMode,
                    problem.get());
        }
        List<ReplicaGroup> groups = new ArrayList<>();
        for (ReplicaSpec group : spec.replicaSpecs) {
            RestartPolicy policy = group.restartPolicy == null ? RestartPolicy.OnFailure : RestartPolicy.valueOf(group.restartPolicy.name());
            groups.add(new ReplicaGroup(group.type, replicaCount(spec, group), policy));
        }
        boolean elastic = spec.elastic != null && spec.elastic.isOn();
        return new TrainingJob(meta.getName(), meta.getNamespace(), meta.getUid(), meta.getGeneration(), List.copyOf(groups),
                runPolicy, runMode, TrainingJob.SuccessRule.MASTER, TrainingJob.RetryableExitCodes.SIGNALS, elastic, Optional.empty());
    }

    /** Replicas of a group: elastic jobs run expectedReplicas (default minReplicas) of their single group. */
    static int replicaCount(PyTorchTrainingJobSpec spec, ReplicaSpec group) {
        if (spec.elastic != null && spec.elastic.isOn()) {
            return spec.elastic.expectedReplicas != null ? spec.elastic.expectedReplicas : spec.elastic.minReplicas;
        }
        return group.replicas == null ? 1 : group.replicas;
    }

    private static TrainingJob.RunPolicy runPolicy(RunPolicy policy) {
        int backoffLimit = policy == null || policy.backoffLimit == null ? RunPolicy.DEFAULT_BACKOFF_LIMIT : policy.backoffLimit;
        CleanUpPolicy cleanUp = policy == null || policy.cleanUpPolicy == null ? CleanUpPolicy.None : policy.cleanUpPolicy;
        return new TrainingJob.RunPolicy(backoffLimit, policy == null ? null : policy.activeDeadlineSeconds,
                CleanPodPolicy.valueOf(cleanUp.name()));
    }

    /** Pause wins over debug. */
    private static RunMode runMode(PyTorchTrainingJobSpec spec) {
        if (spec == null || spec.runMode == null) {
            return RunMode.TRAIN;
        }
        if (spec.runMode.pause != null && spec.runMode.pause.isOn()) {
            return RunMode.PAUSE;
        }
        return spec.runMode.debug != null && spec.runMode.debug.isOn() ? RunMode.DEBUG : RunMode.TRAIN;
    }

    /** What the last status written says, in the engine's terms. */
    public static JobState state(PyTorchTrainingJobStatus status) {
        if (status == null) {
            return JobState.NEW;
        }
        List<ReplicaGroupState> groups = ReplicaRecords.state(status.tasks);
        List<CountedRestart> counted = status.countedRestarts == null ? List.of()
                : status.countedRestarts.stream().map(c -> new CountedRestart(c.pod, c.uid, StatusTime.parse(c.restartAt))).toList();
        JobCondition paused = Conditions.find(status.conditions, JobCondition.PAUSED);
        JobCondition queued = Conditions.find(status.conditions, JobCondition.QUEUED);
        boolean waiting = queued != null && queued.isTrue();
        Pause pause = paused != null && paused.isTrue() ? Pause.PAUSED
                : waiting && Situation.Queued.afterEviction(queued.reason) ? Pause.EVICTED
                : paused == null ? Pause.NEVER
                : T9kConditions.PAUSE_IGNORED.equals(paused.reason) ? Pause.IGNORED
                : Pause.NOT_PAUSED;
        JobCondition initialized = Conditions.find(status.conditions, JobCondition.INITIALIZED);
        return new JobState(
                status.observedGeneration != null,
                status.phase,
                StatusTime.parse(status.startTime),
                StatusTime.parse(status.completionTime),
                status.backoffCount == null ? 0 : status.backoffCount,
                counted,
                groups,
                status.elastic == null ? null : status.elastic.currentReplicas,
                initialized != null && initialized.isTrue(),
                Conditions.isTrue(status.conditions, JobCondition.RUNNING),
                pause,
                initialized != null && T9kConditions.SCHEDULER_UNAVAILABLE.equals(initialized.reason),
                waiting,
                outcome(status));
    }

    private static Outcome outcome(PyTorchTrainingJobStatus status) {
        if (status.phase == dev.torchjob.operator.engine.JobPhase.Succeeded) {
            return Outcome.Succeeded;
        }
        JobCondition failed = Conditions.find(status.conditions, JobCondition.FAILED);
        if (status.phase != dev.torchjob.operator.engine.JobPhase.Failed || failed == null) {
            return null;
        }
        try {
            return Outcome.valueOf(failed.reason);
        } catch (IllegalArgumentException | NullPointerException e) {
            return null; // a reason this operator never writes: no clean-up rule depends on it
        }
    }

}
