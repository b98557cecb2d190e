package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * Where a job stands with its queue (Kueue), in the engine's terms: a gate in front of every pod.
 * The shell reads it from the job's Workload; a job without a queue is {@link #NOT_QUEUED}.
 */
public sealed interface QueueAdmission {
    QueueAdmission NOT_QUEUED = new NotQueued();

    /** The job does not ask a queue: nothing gates it. */
    record NotQueued() implements QueueAdmission {
    }

    /**
     * Waiting for quota in {@code queue} (no Workload yet, or not admitted): no pod may exist. {@code deleteJobAt}:
     * the queue gave up on the job (Kueue deactivated it) and it is to be deleted then, as Kueue's
     * objectRetentionPolicies say.
     */
    record Waiting(String queue, String message, Optional<Instant> deleteJobAt) implements QueueAdmission {
        public Waiting(String queue, String message) {
            this(queue, message, Optional.empty());
        }
    }

    /** The queue's API (Kueue) is not installed: the job cannot be admitted; looked at again periodically. */
    record Unavailable(String queue, String message) implements QueueAdmission {
    }

    /** Every job must name a queue here (Kueue's manageJobsWithoutQueueName), and this one names none: no pod may exist. */
    record NoQueueName(String message) implements QueueAdmission {
    }

    /**
     * The job asks its queue for something Kueue refuses (a Kueue label with a bad value): it is not
     * queued and no pod may exist until the job is fixed.
     */
    record Invalid(String queue, String message) implements QueueAdmission {
    }

    /**
     * Admitted by {@code clusterQueue}: how many replicas of each group (by type) may run, fewer than
     * asked under partial admission, and what the admission adds to each pod.
     */
    record Admitted(String clusterQueue, Map<String, Integer> replicas, PodAdmission pods) implements QueueAdmission {
    }

    /** Evicted (preempted, deactivated, timed out, Workload deleted): every pod goes, none is counted; the job waits again. */
    record Evicted(String queue, String reason, String message) implements QueueAdmission {
    }

    /** Admitted, but the admission cannot be applied to the pods (it contradicts their template): the job fails. */
    record Refused(String message) implements QueueAdmission {
    }

    /** What an admission adds to a pod of a replica type (node selectors, tolerations, labels of the flavors and checks). */
    @FunctionalInterface
    interface PodAdmission {
        PodAdmission NONE = (type, pod) -> pod;

        Pod admit(String replicaType, Pod pod);
    }
}
