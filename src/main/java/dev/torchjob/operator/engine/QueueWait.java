package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.List;
import java.util.Map;

import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * A job its queue has not admitted, as it waits: what its status says (waiting in its LocalQueue, waiting again
 * after an eviction, evicted with its pods on their way out, Kueue not installed, no queue named, a request Kueue
 * refuses), the event that says it once, when to look again, and whether the job goes because Kueue deactivated
 * it long enough ago (its objectRetentionPolicies), as Kueue deletes its own jobs.
 */
final class QueueWait {
    private QueueWait() {
    }

    /** The wait as the status says it; {@code deleteJob}: the retention of a job Kueue deactivated is over. */
    record Said(Situation.Queued situation, boolean deleteJob) {
    }

    /**
     * @param requeued the job was evicted before (readmission resumes it)
     * @param saidBefore an earlier pass already said the job waits: no event again
     * @param pods the job's pods, every one being deleted
     */
    static Said of(QueueAdmission queue, boolean requeued, boolean saidBefore, Map<String, Pod> pods, Instant now, PassOutput out) {
        Said said = waiting(queue, requeued, pods, now, out);
        if (!saidBefore) {
            Situation.Queued situation = said.situation();
            out.events.add(queue instanceof QueueAdmission.Waiting ? JobEvent.normal("Queued", situation.message())
                    : JobEvent.warning(situation.reason(), situation.message()));
        }
        return said;
    }

    private static Said waiting(QueueAdmission queue, boolean requeued, Map<String, Pod> pods, Instant now, PassOutput out) {
        int podsLeft = pods.size();
        if (queue instanceof QueueAdmission.Waiting waiting) {
            return new Said(new Situation.Queued(waiting.queue(), requeued ? Situation.Queued.REQUEUED : Situation.Queued.WAITING,
                    (requeued ? "Evicted earlier; waiting in LocalQueue " : "Waiting in LocalQueue ") + waiting.queue() + ": "
                            + waiting.message(), podsLeft),
                    retentionOver(waiting, podsLeft, now, out));
        }
        if (queue instanceof QueueAdmission.Unavailable unavailable) {
            // Nothing says when Kueue gets installed: look again.
            out.recheckAt(now.plus(Engine.ADMISSION_RECHECK));
            return new Said(new Situation.Queued(unavailable.queue(), Situation.Queued.UNAVAILABLE, unavailable.message(), podsLeft), false);
        }
        if (queue instanceof QueueAdmission.NoQueueName unnamed) {
            // No recheck: a label, or a default LocalQueue made in its namespace, brings the job back.
            return new Said(new Situation.Queued("", Situation.Queued.NO_QUEUE_NAME, unnamed.message(), podsLeft), false);
        }
        if (queue instanceof QueueAdmission.Invalid invalid) {
            return new Said(new Situation.Queued(invalid.queue(), Situation.Queued.INVALID, "Not queued in LocalQueue " + invalid.queue()
                    + ": " + invalid.message(), podsLeft), false);
        }
        if (queue instanceof QueueAdmission.Evicted evicted) {
            List<String> lingering = LingeringPod.saidOf(pods.values(), now, out);
            return new Said(new Situation.Queued(evicted.queue(), Situation.Queued.EVICTED, "Evicted by Kueue (" + evicted.reason() + "): "
                    + evicted.message() + (pods.isEmpty() ? "" : "; deleting " + podsLeft + " pod(s), none counted as a failure")
                    + (lingering.isEmpty() ? "" : "; " + String.join("; ", lingering) + "; Kueue keeps the quota until they are gone"),
                    podsLeft), false);
        }
        throw new IllegalArgumentException("not a wait: " + queue);
    }

    /** Kueue gave up on the job (deactivated it) and its retention is over once every pod is gone: the job goes. */
    private static boolean retentionOver(QueueAdmission.Waiting waiting, int podsLeft, Instant now, PassOutput out) {
        if (waiting.deleteJobAt().isEmpty() || podsLeft > 0) {
            return false;
        }
        Instant at = waiting.deleteJobAt().get();
        if (now.isBefore(at)) {
            out.recheckAt(at);
            return false;
        }
        out.events.add(JobEvent.normal("Deleted", "Deleted: deactivated by Kueue and not reactivated by " + at
                + ", as its objectRetentionPolicies say; " + waiting.message()));
        return true;
    }
}
