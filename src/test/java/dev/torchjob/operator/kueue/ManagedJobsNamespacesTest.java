package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * Which namespaces' jobs Kueue manages, from its managedJobsNamespaceSelector written as in Kueue's
 * configuration: the same namespaces as Kubernetes' label selectors pick, and a clear refusal of
 * anything Kueue would not take.
 */
class ManagedJobsNamespacesTest {
    static ManagedJobsNamespaces selector(String text) {
        return ManagedJobsNamespaces.parse(text, Set.of());
    }

    @Test
    void kueuesDefaultLeavesOutKubeSystemAndKueuesOwnNamespaceWithoutReadingAnyNamespace() {
        ManagedJobsNamespaces managed = selector(ManagedJobsNamespaces.KUEUE_DEFAULT);
        assertFalse(managed.needsLabels(), "the name label is the namespace's name: nothing to read");
        assertFalse(managed.manages("kube-system", Map.of()));
        assertFalse(managed.manages("kueue-system", Map.of()));
        assertTrue(managed.manages("team-a", Map.of()));
        assertTrue(managed.manages("default", Map.of("kueue-managed", "false")), "other labels do not matter to it");
        assertEquals("kubernetes.io/metadata.name notin (kube-system,kueue-system)", managed.describe());
    }

    @Test
    void anOptInSelectorManagesOnlyTheNamespacesLabelledSo() {
        ManagedJobsNamespaces managed = selector("{matchLabels: {kueue-managed: \"true\"}}");
        assertTrue(managed.needsLabels());
        assertTrue(managed.manages("team-a", Map.of("kueue-managed", "true", "team", "a")));
        assertFalse(managed.manages("team-b", Map.of("kueue-managed", "false")));
        assertFalse(managed.manages("team-c", Map.of()));
        assertEquals("kueue-managed=true", managed.describe());
    }

    @Test
    void onlyARelabelThatTakesANamespaceInOrOutMattersToItsWaitingJobs() {
        ManagedJobsNamespaces managed = selector("{matchLabels: {kueue-managed: \"true\"}}");
        assertTrue(managed.relabelMatters("team-a", Map.of("kueue-managed", "true"), Map.of()), "left out: a held job may start");
        assertTrue(managed.relabelMatters("team-a", Map.of(), Map.of("kueue-managed", "true")), "taken in");
        assertFalse(managed.relabelMatters("team-a", Map.of("kueue-managed", "true"), Map.of("kueue-managed", "true", "owner", "x")),
                "another label: nothing for its jobs");
        assertFalse(managed.relabelMatters("team-a", Map.of("kueue-managed", "no"), Map.of()), "out before and after");
        assertFalse(ManagedJobsNamespaces.parse("{matchLabels: {kueue-managed: \"true\"}}", Set.of("team-a"))
                .relabelMatters("team-a", Map.of(), Map.of("kueue-managed", "true")), "a namespace named left out stays out");
    }

    @Test
    void everyOperatorOfALabelSelectorPicksAsKubernetesDoes() {
        ManagedJobsNamespaces in = selector("matchExpressions: [{key: tier, operator: In, values: [batch, research]}]");
        assertTrue(in.manages("n", Map.of("tier", "batch")));
        assertFalse(in.manages("n", Map.of("tier", "web")));
        assertFalse(in.manages("n", Map.of()), "In needs the label");
        ManagedJobsNamespaces notIn = selector("matchExpressions: [{key: tier, operator: NotIn, values: [web]}]");
        assertTrue(notIn.manages("n", Map.of()), "NotIn takes a namespace without the label");
        assertFalse(notIn.manages("n", Map.of("tier", "web")));
        ManagedJobsNamespaces exists = selector("{\"matchExpressions\": [{\"key\": \"queued\", \"operator\": \"Exists\"}]}");
        assertTrue(exists.manages("n", Map.of("queued", "")));
        assertFalse(exists.manages("n", Map.of()));
        ManagedJobsNamespaces absent = selector("matchExpressions: [{key: sandbox, operator: DoesNotExist, values: []}]");
        assertTrue(absent.manages("n", Map.of()));
        assertFalse(absent.manages("n", Map.of("sandbox", "yes")));
        assertEquals("!sandbox", absent.describe());
    }

