package dev.torchjob.operator.engine;

import dev.torchjob.operator.engine.JobPhase;

/** The sentences that name an API's own fields: each adapter says them its way. */
public interface Wording {
    /** Every pod of a paused job is gone: how to resume. */
    String paused();

    String pausing(int podsLeft);

    /** A paused job resumes. */
    String resuming();

    /** A pause asked for after the job finished. */
    String pauseIgnored(JobPhase phase);

    /** Why the admission gate (the gang scheduler) keeps the job waiting. */
    String awaitingAdmission();
}
