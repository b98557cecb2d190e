package dev.torchjob.operator.kueue;

import java.util.Collection;
import java.util.Optional;

import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Which LocalQueue a job is in, from its queue label and its Workload. Kueue's webhook lets a job's
 * queue label change only while the job waits; Kueue then moves its Workload to the new queue. These
 * kinds pass no Kueue webhook, so an edit may come at any time: here it is followed while the job
 * waits, and otherwise kept for when it waits next (said once), never by stopping a running job or
 * leaving quota held for nothing. Pure.
 *
 * @param queue the queue that gates the job; empty: it runs without one
 * @param leaving its label is gone and its Workload holds no quota: the Workload goes, then the job runs
 *        without a queue
 * @param event what to tell the user about a label edit, once
 */
public record QueueMembership(Optional<String> queue, boolean leaving, Optional<JobEvent> event) {
    static final QueueMembership NONE = new QueueMembership(Optional.empty(), false, Optional.empty());

    /**
     * The job's Workload, as far as it matters here: its queue, whether Kueue reserved quota for it
     * there, and whether it is finished (the job ended: a label edit then changes nothing).
     */
    public record Workload(String name, String queue, boolean quotaReserved, boolean finished) {
    }

    /**
     * @param label the queue the job's label names, if any
     * @param workload the job's Workload, if one exists
     * @param runsWithoutQueue the job has pods that no queue admitted ({@link #runsWithoutQueue})
     */
    public static QueueMembership of(Optional<String> label, Optional<Workload> workload, boolean runsWithoutQueue) {
        if (workload.isEmpty()) {
            if (label.isEmpty()) {
                return NONE;
            }
            if (runsWithoutQueue) {
                return new QueueMembership(Optional.empty(), false, Optional.of(JobEvent.warning(DEFERRED, "The label "
                        + KueueWorkload.QUEUE_LABEL + " was set to " + label.get() + " while the job runs without a queue: Kueue "
                        + "does not let a running job join a queue, so it runs on; it waits in LocalQueue " + label.get()
                        + " the next time none of its pods is left (a pause, or a restart of the whole job)")));
            }
            return new QueueMembership(label, false, Optional.empty());
        }
        Workload held = workload.get();
        if (held.finished() || label.isPresent() && label.get().equals(held.queue())) {
            return new QueueMembership(Optional.of(held.queue()), false, Optional.empty());
        }
        if (held.quotaReserved()) {
            String edit = label.map(l -> "was changed to " + l).orElse("was removed");
            String then = label.map(l -> "moves to LocalQueue " + l).orElse("leaves the queue");
            return new QueueMembership(Optional.of(held.queue()), false, Optional.of(JobEvent.warning(DEFERRED, "The label "
                    + KueueWorkload.QUEUE_LABEL + " " + edit + " while the job holds quota in LocalQueue " + held.queue()
                    + ": Kueue does not let an admitted job change its queue, so it keeps that admission and " + then
                    + " when the admission ends (the job is paused or evicted)")));
        }
        if (label.isEmpty()) {
            return new QueueMembership(Optional.of(held.queue()), true, Optional.of(JobEvent.normal(LEFT, "The label "
                    + KueueWorkload.QUEUE_LABEL + " was removed while the job waited in LocalQueue " + held.queue() + ": its Workload "
                    + held.name() + " is deleted and the job runs without a queue")));
        }
        return new QueueMembership(label, false, Optional.of(JobEvent.normal(MOVED, "The label " + KueueWorkload.QUEUE_LABEL
                + " was changed while the job waited: it moves from LocalQueue " + held.queue() + " to " + label.get())));
    }

    /** A label edit taken only when the job next waits. */
    public static final String DEFERRED = "QueueChangeDeferred";
    /** The job left its queue while it waited. */
    public static final String LEFT = "QueueLeft";
    /** The job moved to another queue while it waited. */
    public static final String MOVED = "QueueChanged";

    /**
     * Whether the job runs on pods that no queue admitted: some of its pods are there and not going,
     * and none carries the podSet label an admission puts on every pod. A job between two sets of pods
     * (all gone for a pause or a restart of the whole job) does not.
     */
    public static boolean runsWithoutQueue(Collection<Pod> jobPods) {
        var live = jobPods.stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
        return !live.isEmpty() && live.stream().noneMatch(p -> p.getMetadata().getLabels() != null
                && p.getMetadata().getLabels().containsKey(KueueAdmission.POD_SET_LABEL));
    }
}
