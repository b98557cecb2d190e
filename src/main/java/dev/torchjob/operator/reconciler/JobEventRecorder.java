package dev.torchjob.operator.reconciler;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import io.fabric8.kubernetes.api.model.HasMetadata;
import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * Writes Kubernetes Events for a job. Each event is its own object written directly, with no
 * client-side rate limiting or aggregation, so a terminal event is never dropped.
 */
@ApplicationScoped
public class JobEventRecorder {
    public static final String COMPONENT = "torchjob-operator";
    private static final Logger LOG = Logger.getLogger(JobEventRecorder.class);
    private static final int ATTEMPTS = 3;

    @Inject
    KubernetesClient client;

    private final AtomicLong sequence = new AtomicLong();

    public void record(HasMetadata job, JobEvent event) {
        String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        Event object = new EventBuilder()
                .withNewMetadata()
                // Separated: "<time>" + "<sequence>" alone could spell another event's name (1a2b+12 = 1a2b1+2).
                .withName(job.getMetadata().getName() + "." + Long.toHexString(System.nanoTime()) + "." + sequence.incrementAndGet())
                .withNamespace(job.getMetadata().getNamespace())
                .endMetadata()
                .withNewInvolvedObject()
                .withApiVersion(job.getApiVersion())
                .withKind(job.getKind())
                .withName(job.getMetadata().getName())
                .withNamespace(job.getMetadata().getNamespace())
                .withUid(job.getMetadata().getUid())
                .endInvolvedObject()
                .withType(event.type().name())
                .withReason(event.reason())
                .withMessage(event.message())
                .withFirstTimestamp(now)
                .withLastTimestamp(now)
                .withCount(1)
                .withNewSource(COMPONENT, null)
                .withReportingComponent(COMPONENT)
                .build();
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            try {
                client.v1().events().resource(object).create();
                LOG.debugf("recorded event %s: %s on %s %s", object.getMetadata().getName(), event.reason(), job.getKind(),
                        job.getMetadata().getName());
                return;
            } catch (KubernetesClientException e) {
                if (attempt == ATTEMPTS) {
                    LOG.warnf("could not record event %s on job %s: %s", event.reason(), job.getMetadata().getName(), e.getMessage());
                }
            }
        }
    }
}
