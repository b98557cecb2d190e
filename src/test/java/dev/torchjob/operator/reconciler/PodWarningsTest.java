package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.testing.ScriptedApiServer;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.EventListBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;

/**
 * A pod slow to start has its Warning events read once a minute, not at every pass of its job; a pod no kubelet
 * has reported on yet (a backlog on a busy node: no container status) has none to read. Thousands of pending
 * pods must not cost the API server a list per pod per pass.
 */
@EnableKubernetesMockClient(https = false)
class PodWarningsTest {
    KubernetesMockServer server;
    KubernetesClient client;

    static final Instant SCHEDULED = Instant.parse("2026-11-28T12:00:00Z");

    /** Scheduled, and its kubelet reports its container as being created (or has not reported yet). */
    static Pod scheduledNotStarted(String name, String uid, boolean kubeletReported) {
        Pod pod = new PodBuilder().withNewMetadata().withName(name).withNamespace("team-a").withUid(uid).endMetadata()
                .withNewStatus().withPhase("Pending")
                .addNewCondition().withType("PodScheduled").withStatus("True").withLastTransitionTime(SCHEDULED.toString()).endCondition()
                .endStatus().build();
        if (kubeletReported) {
            pod.getStatus().getContainerStatuses().add(new ContainerStatusBuilder().withName("pytorch")
                    .withNewState().withNewWaiting().withReason("ContainerCreating").endWaiting().endState().build());
        }
        return pod;
    }

    String eventsOf(String uid) {
        return "/api/v1/namespaces/team-a/events?fieldSelector=involvedObject.uid%3D" + uid + "%2Ctype%3DWarning&resourceVersion=0";
    }

    @Test
    void eachWaitingPodsEventsAreListedOncePerMinuteWhateverTheNumberOfPasses() {
        for (String uid : List.of("u0", "u1")) {
            server.expect().get().withPath(eventsOf(uid)).andReturn(200, new EventListBuilder().addToItems(new EventBuilder()
                    .withType("Warning").withReason("FailedMount").withMessage("configmap \"data\" not found")
                    .withNewInvolvedObject().withUid(uid).endInvolvedObject().withLastTimestamp(SCHEDULED.plusSeconds(5).toString())
                    .build()).build()).always();
        }
        PodWarnings warnings = new PodWarnings();
        warnings.client = client;
        List<Pod> pods = List.of(scheduledNotStarted("j-worker-0", "u0", true), scheduledNotStarted("j-worker-1", "u1", true),
                scheduledNotStarted("j-worker-2", "u2", false));
        int before = server.getRequestCount();

        assertEquals(0, warnings.of(pods, SCHEDULED.plusSeconds(10)).size(), "not looked at in the first 20 s");
        var first = warnings.of(pods, SCHEDULED.plusSeconds(20));
        assertEquals("FailedMount", first.get("u1").get(0).reason());
        for (int second = 21; second < 80; second += 3) {
            assertEquals(first, warnings.of(pods, SCHEDULED.plusSeconds(second)), "what was read holds until the next look");
        }
        assertEquals(2, server.getRequestCount() - before, "one list per pod in the first minute of passes, none for the pod no kubelet reported on");

        warnings.of(pods, SCHEDULED.plusSeconds(80));
        assertEquals(4, server.getRequestCount() - before, "looked at again a minute later");
    }

    /**
     * A look-up whose connection closed before any answer was refused by nobody: the next pass asks again
     * (not a minute later), and the log does not spend its one warning about a role without "list events" on it.
     */
    @Test
    void aLookUpWhoseConnectionClosedIsAskedAgainAndTakenForNoRefusal() throws Exception {
        String teamA = "/api/v1/namespaces/team-a/events";
        String teamB = "/api/v1/namespaces/team-b/events";
        List<java.util.logging.LogRecord> said = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler log = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                if (record.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    said.add(record);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger logger = java.util.logging.Logger.getLogger(PodWarnings.class.getName());
        logger.addHandler(log);
        try (ScriptedApiServer apiServer = new ScriptedApiServer();
                KubernetesClient scripted = new KubernetesClientBuilder().withConfig(new ConfigBuilder().withMasterUrl(apiServer.url())
                        .withRequestRetryBackoffLimit(0).build()).build()) {
            apiServer.dropNext(teamA, 1)
                    .answer(teamA, 200, Serialization.asJson(new EventListBuilder().addToItems(new EventBuilder().withType("Warning")
                            .withReason("FailedMount").withMessage("configmap \"data\" not found").withNewInvolvedObject().withUid("u0")
                            .endInvolvedObject().withLastTimestamp(SCHEDULED.plusSeconds(5).toString()).build()).build()))
                    .answer(teamB, 403, Serialization.asJson(new StatusBuilder().withCode(403).withReason("Forbidden")
                            .withMessage("events is forbidden").build()));
            PodWarnings warnings = new PodWarnings();
            warnings.client = scripted;
            List<Pod> pods = List.of(scheduledNotStarted("j-worker-0", "u0", true));

            assertEquals(Map.of(), warnings.of(pods, SCHEDULED.plusSeconds(20)), "no answer: nothing read");
            assertEquals(List.of(), said.stream().map(java.util.logging.LogRecord::getMessage).toList());
            assertEquals("FailedMount", warnings.of(pods, SCHEDULED.plusSeconds(23)).get("u0").get(0).reason(), "asked again by the next pass");
            assertEquals(List.of(teamA, teamA), apiServer.requested().stream().map(p -> p.substring(0, p.indexOf('?'))).toList());

            Pod elsewhere = scheduledNotStarted("k-worker-0", "u9", true);
            elsewhere.getMetadata().setNamespace("team-b");
            warnings.of(List.of(elsewhere), SCHEDULED.plusSeconds(23));
            assertEquals(1, said.size(), "a refusal is said: " + said.stream().map(java.util.logging.LogRecord::getMessage).toList());
        } finally {
            logger.removeHandler(log);
        }
    }
}
