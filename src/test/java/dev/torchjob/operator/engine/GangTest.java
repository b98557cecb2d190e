package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/** When a gang scheduler's "cannot schedule" on a job's pods starts to count. */
class GangTest {
    static final Instant NOW = Instant.parse("2026-01-01T00:01:00Z");
    static final Gang GANG = Gang.scheduling(Optional.empty());

    static Pod createdAt(String timestamp) {
        return new PodBuilder().withNewMetadata().withName("p").withCreationTimestamp(timestamp).endMetadata().build();
    }

    @Test
    void withoutAGangSchedulerItCountsAtOnce() {
        assertEquals(Optional.empty(), Gang.NONE.unschedulableCountsFrom(List.of(createdAt(NOW.toString())), false, NOW));
    }

    @Test
    void whileAMemberIsStillToBeCreatedItDoesNotCount() {
        assertEquals(Optional.of(Instant.MAX), GANG.unschedulableCountsFrom(List.of(createdAt("2026-01-01T00:00:00Z")), false, NOW));
    }

    @Test
    void itCountsOnceTheNewestMemberHasExistedForTheSettleTime() {
        List<Pod> members = List.of(createdAt("2026-01-01T00:00:00Z"), createdAt("2026-01-01T00:00:50Z"));
        assertEquals(Optional.of(Instant.parse("2026-01-01T00:00:50Z").plus(Gang.SETTLE)), GANG.unschedulableCountsFrom(members, true, NOW));
        assertEquals(Optional.empty(), GANG.unschedulableCountsFrom(members, true, Instant.parse("2026-01-01T00:00:50Z").plus(Gang.SETTLE)));
    }

    @Test
    void membersWithoutATimeOfCreationCountAtOnce() {
        assertEquals(Optional.empty(), GANG.unschedulableCountsFrom(List.of(createdAt(null), createdAt("not a time")), true, NOW));
    }
}
