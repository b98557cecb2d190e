package dev.torchjob.operator.engine;

import java.time.Duration;

/**
 * How long a failed replica waits before its new pod is created, as the kubelet's CrashLoopBackOff
 * does: {@code initial}, doubling with each failure in a row up to {@code max}; a replica that ran
 * at least {@code resetAfter} before failing starts again from {@code initial}.
 */
public record RestartBackoff(Duration initial, Duration max, Duration resetAfter) {
    /** Restart at once (tests that are about something else). */
    public static final RestartBackoff NONE = new RestartBackoff(Duration.ZERO, Duration.ZERO, Duration.ofMinutes(10));

    /** The delay before restarting a replica that failed {@code failuresBefore} times in a row before this failure. */
    public Duration delay(int failuresBefore) {
        if (initial.isZero() || initial.isNegative()) {
            return Duration.ZERO;
        }
        Duration delay = initial;
        for (int i = 0; i < failuresBefore && delay.compareTo(max) < 0; i++) {
            delay = delay.multipliedBy(2);
        }
        return delay.compareTo(max) > 0 ? max : delay;
    }
}