    @Test
    void labelsAndExpressionsMustAllHold() {
        ManagedJobsNamespaces managed = selector("""
                matchLabels:
                  kueue-managed: "true"
                matchExpressions:
                - key: kubernetes.io/metadata.name
                  operator: NotIn
                  values: [kube-system]
                """);
        assertTrue(managed.manages("team-a", Map.of("kueue-managed", "true")));
        assertFalse(managed.manages("kube-system", Map.of("kueue-managed", "true")));
        assertFalse(managed.manages("team-b", Map.of()));
        assertEquals("kueue-managed=true,kubernetes.io/metadata.name notin (kube-system)", managed.describe());
    }

    @Test
    void anEmptySelectorManagesEveryNamespaceAsInKubernetes() {
        ManagedJobsNamespaces managed = selector("{}");
        assertTrue(managed.manages("kube-system", Map.of()));
        assertFalse(managed.needsLabels());
        assertEquals("everything", managed.describe());
    }

    @Test
    void namespacesNamedBesideTheSelectorAreNeverManaged() {
        ManagedJobsNamespaces managed = ManagedJobsNamespaces.parse("{}", Set.of("sandbox"));
        assertFalse(managed.manages("sandbox", Map.of()));
        assertTrue(managed.manages("team-a", Map.of()));
        assertTrue(managed.ignoredMessage("sandbox", "q").contains("TORCHJOB_KUEUE_UNMANAGED_NAMESPACES names it"));
    }

    @Test
    void aJobIgnoredSaysWhichQueueWhyAndWhatToDo() {
        String message = selector("{matchLabels: {kueue-managed: \"true\"}}").ignoredMessage("team-b", "gpu-queue");
        assertTrue(message.contains("kueue.x-k8s.io/queue-name=gpu-queue is ignored") && message.contains("namespace team-b")
                && message.contains("kueue-managed=true") && message.contains("runs without a queue")
                && message.contains("kubectl label namespace team-b"), message);
    }

    @Test
    void whatKueueWouldRefuseIsRefusedNamingWhatIsWrong() {
        Map<String, String> refused = Map.ofEntries(
                Map.entry("kueue-managed=true", "is not a label selector but 'kueue-managed=true'"),
                Map.entry("{matchLabel: {a: b}}", "has the field matchLabel"),
                Map.entry("{matchLabels: [a]}", "matchLabels that are not a map"),
                Map.entry("{matchLabels: {kueue-managed: true}}", "matchLabels.kueue-managed = true: a label's value is a string"),
                Map.entry("{matchExpressions: {key: a}}", "matchExpressions that are not a list"),
                Map.entry("{matchExpressions: [{key: a, operator: in, values: [b]}]}", "matchExpressions[0].operator in, not one of"),
                Map.entry("{matchExpressions: [{operator: Exists}]}", "matchExpressions[0] without a key"),
                Map.entry("{matchExpressions: [{key: a, operator: In}]}", "operator In and no values: it needs at least one"),
                Map.entry("{matchExpressions: [{key: a, operator: Exists, values: [b]}]}", "operator Exists and values: it takes none"),
                Map.entry("{matchExpressions: [{key: a, operator: In, values: [1]}]}", "values that are not a list of strings"),
                Map.entry("{matchExpressions: [{key: a, operator: In, value: [b]}]}", "the field matchExpressions[0].value"),
                Map.entry("{matchLabels: {a: b}", "cannot be read as YAML"));
        refused.forEach((text, problem) -> {
            var e = assertThrows(ManagedJobsNamespaces.Invalid.class, () -> selector(text), text);
            assertTrue(e.getMessage().startsWith("TORCHJOB_KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR (as Kueue's managedJobsNamespaceSelector) ")
                    && e.getMessage().contains(problem) && e.getMessage().contains("{matchLabels: {kueue-managed: \"true\"}}"),
                    text + ": " + e.getMessage());
        });
    }
}
