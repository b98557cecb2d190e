package dev.torchjob.operator.cli;

import java.util.Locale;

import dev.torchjob.operator.engine.JobPhase;

/** What {@code kubectl torchjob wait --for X} waits for, judged on each look at the job. */
public enum WaitTarget {
    SUCCEEDED, FAILED, RUNNING, ADMITTED;

    /** Where the wait stands: done (exit 0), over without reaching it (exit 1), or still waiting. */
    public enum Verdict {
        REACHED, ENDED_OTHERWISE, NOT_YET
    }

    public static WaitTarget named(String word) {
        return valueOf(word.toUpperCase(Locale.ROOT));
    }

    public Verdict judge(JobView job) {
        boolean reached = switch (this) {
            case SUCCEEDED -> job.phase() == JobPhase.Succeeded;
            case FAILED -> job.phase() == JobPhase.Failed;
            case RUNNING -> job.phase() == JobPhase.Running;
            // A job that ran to its end was admitted, whether or not its queue's condition was seen.
            case ADMITTED -> job.admitted();
        };
        if (reached) {
            return Verdict.REACHED;
        }
        return job.ended() ? Verdict.ENDED_OTHERWISE : Verdict.NOT_YET;
    }

    public String word() {
        return name().charAt(0) + name().substring(1).toLowerCase(Locale.ROOT);
    }
}
