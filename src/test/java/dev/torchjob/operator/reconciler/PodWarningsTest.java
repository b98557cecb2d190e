package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.EventListBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;

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
}
