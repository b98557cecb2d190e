package dev.torchjob.operator.engine;

import java.time.Duration;

/**
 * How long a failed replica (or a job restarting as a group) waits before its new pods are created, as
 * the kubelet's CrashLoopBackOff does: the first failure restarts at once, the second in a row waits
 * {@code initial}, doubling with each further one up to {@code max}; one that ran at least
 * {@code resetAfter} before failing is a first failure again.
 */
public record RestartBackoff(Duration initial, Duration max, Duration resetAfter) {
    /** Restart at once (tests that are about something else). */
    public static final RestartBackoff NONE = new RestartBackoff(Duration.ZERO, Duration.ZERO, Duration.ofMinutes(10));

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
