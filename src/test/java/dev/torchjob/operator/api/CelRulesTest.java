package dev.torchjob.operator.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The CRD's CEL rules, evaluated as the API server would (the mock server ignores them). */
class CelRulesTest {
    static CrdRuleEvaluator crd;

    @BeforeAll
    static void load() throws IOException {
        crd = new CrdRuleEvaluator();
    }

    static final String BASE = """
            apiVersion: batch.tensorstack.dev/v1beta1
            kind: PyTorchTrainingJob
            metadata: {name: %s}
            spec:
            %s
              replicaSpecs:
              - type: worker
                replicas: 2
                template: {spec: {containers: [{name: pytorch, image: torch}]}}
            """;

    static Map<String, Object> job(String name, String specLines) throws IOException {
        String indented = specLines.isBlank() ? "" : specLines.indent(2).stripTrailing();
        return CrdRuleEvaluator.parse(BASE.formatted(name, indented));
    }

    static List<String> rejected(String name, String specLines) throws IOException {
        return crd.violations(job(name, specLines));
    }

    static Stream<Path> examples() throws IOException {
        try (Stream<Path> files = Files.walk(Path.of("kubernetes/examples"))) {
            return files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList().stream();
        }
    }

    @Test
    void everyRuleCompilesWithTheStandardMacros() throws Exception {
        assertTrue(crd.compileAll(crd.schema()) >= 10);
    }

    @ParameterizedTest
    @MethodSource("examples")
    void everyShippedExampleIsAccepted(Path example) throws IOException {
        for (String document : Files.readString(example).split("(?m)^---$")) {
            if (document.contains("kind: PyTorchTrainingJob")) {
                assertEquals(List.of(), crd.violations(CrdRuleEvaluator.parse(document)), example.toString());
            }
        }
    }

    @Test
    void acceptsAPlainJob() throws IOException {
        assertEquals(List.of(), rejected("plain", ""));
    }

    @Test
    void replicaTypesMustBeUnique() throws IOException {
        Map<String, Object> job = CrdRuleEvaluator.parse("""
                metadata: {name: dup}
                spec:
                  replicaSpecs:
                  - {type: worker, template: {}}
                  - {type: worker, template: {}}
                """);
        assertEquals(List.of(".spec.replicaSpecs: replicaSpecs[].type must be unique"), crd.violations(job));
    }

    @Test
    void elasticNeedsTorchrunAndOrderedBounds() throws IOException {
        assertTrue(rejected("e", "elastic: {enabled: true, minReplicas: 1, maxReplicas: 3}").stream()
                .anyMatch(v -> v.contains("requires torchrunConfig.enabled")));
        assertTrue(rejected("e", "torchrunConfig: {enabled: true}\nelastic: {enabled: true, minReplicas: 4, maxReplicas: 3}").stream()
                .anyMatch(v -> v.contains("must not exceed")));
        assertTrue(rejected("e", "torchrunConfig: {enabled: true}\nelastic: {enabled: true, minReplicas: 1, maxReplicas: 3, expectedReplicas: 5}")
                .stream().anyMatch(v -> v.contains("between elastic.minReplicas and elastic.maxReplicas")));
        assertTrue(rejected("e", "torchrunConfig: {enabled: true}\nelastic: {enabled: true}").stream()
                .anyMatch(v -> v.contains("needs elastic.minReplicas and elastic.maxReplicas")));
        assertTrue(rejected("e", "torchrunConfig: {enable: true}\nelastic: {enable: true, minReplicas: 1, maxReplicas: 3}").isEmpty(),
                "legacy spelling enable counts as enabled");
    }

    @Test
    void elasticBoundsAreImmutableButExpectedReplicasMayChange() throws IOException {
        String before = "torchrunConfig: {enabled: true}\nelastic: {enabled: true, minReplicas: 2, maxReplicas: 6, expectedReplicas: 3}";
        Map<String, Object> old = job("e", before);
        assertEquals(List.of(), crd.violations(job("e", before.replace("expectedReplicas: 3", "expectedReplicas: 5")), old));
        assertEquals(List.of(".spec.elastic.minReplicas: elastic.minReplicas is immutable"),
                crd.violations(job("e", before.replace("minReplicas: 2", "minReplicas: 1")), old));
        assertEquals(List.of(".spec.elastic.maxReplicas: elastic.maxReplicas is immutable"),
                crd.violations(job("e", before.replace("maxReplicas: 6", "maxReplicas: 8")), old));
    }

