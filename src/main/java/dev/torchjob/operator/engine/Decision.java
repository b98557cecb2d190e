package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.Plan.PodDeletion;
import dev.torchjob.operator.engine.Plan.RestartCounted;
import dev.torchjob.operator.engine.Plan.SidecarStop;

/**
 * The engine's answer for one pass, in no API's shape: the job's next state, why it is in it, and
 * what to create and delete. An adapter renders it into its API's status, pods and Services.
 */
public record Decision(
        JobState state,
        Situation situation,
        /** This pass resumed a paused job. */
        boolean resumed,
        boolean createService,
        boolean createPodGroup,
        List<PodRequest> podsToCreate,
        List<PodDeletion> podsToDelete,
        List<SidecarStop> sidecarsToStop,
        List<JobEvent> events,
        Optional<Plan.CreationReport> podsCreated,
        List<RestartCounted> restarts,
        Optional<Duration> recheckAfter,
        Instant decidedAt,
        /** The job finished longer ago than its time to live: delete it (its pods and Services go with it). */
        boolean deleteJob,
        /** Where the job stood with its queue at this pass (what its Queued condition says). */
        QueueAdmission queue) {

    /** A pod to create for a slot, and how its command is set. */
    public record PodRequest(ReplicaSlot slot, PodMode mode) {
    }

    public enum PodMode {
        /** The template as written. */
        TRAIN,
        /** The debug command instead of the training (T9k debug mode). */
        DEBUG,
        /** A job resumed after a pause: the API's resume settings apply. */
        RESUME
    }
}
