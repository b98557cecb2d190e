package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * A deleted pod the API server still holds long after its grace period ended: its kubelet has not confirmed
 * the end (a node that is down or cut off never will) or a finalizer holds it. Whatever waits for it to be
 * gone (a replica's new pod of the same name, a pause, an eviction's quota) waits for ever, so it is said,
 * with what holds it and what a person can do. It is never deleted by force here: only a person can know
 * the old process stopped (a node cut off from the API server may still run it, and two copies of a rank
 * must not write one checkpoint), as no Kubernetes controller forces a pod off a node that may still run it.
 */
final class LingeringPod {
    /**
     * How long after its grace period ended a pod is overdue. A kubelet that began the stop with a longer
     * grace period keeps it when a shorter delete follows, so this covers the default 30 s.
     */
    static final Duration OVERDUE_AFTER = Duration.ofSeconds(60);

    private LingeringPod() {
    }

    /** When this pod, if it is being deleted, is overdue: its grace period's end plus {@link #OVERDUE_AFTER}. */
    static Optional<Instant> overdueAt(Pod pod) {
        String deletion = pod.getMetadata().getDeletionTimestamp();
        if (deletion == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(Instant.parse(deletion).plus(OVERDUE_AFTER));
        } catch (java.time.format.DateTimeParseException e) {
            return Optional.empty();
        }
    }

    /** What holds this pod and what to do, as a clause; empty while it is not overdue. */
    static Optional<String> said(Pod pod, Instant now) {
        Optional<Instant> overdue = overdueAt(pod);
        if (overdue.isEmpty() || now.isBefore(overdue.get())) {
            return Optional.empty();
        }
        String name = pod.getMetadata().getName();
        List<String> finalizers = pod.getMetadata().getFinalizers();
        String why;
        if (finalizers != null && !finalizers.isEmpty()) {
            why = "its finalizers (" + String.join(", ", finalizers) + ") are still on it: what added them must remove them";
        } else {
            String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
            why = (node == null ? "its kubelet" : "node " + node) + " has not confirmed that it stopped (a node that is down or cut "
                    + "off never will: once you know it is, `kubectl delete pod " + name + " --force --grace-period=0`, or the taint "
                    + "node.kubernetes.io/out-of-service on the node, lets it go)";
        }
        return Optional.of("pod " + name + " is still terminating, its grace period ended at " + pod.getMetadata().getDeletionTimestamp()
                + ": " + why);
    }

    /**
     * The clauses of the overdue pods among these, in name order (empty when none is), and a look again at the
     * moment the next one becomes overdue: nothing else would say so.
     */
    static List<String> saidOf(java.util.Collection<Pod> pods, Instant now, PassOutput out) {
        pods.forEach(pod -> overdueAt(pod).filter(now::isBefore).ifPresent(out::recheckAt));
        return pods.stream().sorted(java.util.Comparator.comparing(p -> p.getMetadata().getName()))
                .map(pod -> said(pod, now)).flatMap(Optional::stream).toList();
    }
}
