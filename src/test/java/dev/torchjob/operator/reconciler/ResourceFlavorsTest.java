package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.kueue.KueueAdmission;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;

/**
 * The ResourceFlavors an admission names give its pods their node labels and tolerations; many admissions in a
 * row (a queue admitting a backlog) read each flavor once per 30 seconds, not once per job.
 */
@EnableKubernetesMockClient(https = false)
class ResourceFlavorsTest {
    KubernetesMockServer server;
    KubernetesClient client;

    static final String FLAVORS = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/";
    static final Instant T0 = Instant.parse("2026-11-29T12:00:00Z");

    /** A clock the test moves. */
    static final class MovingClock extends Clock {
        Instant now = T0;

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    /** A Workload admitted with its master on one flavor and its workers on another. */
    static GenericKubernetesResource admitted(String masterFlavor, String workerFlavor) {
        return new GenericKubernetesResourceBuilder().withApiVersion("kueue.x-k8s.io/v1beta2").withKind("Workload")
                .withNewMetadata().withName("pytorchtrainingjob-j").withNamespace("team-a").endMetadata()
                .addToAdditionalProperties("status", Map.of("admission", Map.of("clusterQueue", "cq", "podSetAssignments", List.of(
                        Map.of("name", "master", "flavors", Map.of("cpu", masterFlavor)),
                        Map.of("name", "worker", "flavors", Map.of("cpu", workerFlavor, "nvidia.com/gpu", workerFlavor))))))
                .build();
    }

    void serve(String name, Map<String, Object> spec) {
        server.expect().get().withPath(FLAVORS + name).andReturn(200, new GenericKubernetesResourceBuilder()
                .withApiVersion("kueue.x-k8s.io/v1beta2").withKind("ResourceFlavor").withNewMetadata().withName(name).endMetadata()
                .addToAdditionalProperties("spec", spec).build()).always();
    }

    @Test
    void eachFlavorIsReadOncePerThirtySecondsWhateverTheNumberOfAdmissions() {
        serve("spot", Map.of("nodeLabels", Map.of("lifecycle", "spot"),
                "tolerations", List.of(Map.of("key", "spot", "operator", "Exists", "effect", "NoSchedule"))));
        serve("a100", Map.of("nodeLabels", Map.of("gpu", "a100")));
        MovingClock clock = new MovingClock();
        ResourceFlavors flavors = new ResourceFlavors(client, clock);
        int before = server.getRequestCount();

        Map<String, KueueAdmission.Flavor> named = flavors.namedIn(admitted("spot", "a100"));
        assertEquals(Map.of("lifecycle", "spot"), named.get("spot").nodeLabels());
        Toleration spot = named.get("spot").tolerations().get(0);
        assertEquals(List.of("spot", "Exists", "NoSchedule"), List.of(spot.getKey(), spot.getOperator(), spot.getEffect()));
        assertEquals(Map.of("gpu", "a100"), named.get("a100").nodeLabels());
        assertEquals(List.of(), named.get("a100").tolerations());
        for (int job = 0; job < 50; job++) {
            clock.now = T0.plusMillis(500L * job);
            assertEquals(named, flavors.namedIn(admitted("spot", "a100")));
        }
        assertEquals(2, server.getRequestCount() - before, "one read per flavor for 50 admissions within 30 s");

        clock.now = T0.plusSeconds(31);
        flavors.namedIn(admitted("spot", "a100"));
        assertEquals(4, server.getRequestCount() - before, "read again once 30 s have passed (a flavor may have been edited)");
    }

    @Test
    void aFlavorThatDoesNotExistIsLeftOutAndARefusedReadNamesTheFlavor() {
        serve("spot", Map.of());
        server.expect().get().withPath(FLAVORS + "h200").andReturn(404, "").always();
        ResourceFlavors flavors = new ResourceFlavors(client, new MovingClock());

        assertEquals(List.of("spot"), List.copyOf(flavors.namedIn(admitted("spot", "h200")).keySet()),
                "left out here; KueueAdmission then says which flavor of which podSet is missing");

        server.expect().get().withPath(FLAVORS + "broken").andReturn(403, "resourceflavors is forbidden").always();
        ApplyFailure failure = assertThrows(ApplyFailure.class, () -> flavors.namedIn(admitted("spot", "broken")));
        assertEquals("FailedAdmission", failure.reason());
        assertTrue(failure.getMessage().startsWith("ResourceFlavor broken: "), failure.getMessage());
    }

    @Test
    void aWorkloadNotYetAdmittedNamesNoFlavor() {
        ResourceFlavors flavors = new ResourceFlavors(client, new MovingClock());
        int before = server.getRequestCount();
        GenericKubernetesResource pending = new GenericKubernetesResourceBuilder().withApiVersion("kueue.x-k8s.io/v1beta2")
                .withKind("Workload").withNewMetadata().withName("w").endMetadata().build();
        assertEquals(Map.of(), flavors.namedIn(pending));
        assertEquals(0, server.getRequestCount() - before);
    }
}
