package dev.torchjob.operator.kueue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import dev.torchjob.operator.engine.QueueAdmission;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;

/**
 * Where a job in a queue stands with it, in the engine's terms, from its Workload and its labels: leaving the queue,
 * invalid for it, waiting for its Workload to be made, or as Kueue's admission says — with when the job is deleted if
 * Kueue deactivated it (objectRetentionPolicies), and the queue it moves to while it waits. Pure: the shell reads the
 * Workload and the flavors its admission names ({@link KueueAdmission#of}).
 */
public final class QueueStanding {
    private QueueStanding() {
    }

    /**
     * {@code queue}: the queue the job is in (its label's, or its Workload's while it leaves); {@code leaving}: its label
     * was removed; {@code invalid}: what its spec or labels do wrong for Kueue, if anything; {@code state}: its
     * Workload's admission, when it has a Workload and is not leaving; {@code afterDeactivatedByKueue}: Kueue's retention
     * of a job it deactivated, when one is set.
     */
    public static QueueAdmission of(String queue, String workloadName, boolean leaving, Optional<String> invalid,
            Optional<GenericKubernetesResource> workload, Optional<KueueAdmission.State> state, List<KueueWorkload.PodSet> podSets,
            Optional<Duration> afterDeactivatedByKueue) {
        if (leaving) {
            return new QueueAdmission.Waiting(queue, "the label " + KueueWorkload.QUEUE_LABEL + " was removed: the job leaves this "
                    + "queue and runs without one once its Workload " + workloadName + " is gone");
        }
        if (workload.isEmpty() || state.isEmpty()) {
            return invalid.<QueueAdmission>map(problem -> new QueueAdmission.Invalid(queue, problem))
                    .orElseGet(() -> new QueueAdmission.Waiting(queue, "its Workload " + workloadName + " is being created"));
        }
        if (invalid.isPresent() && state.get() instanceof KueueAdmission.Queued) {
            // Waiting, the job says what is wrong; holding quota, it runs on as admitted (Kueue's webhook refuses such
            // changes then, and the Workload is not changed while quota is held).
            return new QueueAdmission.Invalid(queue, invalid.get());
        }
        QueueAdmission admission = KueueAdmission.toQueue(state.get(), podSets);
        if (admission instanceof QueueAdmission.Waiting waiting && afterDeactivatedByKueue.isPresent()) {
            Optional<Instant> deleteAt = KueueAdmission.deactivatedByKueueSince(workload.get())
                    .map(since -> since.plus(afterDeactivatedByKueue.get()));
            admission = new QueueAdmission.Waiting(waiting.queue(), waiting.message(), deleteAt);
        }
        if (admission instanceof QueueAdmission.Waiting waiting && !waiting.queue().equals(queue)) {
            // Moving while it waits: Kueue looks at it in the new queue once its Workload says so. A move does not
            // reactivate a job Kueue deactivated: its retention runs on.
            admission = new QueueAdmission.Waiting(queue, "moving here from LocalQueue " + waiting.queue(), waiting.deleteJobAt());
        }
        return admission;
    }
}
