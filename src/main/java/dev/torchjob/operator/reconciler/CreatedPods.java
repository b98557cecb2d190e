package dev.torchjob.operator.reconciler;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;

import io.fabric8.kubernetes.api.model.Pod;
import io.javaoperatorsdk.operator.processing.event.ResourceID;

/**
 * Pods this operator created and no pass has observed yet, by job and pod name, with their UIDs.
 * A pod deleted by someone else before any pass saw it is then still known to have existed, so
 * its restart is counted like any other (the Kubernetes Job controller keeps such expectations
 * too). Entries go as soon as a pass observes the pod.
 */
@ApplicationScoped
public class CreatedPods {
    private final Map<ResourceID, Map<String, String>> unseenByJob = new ConcurrentHashMap<>();

    void created(ResourceID job, Pod pod) {
        unseenByJob.computeIfAbsent(job, id -> new ConcurrentHashMap<>()).put(pod.getMetadata().getName(), pod.getMetadata().getUid());
    }

    /** The job's created pods that are not among those observed now (observed ones are forgotten). */
    Map<String, String> unseen(ResourceID job, Collection<Pod> observed) {
        Map<String, String> unseen = unseenByJob.get(job);
        if (unseen == null) {
            return Map.of();
        }
        for (Pod pod : observed) {
            unseen.remove(pod.getMetadata().getName(), pod.getMetadata().getUid());
        }
        if (unseen.isEmpty()) {
            unseenByJob.remove(job, unseen);
            return Map.of();
        }
        return Map.copyOf(unseen);
    }

    /** The job has finished or is gone: nothing of it is awaited. */
    void forget(ResourceID job) {
        unseenByJob.remove(job);
    }
}
