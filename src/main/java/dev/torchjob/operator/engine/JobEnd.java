package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.Optional;

import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.Pause;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * How a job ends, and what a finished one still does: its outcome and completion time, said once; its pods
 * cleaned up by the clean-pod policy (a deadline also stops the unfinished ones, whatever the policy); deleted
 * once its time to live has passed. A finished job never runs again: a pause asked of it is ignored, and said so.
 */
final class JobEnd {
    private final PassContext context;
    private final NextState next;
    private final Wording wording;

    JobEnd(PassContext context, NextState next, Wording wording) {
        this.context = context;
        this.next = next;
        this.wording = wording;
    }

    /** The job ends with this outcome now; {@code topology} null for a job too invalid to have one. */
    Situation end(Outcome ending, String message, JobTopology topology) {
        PassOutput out = context.out();
        next.outcome = ending;
        next.phase = ending == Outcome.Succeeded ? JobPhase.Succeeded : JobPhase.Failed;
        next.completionTime = context.now();
        context.ledger().close();
        next.replicaGroups = topology != null ? context.view().of(topology, false, out.restartsByType) : context.view().refreshed();
        cleanUp(ending == Outcome.DeadlineExceeded);
        next.initialized = ending == Outcome.Succeeded || context.previous().initialized();
        next.running = false;
        timeToLive().ifPresent(out::recheckAt);
        if (ending == Outcome.Succeeded) {
            out.events.add(JobEvent.normal(Outcome.Succeeded.name(), message));
        } else {
            out.events.add(JobEvent.warning("Failed", "Job failed (" + ending + "): " + message));
        }
        return new Situation.Ended(ending, message);
    }

    /** A finished job keeps its outcome; only clean-up, the replica view and its time to live move on. */
    Situation finished() {
        JobState previous = context.previous();
        next.replicaGroups = context.view().refreshed();
        Optional<Instant> expires = timeToLive();
        if (expires.isPresent() && !context.now().isBefore(expires.get())) {
            context.out().deleteJob = true;
        } else {
            expires.ifPresent(context.out()::recheckAt);
        }
        cleanUp(previous.outcome() == Outcome.DeadlineExceeded);
        boolean pauseRequested = context.job().runMode() == RunMode.PAUSE;
        if (pauseRequested) {
            if (previous.pause() != Pause.IGNORED) {
                context.out().events.add(JobEvent.warning("PauseIgnored", wording.pauseIgnored(previous.phase())));
            }
            next.pause = Pause.IGNORED;
        }
        return new Situation.Finished(pauseRequested);
    }

    /** The clean-pod policy after the outcome; a deadline also deletes unfinished pods whatever the policy. */
    private void cleanUp(boolean deadline) {
        CleanPodPolicy policy = context.job().runPolicy().cleanPodPolicy();
        for (Pod pod : context.pods().values()) {
            boolean unfinished = !Pods.replicaPhase(pod).isFinished();
            if (policy == CleanPodPolicy.All || (unfinished && (policy == CleanPodPolicy.Unfinished || deadline))) {
                context.out().delete(pod, deadline && unfinished ? DeletionReason.DEADLINE : DeletionReason.CLEAN_UP);
            }
        }
    }

    /** When a finished job is deleted (ttlSecondsAfterFinished), if it is. */
    private Optional<Instant> timeToLive() {
        Long seconds = context.job().runPolicy().ttlSecondsAfterFinished();
        return seconds == null || next.completionTime == null ? Optional.empty()
                : Optional.of(next.completionTime.plusSeconds(Math.min(seconds, Engine.MAX_DEADLINE.getSeconds())));
    }
}
