package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

import dev.torchjob.operator.engine.JobState.CountedRestart;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * The restart budget spent so far and the pods whose restart it already holds, by name and UID.
 * Written to the status before the pod is deleted, so a pod is never counted twice: not by a later
 * pass that still sees it, nor by an operator that restarted in between.
 */
final class RestartLedger {
    private int backoffCount;
    private final List<CountedRestart> counted;

    RestartLedger(JobState previous) {
        this.backoffCount = previous.backoffCount();
        this.counted = new ArrayList<>(previous.countedRestarts());
    }

    int backoffCount() {
        return backoffCount;
    }

    List<CountedRestart> entries() {
        return List.copyOf(counted);
    }

    boolean hasEntries() {
        return !counted.isEmpty();
    }

    /** Entries stay until a pod with another UID is seen under the same name: the informer never shows the old one again. */
    void prune(Map<String, Pod> pods) {
        counted.removeIf(entry -> {
            Pod pod = pods.get(entry.pod());
            return pod != null && !Objects.equals(pod.getMetadata().getUid(), entry.uid());
        });
    }

    boolean isCounted(Pod pod) {
        return isCounted(pod.getMetadata().getName(), pod.getMetadata().getUid());
    }

    boolean isCounted(String podName, String uid) {
        return uid != null && counted.stream().anyMatch(c -> podName.equals(c.pod()) && uid.equals(c.uid()));
    }

    void count(String podName, String uid, Instant restartAt) {
        backoffCount++;
        counted.add(new CountedRestart(podName, uid, restartAt));
    }

    /** One incident of a job restarting as a group: one restart of the budget, whatever number of pods it replaces. */
    void countIncident() {
        backoffCount++;
    }

    /** A pod replaced by a restart already counted: never counted again. */
    void mark(String podName, String uid, Instant restartAt) {
        counted.add(new CountedRestart(podName, uid, restartAt));
    }

    /** A restart the kubelet made in place: it costs budget, but no pod is waiting to be replaced. */
    void countInPlace() {
        backoffCount++;
    }

    /** When the counted restart of this replica may create its new pod, if it must wait. */
    Optional<Instant> restartAt(String podName) {
        return counted.stream().filter(c -> podName.equals(c.pod()) && c.restartAt() != null).map(CountedRestart::restartAt).findFirst();
    }

    /** Replicas the job no longer has (scaled down) have nothing left to restart. */
    void retainOnly(Set<String> podNames) {
        counted.removeIf(entry -> !podNames.contains(entry.pod()));
    }

    /** The job left training (ended, paused, debugging): nothing is waiting to be restarted. */
    void close() {
        counted.clear();
    }
}
