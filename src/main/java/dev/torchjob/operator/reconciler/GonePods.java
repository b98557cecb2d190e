package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import io.fabric8.kubernetes.api.model.Pod;
import io.javaoperatorsdk.operator.processing.event.ResourceID;

/**
 * The jobs' pods that left the informer cache lately, as the cache last held them, by job and pod name.
 * A rank stopped from outside can be gone before the next pass: an evicted pod whose process ends on
 * SIGTERM is removed within a second, while its peers' passes are still running. Its last state still
 * says who stopped it and when (the Eviction API's DisruptionTarget, a deletion time), where the pass
 * would otherwise know only its name. Kept for a few minutes (a pass follows a removal within seconds),
 * then dropped, so a finished job's clean-up leaves nothing behind for long.
 */
@ApplicationScoped
public class GonePods {
    static final Duration KEPT_FOR = Duration.ofMinutes(5);

    private record Gone(Pod pod, Instant at) {
    }

    private final Map<ResourceID, Map<String, Gone>> byJob = new ConcurrentHashMap<>();
    private volatile Instant swept = Instant.EPOCH;

    @Inject
    Clock clock;

    /** The pod has left the cache: its last state, for the job's next pass. */
    void left(ResourceID job, Pod pod) {
        Instant now = clock.instant();
        byJob.compute(job, (id, gone) -> {
            Map<String, Gone> kept = gone == null ? new ConcurrentHashMap<>() : gone;
            kept.put(pod.getMetadata().getName(), new Gone(pod, now));
            return kept;
        });
        if (Duration.between(swept, now).compareTo(KEPT_FOR) > 0) {
            swept = now;
            for (ResourceID id : byJob.keySet()) {
                byJob.computeIfPresent(id, (key, gone) -> {
                    gone.values().removeIf(g -> expired(g, now));
                    return gone.isEmpty() ? null : gone;
                });
            }
        }
    }

    /** The job's pods removed lately, by name, as last seen. */
    Map<String, Pod> of(ResourceID job) {
        Map<String, Gone> gone = byJob.get(job);
        if (gone == null) {
            return Map.of();
        }
        Instant now = clock.instant();
        Map<String, Pod> recent = new HashMap<>();
        gone.forEach((name, g) -> {
            if (!expired(g, now)) {
                recent.put(name, g.pod());
            }
        });
        return Map.copyOf(recent);
    }

    /** How many jobs have pods kept: what memory this takes. */
    int jobs() {
        return byJob.size();
    }

    private static boolean expired(Gone gone, Instant now) {
        return Duration.between(gone.at(), now).compareTo(KEPT_FOR) > 0;
    }
}
