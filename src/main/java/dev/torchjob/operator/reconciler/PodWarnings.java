package dev.torchjob.operator.reconciler;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import dev.torchjob.operator.apiserver.ClosedConnection;
import dev.torchjob.operator.engine.StartBlocker;
import dev.torchjob.operator.engine.StartBlocker.PodWarning;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * The Warning events of a job's pods that have been creating their containers for a while with no
 * reason in their status ({@link StartBlocker#needsWarnings}): a volume that cannot be mounted is said
 * nowhere else. One list per such pod, by its UID, from the API server's watch cache, and again only
 * {@link StartBlocker#LOOK_AT_WARNINGS_EVERY} later, however many passes its job has in between (a
 * backlog of thousands of scheduled pods a busy kubelet has not started would otherwise cost a list per
 * pod per pass); no pod of a healthy job is ever looked up. A look-up that fails leaves the pod out
 * (what the status last said of it holds): events never hold a job back.
 */
@ApplicationScoped
public class PodWarnings {
    private static final Logger LOG = Logger.getLogger(PodWarnings.class);

    @Inject
    @PassClient
    KubernetesClient client;

    private final AtomicBoolean refusalLogged = new AtomicBoolean();

    /** A pod's warnings as last read, by pod UID; forgotten once not asked for a while. */
    private final Map<String, LookedUp> lookedUp = new ConcurrentHashMap<>();
    private volatile Instant nextForget = Instant.MIN;

    private record LookedUp(Instant at, List<PodWarning> warnings) {
    }

    /** By pod UID, the pods looked up and their Warning events. */
    public Map<String, List<PodWarning>> of(Collection<Pod> pods, Instant now) {
        forgetOld(now);
        Map<String, List<PodWarning>> warnings = new LinkedHashMap<>();
        for (Pod pod : pods) {
            String uid = pod.getMetadata().getUid();
            if (uid == null || !StartBlocker.needsWarnings(pod, now)) {
                continue;
            }
            LookedUp last = lookedUp.get(uid);
            if (last != null && now.isBefore(last.at().plus(StartBlocker.LOOK_AT_WARNINGS_EVERY))) {
                warnings.put(uid, last.warnings());
                continue;
            }
            try {
                List<Event> events = client.v1().events().inNamespace(pod.getMetadata().getNamespace())
                        .withField("involvedObject.uid", uid)
                        .withField("type", "Warning")
                        .list(new ListOptionsBuilder().withResourceVersion("0").build()).getItems();
                List<PodWarning> found = events.stream()
                        // As asked: a server that ignores field selectors must not lend the pod another object's words.
                        .filter(e -> e.getInvolvedObject() != null && uid.equals(e.getInvolvedObject().getUid()) && "Warning".equals(e.getType()))
                        .map(e -> new PodWarning(uid, e.getReason(), e.getMessage(), lastSeen(e))).toList();
                lookedUp.put(uid, new LookedUp(now, found));
                warnings.put(uid, found);
            } catch (KubernetesClientException e) {
                if (ClosedConnection.underTheCall(e)) {
                    // No answer, nothing refused: the next pass asks again (nothing was remembered as looked up).
                    LOG.debugf("the Warning events of pod %s were not read: %s", pod.getMetadata().getName(), e.getMessage());
                } else if (refusalLogged.compareAndSet(false, true)) {
                    // Said once per process: an install whose role lacks "list events" still runs every job.
                    LOG.warnf("cannot read the Warning events of pods that are slow to start (%s): jobs say only what the pods' "
                            + "status says of why they are not starting", ApplyFailure.serverMessage(e));
                }
            }
        }
        return warnings;
    }

    /** Pods no pass asked about for two periods have started, gone or been said: their look-ups are dropped. */
    private void forgetOld(Instant now) {
        if (now.isBefore(nextForget)) {
            return;
        }
        nextForget = now.plus(StartBlocker.LOOK_AT_WARNINGS_EVERY);
        Instant stale = now.minus(StartBlocker.LOOK_AT_WARNINGS_EVERY.multipliedBy(2));
        lookedUp.values().removeIf(l -> l.at().isBefore(stale));
    }

    /** When the event was last seen: its series, else lastTimestamp, else eventTime. */
    private static Instant lastSeen(Event event) {
        return Optional.ofNullable(event.getSeries() == null ? null : event.getSeries().getLastObservedTime())
                .map(t -> t.getTime()).or(() -> Optional.ofNullable(event.getLastTimestamp()))
                .or(() -> Optional.ofNullable(event.getEventTime() == null ? null : event.getEventTime().getTime()))
                .map(PodWarnings::instant).orElse(null);
    }

    private static Instant instant(String time) {
        try {
            return OffsetDateTime.parse(time).toInstant();
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
