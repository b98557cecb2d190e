package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * How long a failed replica (or a job restarting as a group) waits before its new pods are created, as
 * the kubelet's CrashLoopBackOff does: the first failure restarts at once, the second in a row waits
 * {@code initial}, doubling with each further one up to {@code max}; one that ran at least
 * {@code resetAfter} before failing is a first failure again.
 *
 * <p>{@code dnsCache}: how long the cluster's DNS may go on answering the master's name with its old pod's
 * address (CoreDNS's {@code cache} and the {@code ttl} of its kubernetes records: 30 s in kubeadm's Corefile).
 * A group that restarts soon after its ranks looked that name up waits it out: a new rank given the old
 * address fails its rendezvous ({@code No route to host}), and so does the new master, which looks itself up.
 */
public record RestartBackoff(Duration initial, Duration max, Duration resetAfter, Duration dnsCache) {
    /** Restart at once (tests that are about something else). */
    public static final RestartBackoff NONE = new RestartBackoff(Duration.ZERO, Duration.ZERO, Duration.ofMinutes(10));

    /**
     * The longest a rank is taken to look the master's name up after its container starts (importing PyTorch, loading
     * data, then its rendezvous): a group that ran longer than this looked it up this long after its last start at most.
     */
    static final Duration LOOKUP_AFTER_START = Duration.ofSeconds(60);

    /** No wait for the cluster's DNS (the local mode, which has none; tests about something else). */
    public RestartBackoff(Duration initial, Duration max, Duration resetAfter) {
        this(initial, max, resetAfter, Duration.ZERO);
    }

    /**
     * When the cluster's DNS answers the master's name with its new pod only: {@code dnsCache} after the old group's
     * ranks last looked it up, which is before the first of them failed and at most {@link #LOOKUP_AFTER_START} after the
     * last of their containers started (null when it is not known); empty when nothing is to be waited for.
     */
    public Optional<Instant> oldAddressForgottenAt(Instant lastStart, Instant firstFailure) {
        if (dnsCache == null || dnsCache.isZero() || dnsCache.isNegative() || firstFailure == null) {
            return Optional.empty();
        }
        Instant lastLookup = lastStart == null || lastStart.plus(LOOKUP_AFTER_START).isAfter(firstFailure) ? firstFailure
                : lastStart.plus(LOOKUP_AFTER_START);
        return Optional.of(lastLookup.plus(dnsCache));
    }

    /** The delay before restarting a replica that failed {@code failuresBefore} times in a row before this failure. */
    public Duration delay(int failuresBefore) {
        if (failuresBefore <= 0 || initial.isZero() || initial.isNegative()) {
            return Duration.ZERO;
        }
        Duration delay = initial;
        for (int i = 1; i < failuresBefore && delay.compareTo(max) < 0; i++) {
            delay = delay.multipliedBy(2);
        }
        return delay.compareTo(max) > 0 ? max : delay;
    }
}
