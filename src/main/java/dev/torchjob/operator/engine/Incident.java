package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import dev.torchjob.operator.engine.RestartDecision.Stopped;

/**
 * One fault of a job that restarts as a group, and what followed it. In a job without elastic training
 * the ranks are one process group: once one is gone, every other rank fails in its next collective (or
 * blocks in it), with an error that says nothing of the cause. The failure that came first is the
 * cause; the others are its consequences: not judged by their own exit code, not counted.
 *
 * <p>Which came first is read from what the kubelet reports, never from the order in which the
 * operator sees the pods: the time each stopped (a container's {@code finishedAt}, or when a pod's
 * deletion was asked for), in whole seconds as the API serves it — except that a rank whose device its kubelet
 * reports failed is the cause whenever it stopped (its peers may give up on it first: a rank that hangs on a
 * failed GPU), and a rank whose output says a peer was lost is a consequence by its own words, never the cause
 * while a rank that did not say so stopped too (it may even have stopped first: torchrun reports its worker's
 * end up to its monitor interval later, 5 s by default in PyTorch 1.13; such a rank may even die by a signal: an abort
 * on the lost connection). In the same second, a stop from outside the code (deleted, evicted, OOMKilled, killed
 * by a signal: exit code above 128, or a worker's signal torchrun reports) comes before an exit of the program's
 * own; then rank order. A pod removed between two passes is judged by its last state; one that vanished while no
 * operator ran has no time: its deletion is taken as first.
 */
record Incident(Stopped cause, List<Stopped> consequences) {

    /**
     * How long after the first failure the verdict waits for replicas still shown running, when that
     * failure is a program's own exit (it may be a consequence): the kubelet reports a container's end
     * within a second or two, and a rank whose peer died under gloo fails within a fraction of a second, so
     * every failure of the incident is seen before it is judged. A rank that stays blocked (NCCL waits for
     * its timeout) is stopped once this has passed.
     */
    static final Duration SETTLE = Duration.ofSeconds(5);

    /** What tells which failure came first, read once per failure: its output is up to 4 KiB, and a big job's incident has many. */
    private record Order(Stopped stopped, boolean onFailedDevice, boolean lostPeer, Instant at, boolean fromOutside) {
        static Order of(Stopped s) {
            ReplicaEnding ending = s.ending();
            return new Order(s, ending.onFailedDevice(), ending.showsLostPeer(), ending.at() == null ? Instant.MIN : ending.at(),
                    ending.fromOutside());
        }
    }

    private static final Comparator<Order> FIRST = Comparator
            .comparing((Order o) -> o.onFailedDevice() ? 0 : 1)
            .thenComparing(o -> o.lostPeer() ? 1 : 0)
            .thenComparing(Order::at)
            .thenComparing(o -> o.fromOutside() ? 0 : 1)
            .thenComparing(o -> o.stopped().slot().rank());

    /** The incident of these failures (at least one): the first is its cause. */
    static Incident of(List<Stopped> failures) {
        List<Stopped> ordered = failures.stream().map(Order::of).sorted(FIRST).map(Order::stopped).toList();
        return new Incident(ordered.get(0), ordered.subList(1, ordered.size()));
    }

    /**
     * Every rank that stopped says a peer of its group was lost, and none failed on its own: the fault is between
     * them (the network, a rank stopped where no pod shows it, a new rank that reached the old master), never a
     * code error, whatever the exit code.
     */
    boolean onlyLostPeers() {
        return Stream.concat(Stream.of(cause), consequences.stream()).allMatch(s -> s.ending().showsLostPeer());
    }

    /** The replica stopped in this incident, as its cause or a consequence. */
    boolean involves(ReplicaSlot slot) {
        return cause.slot().equals(slot) || consequences.stream().anyMatch(s -> s.slot().equals(slot));
    }

    /** When the verdict stops waiting for replicas still running: {@link #SETTLE} after the first failure with a known time. */
    Optional<Instant> settlesAt() {
        return firstAt().map(at -> at.plus(SETTLE));
    }

    /** When the first of its failures with a known time happened. */
    Optional<Instant> firstAt() {
        return Stream.concat(Stream.of(cause), consequences.stream())
                .map(s -> s.ending().at()).filter(Objects::nonNull).min(Comparator.naturalOrder());
    }

    /** "pod j-worker-0 (container pytorch) exited with code 137 (Error); then j-master-0 (exit code 1) failed too, a consequence". */
    String story() {
        if (consequences.isEmpty()) {
            return cause.ending().summary();
        }
        return cause.ending().summary() + "; then " + consequences.stream().map(Incident::brief).collect(Collectors.joining(", "))
                + (consequences.size() == 1 ? " failed too, a consequence" : " failed too, consequences") + " (not counted)";
    }

    /** What a consequence did, in a few words. */
    private static String brief(Stopped s) {
        ReplicaEnding ending = s.ending();
        String what = switch (ending.cause()) {
            case VANISHED -> "deleted";
            case EVICTED -> "evicted";
            case RESTARTED_IN_PLACE -> ending.exitCode() == null ? "restarted in place" : "exit code " + ending.exitCode() + ", restarted in place";
            case DEVICE_FAILED -> "on a failed device";
            default -> ending.exitCode() == null ? "failed" : "exit code " + ending.exitCode();
        };
        return ending.podName() + " (" + what + ")";
    }
}
