package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HexFormat;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * Writes Kubernetes Events for a job, each its own object with no client-side rate limiting or
 * aggregation. An event's name is derived from what it reports (the job's UID and the caller's
 * identity of the fact), so saying it again creates nothing: the API server refuses the duplicate
 * (409), and a pass that repeats an interrupted one says each thing once.
 */
@ApplicationScoped
public class JobEventRecorder {
    public static final String COMPONENT = "torchjob-operator";
    private static final Logger LOG = Logger.getLogger(JobEventRecorder.class);
    /** An Event's name is a DNS subdomain: the job's name, a dot and 16 hex digits fit in 253. */
    private static final int MAX_NAME = 253;
    private static final int ID_DIGITS = 16;

    @Inject
    @PassClient
    KubernetesClient client;

    /**
     * Creates the event unless one of its identity exists. A refusal that a retry may get past (the
     * server busy or failing, a time-out) is thrown, so that the caller does not go on as if it had
     * been said; a refusal for good (no RBAC for events, the namespace being deleted) is logged and
     * passed over: events never hold a job back.
     */
    public void record(HasMetadata job, JobEvent event, String identity) {
        String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        Event object = new EventBuilder()
                .withNewMetadata()
                .withName(name(job, identity))
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
        try {
            client.v1().events().resource(object).create();
            LOG.debugf("recorded event %s: %s on %s %s", object.getMetadata().getName(), event.reason(), job.getKind(),
                    job.getMetadata().getName());
        } catch (KubernetesClientException e) {
            if (e.getCode() == HttpURLConnection.HTTP_CONFLICT) {
                return; // said before, by a pass that did not get to write what followed
            }
            if (worthRetrying(e) || ApplyFailure.namespaceTerminating(e)) {
                throw e; // (a namespace being deleted: the caller stops, the job goes with it)
            }
            LOG.warnf("could not record event %s on %s %s/%s: %s", event.reason(), job.getKind(), job.getMetadata().getNamespace(),
                    job.getMetadata().getName(), ApplyFailure.serverMessage(e));
        }
    }

    /** No answer, or an answer that says the server could not take it now (429, 5xx). */
    static boolean worthRetrying(KubernetesClientException e) {
        return e.getCode() <= 0 || e.getCode() == 429 || e.getCode() >= 500;
    }

    /** The job's name (cut to fit) and a digest of its UID with the identity: one name per fact said of one job. */
    static String name(HasMetadata job, String identity) {
        String jobName = job.getMetadata().getName();
        if (jobName.length() > MAX_NAME - 1 - ID_DIGITS) {
            jobName = jobName.substring(0, MAX_NAME - 1 - ID_DIGITS).replaceAll("[.-]+$", "");
        }
        return jobName + "." + digest(job.getMetadata().getUid() + "\n" + identity).substring(0, ID_DIGITS);
    }

    private static String digest(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }
}
