package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.ZonedDateTime;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.javaoperatorsdk.operator.api.config.LeaderElectionConfiguration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/** What a replica does with the Lease when it stops (ResilienceIT shows the hand-over on a real cluster). */
class LeadershipTest {
    static final String NAMESPACE = "torchjob-system";
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    KubernetesMockServer server;
    KubernetesClient client;

    @BeforeEach
    void apiServer() {
        server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(List.of()), false);
        server.init();
        client = server.createClient();
    }

    @AfterEach
    void stop() {
        client.close();
        server.destroy();
    }

    @Test
    void aLeaderThatStopsGivesItsLeaseBackSoAnotherReplicaTakesItAtOnce() {
        Leadership leadership = new Leadership(true, "torchjob-operator-leader", Optional.of(NAMESPACE), registry);
        LeaderElectionConfiguration configuration = leadership.configuration();
        assertEquals(false, configuration.isExitOnStopLeading(), "JOSDK's own exit deadlocked in the shutdown hook");
        assertEquals(Optional.of(NAMESPACE), configuration.getLeaseNamespace());
        assertEquals(LeaderElectionConfiguration.LEASE_DURATION_DEFAULT_VALUE, configuration.getLeaseDuration());
        String identity = configuration.getIdentity().orElseThrow();
        lease(identity);
        LeaderCallbacks callbacks = configuration.getLeaderCallbacks().orElseThrow();
        callbacks.onStartLeading();
        assertEquals(1.0, leaderGauge());

        leadership.shuttingDown();
        callbacks.onStopLeading(); // JOSDK cancels the elector during shutdown: no exit from here
        leadership.releaseLease(client.getConfiguration());

        Lease released = client.leases().inNamespace(NAMESPACE).withName("torchjob-operator-leader").get();
        assertNull(released.getSpec().getHolderIdentity());
        assertEquals(1, released.getSpec().getLeaseDurationSeconds());
        assertEquals(0.0, leaderGauge());
    }

    @Test
    void aLeaseAnotherReplicaHoldsIsLeftAlone() {
        Leadership leadership = new Leadership(true, "torchjob-operator-leader", Optional.of(NAMESPACE), registry);
        LeaderCallbacks callbacks = leadership.configuration().getLeaderCallbacks().orElseThrow();
        callbacks.onStartLeading();
        lease("another-replica");
        leadership.shuttingDown();
        leadership.releaseLease(client.getConfiguration());

        Lease kept = client.leases().inNamespace(NAMESPACE).withName("torchjob-operator-leader").get();
        assertEquals("another-replica", kept.getSpec().getHolderIdentity());
        assertEquals(15, kept.getSpec().getLeaseDurationSeconds());
    }

    @Test
    void withoutLeaderElectionTheProcessAlwaysLeadsAndTakesNoLease() {
        Leadership leadership = new Leadership(false, "torchjob-operator-leader", Optional.empty(), registry);
        assertNull(leadership.configuration());
        assertEquals(1.0, leaderGauge());
        leadership.shuttingDown();
        leadership.releaseLease(client.getConfiguration());
        assertNull(client.leases().inNamespace(NAMESPACE).withName("torchjob-operator-leader").get());
    }

    private void lease(String holder) {
        client.leases().inNamespace(NAMESPACE).resource(new LeaseBuilder().withNewMetadata().withName("torchjob-operator-leader")
                .withNamespace(NAMESPACE).endMetadata().withNewSpec().withHolderIdentity(holder).withLeaseDurationSeconds(15)
                .withRenewTime(ZonedDateTime.now()).endSpec().build()).create();
    }

    private double leaderGauge() {
        return registry.get("leader_election_master_status").tag("name", "torchjob-operator-leader").gauge().value();
    }
}
