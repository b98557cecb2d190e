package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Collection;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * The gang scheduler that places the job's pods, as a pass sees it: whether one does, and whether it
 * holds the pods back until it admits their group ({@code hold}: why, in its words).
 *
 * <p>A gang scheduler places a group only whole, so while the operator is still creating the group its
 * first members are "unschedulable" (Volcano: "pod group is not ready, 7 Pending, 8 minAvailable";
 * coscheduling: "cannot find enough sibling pods"): that says only that the rest are on their way. A
 * member's Unschedulable counts once every member has existed for {@link #SETTLE}, enough for the
 * scheduler to look at the whole group again even under a backlog: with 50 jobs of 8 submitted at once
 * onto Volcano, 35 jobs were otherwise told they could not start, for a second, and nothing was wrong;
 * with 500 jobs and 10 s, Volcano's cycles were long enough that 17 still were.
 */
public record Gang(boolean schedules, Optional<StartBlocker> hold) {
    public static final Gang NONE = new Gang(false, Optional.empty());
    /** How long the whole group has existed before its scheduler's "cannot schedule" is about the group itself. */
    public static final Duration SETTLE = Duration.ofSeconds(30);

    /** A gang scheduler places the pods; {@code hold}: it holds them back until it admits their group, and why. */
    public static Gang scheduling(Optional<StartBlocker> hold) {
        return new Gang(true, hold);
    }

    /**
     * When the group's Unschedulable starts to count: now (empty) without a gang scheduler or once every
     * member has existed for {@link #SETTLE}; {@link Instant#MAX} while a member is still to be created.
     */
    Optional<Instant> unschedulableCountsFrom(Collection<Pod> members, boolean everyMemberExists, Instant now) {
        if (!schedules) {
            return Optional.empty();
        }
        if (!everyMemberExists) {
            return Optional.of(Instant.MAX);
        }
        Instant newest = Instant.MIN;
        for (Pod pod : members) {
            Instant created = created(pod);
            if (created != null && created.isAfter(newest)) {
                newest = created;
            }
        }
        Instant from = newest.equals(Instant.MIN) ? now : newest.plus(SETTLE);
        return now.isBefore(from) ? Optional.of(from) : Optional.empty();
    }

    private static Instant created(Pod pod) {
        String timestamp = pod.getMetadata() == null ? null : pod.getMetadata().getCreationTimestamp();
        try {
            return timestamp == null ? null : Instant.parse(timestamp);
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
