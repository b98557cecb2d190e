package dev.torchjob.operator.main;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** What the operator refuses at start: settings only the JVM would honour, each with what to do instead. */
class BuildTimeSettingsTest {
    @Test
    void theClusterAddressOfTheQuarkusClientIsRefusedWithTheClientsOwnKeysAsTheWayOut() {
        assertEquals(List.of("error: QUARKUS_KUBERNETES_CLIENT_API_SERVER_URL sets quarkus.kubernetes-client.api-server-url, which is"
                + " fixed when the operator is built: the native executable would ignore it, so the operator refuses it. Point the"
                + " operator at a cluster with a kubeconfig (KUBECONFIG), the client's own KUBERNETES_MASTER and KUBERNETES_NAMESPACE,"
                + " or its ServiceAccount."),
                BuildTimeSettings.givenAtRunTime(Map.of("QUARKUS_KUBERNETES_CLIENT_API_SERVER_URL", "https://10.0.0.1"), Map.of()));
    }

    @Test
    void propertiesMapKeysAndTheProfileAreRefusedTooEachOnItsLine() {
        List<String> refused = BuildTimeSettings.givenAtRunTime(Map.of("QUARKUS_PROFILE", "prod,cluster"),
                Map.of("quarkus.log.category.\"io.fabric8\".min-level", "TRACE", "quarkus.operator-sdk.enable-ssa", "false"));
        assertEquals(3, refused.size(), refused.toString());
        assertEquals(true, refused.get(0).startsWith("error: -Dquarkus.log.category.\"io.fabric8\".min-level sets "
                + "quarkus.log.category.\"categories\".min-level"), refused.get(0));
        assertEquals(true, refused.get(1).startsWith("error: -Dquarkus.operator-sdk.enable-ssa sets quarkus.operator-sdk.enable-ssa"),
                refused.get(1));
        assertEquals(true, refused.get(2).startsWith("error: QUARKUS_PROFILE sets quarkus.profile") && refused.get(2)
                .endsWith("Leader election is TORCHJOB_LEADER_ELECTION_ENABLED; every other setting is read at start without a profile."),
                refused.get(2));
    }

    @Test
    void everySettingTheDocsAndTheChartGiveAtRunTimePasses() {
        Map<String, String> environment = Map.of("QUARKUS_HTTP_PORT", "8080", "QUARKUS_HTTP_HOST", "0.0.0.0", "QUARKUS_LOG_LEVEL", "DEBUG",
                "QUARKUS_LOG_CATEGORY__DEV_TORCHJOB__LEVEL", "DEBUG", "QUARKUS_OPERATOR_SDK_CONTROLLERS_PYTORCHTRAININGJOB_NAMESPACES", "a,b",
                "QUARKUS_OPERATOR_SDK_CONCURRENT_RECONCILIATION_THREADS", "10", "TORCHJOB_LEADER_ELECTION_ENABLED", "true",
                "KUBERNETES_MASTER", "https://10.0.0.1", "KUBECONFIG", "/k", "PATH", "/bin");
        Map<String, String> properties = Map.of("quarkus.http.port", "0", "quarkus.log.category.\"dev.torchjob\".level", "DEBUG",
                "java.home", "/jdk", "kubernetes.master", "http://127.0.0.1:1");
        assertEquals(List.of(), BuildTimeSettings.givenAtRunTime(environment, properties));
    }
}
