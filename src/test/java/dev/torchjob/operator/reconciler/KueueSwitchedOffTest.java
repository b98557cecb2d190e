package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.testing.KueueStandIn;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/** An install that switched Kueue off (Helm value kueue.enabled=false, so no Kueue RBAC either). */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
@TestProfile(KueueSwitchedOffTest.KueueOff.class)
class KueueSwitchedOffTest {
    public static class KueueOff implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("torchjob.kueue.enabled", "false");
        }
    }

    @Inject
    KubernetesClient client;

    @Test
    void aQueuedJobWaitsAndSaysTheIntegrationIsOffEvenWithKueueInstalled() {
        KueueStandIn.installNamesOnly(client);
        KueueStandIn kueue = new KueueStandIn(client, "kueue-off");
        OperatorHarness cluster = new OperatorHarness(client, "kueue-off");
        cluster.submit(KueueTest.t9kJob("j", ""));
        cluster.awaitJob("j", j -> "KueueUnavailable".equals(j.getStatus().conditions.stream()
                .filter(c -> JobCondition.QUEUED.equals(c.type)).map(c -> c.reason).findFirst().orElse(null)));
        cluster.awaitEvent("KueueUnavailable", "TORCHJOB_KUEUE_ENABLED=false");
        assertTrue(cluster.condition("j", JobCondition.QUEUED).message.contains("remove the label kueue.x-k8s.io/queue-name"));
        assertEquals(JobPhase.Pending, cluster.job("j").getStatus().phase);
        assertEquals(List.of(), cluster.pods(), "never runs unqueued");
        assertEquals(List.of(), kueue.workloads(), "no Workload: the operator may not even be allowed to write one");
    }
}