    @Test
    void debugModeIsFixedAtCreation() throws IOException {
        Map<String, Object> plain = job("d", "");
        Map<String, Object> debug = job("d", "runMode: {debug: {enabled: true}}");
        assertTrue(crd.violations(debug, plain).stream().anyMatch(v -> v.contains("runMode.debug.enabled is fixed")));
        assertTrue(crd.violations(plain, debug).stream().anyMatch(v -> v.contains("runMode.debug.enabled is fixed")));
        assertEquals(List.of(), crd.violations(job("d", "runMode: {debug: {enabled: false}}"), plain),
                "spelling out the default is no change");
    }

    @Test
    void pauseMayToggleButResumeSpecsAreImmutableOnceSet() throws IOException {
        Map<String, Object> paused = job("p", "runMode: {pause: {enabled: true, resumeSpecs: [{type: worker, command: [sshd]}]}}");
        assertEquals(List.of(), crd.violations(
                job("p", "runMode: {pause: {enabled: false, resumeSpecs: [{type: worker, command: [sshd]}]}}"), paused));
        assertEquals(List.of(".spec.runMode.pause.resumeSpecs: runMode.pause.resumeSpecs is immutable once set"), crd.violations(
                job("p", "runMode: {pause: {enabled: false, resumeSpecs: [{type: worker, command: [bash]}]}}"), paused));
        assertEquals(List.of(), crd.violations(paused, job("p", "runMode: {pause: {enabled: true}}")),
                "setting resumeSpecs the first time is allowed");
    }

    @Test
    void jobNameMustBeADns1035LabelAndPodNamesFit63Characters() throws IOException {
        assertTrue(rejected("1abc", "").stream().anyMatch(v -> v.contains("DNS-1035")));
        assertTrue(rejected("Upper", "").stream().anyMatch(v -> v.contains("DNS-1035")));
        String longName = "j".repeat(54); // j...j-worker-1 is 63 characters
        assertEquals(List.of(), rejected(longName, ""));
        assertTrue(rejected(longName + "j", "").stream().anyMatch(v -> v.contains("at most 63 characters")));
    }

    @Test
    void elasticPodNamesAreCheckedAgainstMaxReplicas() throws IOException {
        String name = "j".repeat(54); // with maxReplicas 11 the last pod is j...j-worker-10: 64 characters
        assertTrue(rejected(name, "torchrunConfig: {enabled: true}\nelastic: {enabled: true, minReplicas: 1, maxReplicas: 11}").stream()
                .anyMatch(v -> v.contains("at most 63 characters")));
    }

    @Test
    void schemaDefaultsAreThoseOfTheSpec() throws IOException {
        @SuppressWarnings("unchecked")
        Map<String, Object> defaulted = (Map<String, Object>) CrdRuleEvaluator.applyDefaults(crd.schema(), CrdRuleEvaluator.parse("""
                spec:
                  runPolicy: {}
                  torchrunConfig: {}
                  replicaSpecs: [{type: worker, template: {}}]
                """));
        @SuppressWarnings("unchecked")
        Map<String, Object> spec = (Map<String, Object>) defaulted.get("spec");
        assertEquals(Map.of("backoffLimit", 3, "cleanUpPolicy", "None"), spec.get("runPolicy"));
        assertEquals(Map.of("enabled", false, "maxRestarts", 0, "procPerNode", "1", "rdzvBackend", "c10d"), spec.get("torchrunConfig"));
        @SuppressWarnings("unchecked")
        Map<String, Object> group = ((List<Map<String, Object>>) spec.get("replicaSpecs")).get(0);
        assertEquals(1, group.get("replicas"));
        assertEquals("OnFailure", group.get("restartPolicy"));
    }
}
