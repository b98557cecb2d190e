package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.engine.Decision.PodRequest;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.Plan.PodDeletion;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * What one pass has decided to do so far: pods, Service and PodGroup to create, pods to delete, events to say,
 * restarts counted, and when to look again. The steps of a pass add to it; {@link Engine} turns it into the
 * {@link Decision}. Scratch space of one pass, never shared.
 */
final class PassOutput {
    /** The furthest a pass asks to be woken: every job is looked at again within this anyway. */
    static final Duration MAX_RECHECK = Duration.ofMinutes(10);

    final List<PodRequest> creates = new ArrayList<>();
    final List<PodDeletion> deletes = new ArrayList<>();
    final List<JobEvent> events = new ArrayList<>();
    final List<Plan.RestartCounted> restarts = new ArrayList<>();
    /** Restarts counted this pass by replica type: added to the groups' restart counts. */
    final Map<String, Integer> restartsByType = new LinkedHashMap<>();
    /** The job's Service, and its PodGroup, are missing: made this pass. */
    boolean createService;
    boolean createPodGroup;
    /** How the executor reports the pods it creates, when this pass creates any. */
    Plan.CreationReport podsCreated;
    /** The job finished longer ago than its time to live: deleted this pass. */
    boolean deleteJob;
    private final Instant now;
    private Duration recheckAfter;

    PassOutput(Instant now) {
        this.now = now;
    }

    /** Look again at this time (or earlier, if something else asked so): nothing else would say it is time. */
    void recheckAt(Instant when) {
        Duration in = Duration.between(now, when.isAfter(now.plus(MAX_RECHECK)) ? now.plus(MAX_RECHECK) : when);
        if (recheckAfter == null || in.compareTo(recheckAfter) < 0) {
            recheckAfter = in;
        }
    }

    Optional<Duration> recheckAfter() {
        return Optional.ofNullable(recheckAfter);
    }

    /** Deletes the pod, unless it is already on its way out. */
    void delete(Pod pod, DeletionReason reason) {
        delete(pod, reason, null);
    }

    /** Deletes the pod within {@code gracePeriodSeconds} (null: the pod's own), unless it is already on its way out. */
    void delete(Pod pod, DeletionReason reason, Long gracePeriodSeconds) {
        if (!Pods.isTerminating(pod)) {
            deletes.add(new PodDeletion(pod.getMetadata().getName(), pod.getMetadata().getUid(), pod.getMetadata().getResourceVersion(),
                    reason, gracePeriodSeconds));
        }
    }

    /** One restart counted against the budget, for the replica type that caused it. */
    void counted(String replicaType, String cause, boolean inPlace) {
        restartsByType.merge(replicaType, 1, Integer::sum);
        restarts.add(new Plan.RestartCounted(replicaType, cause, inPlace));
    }

    /** "restart 2 of backoffLimit 3", as events say it. */
    static String restartOf(int backoffCount, int limit) {
        return "restart " + backoffCount + (limit == Integer.MAX_VALUE ? ", no backoffLimit" : " of backoffLimit " + limit);
    }
}
