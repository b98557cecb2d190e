package dev.torchjob.operator.cluster.kwok;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.cluster.ControlPlane;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.OnTheSharedOperator;
import dev.torchjob.operator.cluster.PrometheusOperatorCrds;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.install.HelmChart;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.testing.UserEdits;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ManagedFieldsEntry;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.utils.Serialization;

/**
 * What only a real API server checks: our CRD's schema, defaults, CEL rules and descriptions as
 * kubectl users meet them, server-side apply field ownership, pruning, the status subresource and
 * generation. The mock server does none of it.
 */
class ApiServerContractIT extends OnTheSharedOperator {
    static final ResourceDefinitionContext JOBS = new ResourceDefinitionContext.Builder()
            .withGroup(PyTorchTrainingJob.GROUP).withVersion(PyTorchTrainingJob.VERSION).withPlural("pytorchtrainingjobs")
            .withKind(PyTorchTrainingJob.KIND).withNamespaced(true).build();

    /** The Kueue examples need Kueue's API: KueueIT applies them once it has installed it. */
    static Stream<Path> examples() throws IOException {
        try (Stream<Path> files = Files.walk(Path.of("kubernetes/examples"))) {
            return files.filter(f -> f.toString().endsWith(".yaml") && !f.startsWith("kubernetes/examples/kueue")).sorted().toList().stream();
        }
    }

    static Stream<Path> invalidJobs() throws IOException {
        try (Stream<Path> files = Files.list(Path.of("src/test/resources/invalid-jobs"))) {
            return files.sorted().toList().stream();
        }
    }

    @ParameterizedTest
    @MethodSource("examples")
    void everyExampleAppliesServerSideWithStrictFieldValidation(Path example) {
        String namespace = install.namespace("example");
        appliesServerSideWithoutWarning(kubectl, namespace, example);
        admin.namespaces().withName(namespace).delete();
    }

    @ParameterizedTest
    @MethodSource("invalidJobs")
    void theApiServerRejectsEachInvalidJobWithOurMessage(Path fixture) throws IOException {
        String namespace = install.namespace("invalid");
        refusedWithOurMessage(kubectl, admin, namespace, fixture);
        admin.namespaces().withName(namespace).delete();
    }

    /** {@code kubectl apply --server-side --validate=strict} of this file: taken, without a warning. */
    static void appliesServerSideWithoutWarning(Kubectl kubectl, String namespace, Path file) {
        Kubectl.Result result = kubectl.run("apply", "--server-side", "--validate=strict", "-n", namespace, "-f", file.toString());
        assertEquals(0, result.exitCode(), file + ": " + result.err());
        assertTrue(result.out().contains("serverside-applied"), result.out());
        assertEquals("", result.err(), "no warnings (unknown or duplicate fields) for " + file);
    }

    /** An invalid job of src/test/resources/invalid-jobs is refused with the message its first line gives; nothing is stored. */
    static void refusedWithOurMessage(Kubectl kubectl, KubernetesClient admin, String namespace, Path fixture) throws IOException {
        String expected = Files.readAllLines(fixture).get(0).replaceFirst("^# rejected: ", "");
        Kubectl.Result result = kubectl.run("apply", "--server-side", "--validate=strict", "-n", namespace, "-f", fixture.toString());
        assertNotEquals(0, result.exitCode(), fixture + " was accepted");
        assertTrue(result.err().contains(expected), fixture + ": expected «" + expected + "» in: " + result.err());
        assertTrue(admin.resources(PyTorchTrainingJob.class).inNamespace(namespace).list().getItems().isEmpty());
    }

    @Test
    void theHelmChartWithEveryValueSetIsAcceptedByTheRealApiServer() throws IOException {
        helmChartWithEveryValueSetIsAccepted(install.cluster);
    }

    /**
     * Every value of the test's values file, the Prometheus Operator's objects included (its CRDs are installed
     * as a cluster with the Prometheus Operator has them). A server-side dry run: schema, RBAC and CRD checks,
     * nothing kept but the namespaces it names.
     */
    static void helmChartWithEveryValueSetIsAccepted(ControlPlane cluster) throws IOException {
        Kubectl kubectl = cluster.kubectl();
        PrometheusOperatorCrds.install(cluster);
        // Its own namespace: torchjob-system holds the kustomize install, whose Deployment selects other labels.
        for (String namespace : List.of("team-a", "team-b", "monitoring", "helm-check")) {
            kubectl.run("create", "namespace", namespace); // already there on a second run: fine
        }
        String rendered = HelmChart.renderText(Path.of("src/test/resources/helm/everything-on.yaml"), Map.of(), "helm-check");
        Path chart = cluster.work.resolve("chart-rendered.yaml");
        Files.writeString(chart, rendered);
        Kubectl.Result result = kubectl.run("apply", "--server-side", "--dry-run=server", "--validate=strict", "--force-conflicts",
                "--field-manager=helm-check", "-f", chart.toString());
        assertEquals(0, result.exitCode(), result.out() + result.err());
        assertEquals("", result.err().trim(), "no warning");
        for (String object : List.of("deployment.apps/torchjob-operator", "role.rbac.authorization.k8s.io/torchjob-operator",
                "clusterrole.rbac.authorization.k8s.io/torchjob-operator-cluster-reads",
                "customresourcedefinition.apiextensions.k8s.io/pytorchjobs.kubeflow.org", "configmap/torchjob-operator-dashboard",
                "servicemonitor.monitoring.coreos.com/torchjob-operator", "prometheusrule.monitoring.coreos.com/torchjob-operator")) {
            assertTrue(result.out().contains(object + " serverside-applied (server dry run)"), object + ": " + result.out());
        }
    }

    @Test
    void fixedFieldsCannotBeChangedWithKubectl() {
        String namespace = install.namespace("immutable");
        fixedFieldsAreRefused(kubectl, namespace);
        admin.namespaces().withName(namespace).delete();
    }

    /** The CEL transition rule: the debug switch cannot change after creation. */
    static void fixedFieldsAreRefused(Kubectl kubectl, String namespace) {
        kubectl.runWithInput(job("fixed", "runMode: {debug: {enabled: false}}"), "apply", "--server-side", "-n", namespace, "-f", "-").orFail();
        Kubectl.Result result = kubectl.run("patch", "pj", "fixed", "-n", namespace, "--type=merge",
                "-p", "{\"spec\":{\"runMode\":{\"debug\":{\"enabled\":true}}}}");
        assertNotEquals(0, result.exitCode());
        assertTrue(result.err().contains("runMode.debug.enabled is fixed"), result.err());
    }

    @Test
    void schemaDefaultsArriveFromTheServer() {
        String namespace = install.namespace("defaults");
        schemaDefaultsArrive(kubectl, admin, namespace);
        admin.namespaces().withName(namespace).delete();
    }

    static void schemaDefaultsArrive(Kubectl kubectl, KubernetesClient admin, String namespace) {
        kubectl.runWithInput(job("defaulted", "runPolicy: {}\ntorchrunConfig: {}"), "apply", "--server-side", "-n", namespace, "-f", "-").orFail();
        // Read untyped: the Java types have the same defaults, so only the raw object proves the server set them.
        GenericKubernetesResource stored = admin.genericKubernetesResources(JOBS).inNamespace(namespace).withName("defaulted").get();
        assertEquals(Map.of("backoffLimit", 3, "cleanUpPolicy", "None"), stored.get("spec", "runPolicy"));
        assertEquals(Map.of("enabled", false, "maxRestarts", 0, "procPerNode", "1", "rdzvBackend", "c10d"), stored.get("spec", "torchrunConfig"));
        assertEquals(1, (Integer) stored.get("spec", "replicaSpecs", 0, "replicas"));
        assertEquals("OnFailure", stored.get("spec", "replicaSpecs", 0, "restartPolicy"));
    }

    @Test
    void kubectlExplainDescribesEveryField() throws IOException {
        Map<String, Object> schema = crdSchema();
        List<String> undocumented = new ArrayList<>();
        explainEachObject("pj", schema, undocumented);
        assertEquals(List.of(), undocumented, "fields that kubectl explain shows without a description");
    }

    /** One kubectl explain per object in the schema: every child it lists must have a description. */
    @SuppressWarnings("unchecked")
    private static void explainEachObject(String path, Map<String, Object> schema, List<String> undocumented) {
        Map<String, Object> properties = (Map<String, Object>) schema.get("properties");
        if (properties == null) {
            return;
        }
        String out = kubectl.run("explain", path).orFail().out();
        List<String> lines = out.lines().toList();
        for (String field : properties.keySet()) {
            int at = -1;
            for (int i = 0; i < lines.size(); i++) {
                if (lines.get(i).matches("^  " + java.util.regex.Pattern.quote(field) + "\\t.*")) {
                    at = i;
                }
            }
            if (path.equals("pj") && List.of("apiVersion", "kind", "metadata").contains(field)) {
                continue;
            }
            if (at < 0 || at + 1 >= lines.size() || lines.get(at + 1).isBlank() || lines.get(at + 1).contains("<no description>")) {
                undocumented.add(path + "." + field);
            }
            Map<String, Object> child = (Map<String, Object>) properties.get(field);
            if ("array".equals(child.get("type"))) {
                child = (Map<String, Object>) child.get("items");
            }
            if (child != null) { // the open pod template has no properties: explained as one field
                explainEachObject(path + "." + field, child, undocumented);
            }
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> crdSchema() throws IOException {
        Path crd = Path.of("kubernetes/base/crd/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml");
        Map<String, Object> object = Serialization.unmarshal(Files.readString(crd), Map.class);
        Map<String, Object> version = ((List<Map<String, Object>>) ((Map<String, Object>) object.get("spec")).get("versions")).get(0);
        return (Map<String, Object>) ((Map<String, Object>) version.get("schema")).get("openAPIV3Schema");
    }

    @Test
    void theUserOwnsTheSpecAndTheOperatorTheStatusUnderServerSideApply() {
        OperatorHarness cluster = install.harness("ownership");
        String namespace = cluster.namespace;
        kubectl.runWithInput(job("owned", "runPolicy: {backoffLimit: 2}"), "apply", "--server-side", "--field-manager=ml-engineer",
                "-n", namespace, "-f", "-").orFail();
        cluster.awaitPhase("owned", JobPhase.Running);

        List<ManagedFieldsEntry> managers = cluster.job("owned").getMetadata().getManagedFields();
        ManagedFieldsEntry user = managers.stream().filter(m -> "ml-engineer".equals(m.getManager())).findFirst().orElseThrow();
        ManagedFieldsEntry operator = managers.stream().filter(m -> "status".equals(m.getSubresource())).findFirst().orElseThrow();
        assertEquals("Apply", operator.getOperation(), "the operator writes its status by server-side apply");
        assertEquals("pytorchtrainingjob", operator.getManager());
        assertTrue(user.getFieldsV1().getAdditionalProperties().containsKey("f:spec"));
        assertFalse(user.getFieldsV1().getAdditionalProperties().containsKey("f:status"));
        assertTrue(operator.getFieldsV1().getAdditionalProperties().containsKey("f:status"));

        // The user re-applies an edited spec: no conflict with the operator's fields, the status stays.
        kubectl.runWithInput(job("owned", "runPolicy: {backoffLimit: 5}"), "apply", "--server-side", "--field-manager=ml-engineer",
                "-n", namespace, "-f", "-").orFail();
        PyTorchTrainingJob edited = cluster.job("owned");
        assertEquals(5, edited.getSpec().runPolicy.backoffLimit);
        assertEquals(JobPhase.Running, edited.getStatus().phase);
        admin.namespaces().withName(namespace).delete();
    }

    @Test
    void unknownFieldsArePrunedOutsideTheOpenPodTemplate() {
        String namespace = install.namespace("pruning");
        GenericKubernetesResource job = Serialization.unmarshal("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: pruned}
                spec:
                  notAField: dropped
                  runPolicy: {backoffLimit: 1, alsoNotAField: dropped}
                  replicaSpecs:
                  - type: worker
                    template:
                      metadata: {annotations: {kept: "yes"}}
                      spec: {containers: [{name: pytorch, image: torch}], futurePodField: kept}
                """, GenericKubernetesResource.class);
        admin.genericKubernetesResources(JOBS).inNamespace(namespace).resource(job).create();
        GenericKubernetesResource stored = admin.genericKubernetesResources(JOBS).inNamespace(namespace).withName("pruned").get();
        Map<String, Object> spec = stored.get("spec");
        assertFalse(spec.containsKey("notAField"));
        assertEquals(Map.of("backoffLimit", 1, "cleanUpPolicy", "None"), spec.get("runPolicy"));
        assertEquals("kept", stored.get("spec", "replicaSpecs", 0, "template", "spec", "futurePodField"),
                "the pod template is open: a field of a newer Kubernetes is kept for the API server to judge");
        admin.namespaces().withName(namespace).delete();
    }

    @Test
    void statusSentWithTheMainResourceIsIgnoredAndGenerationFollowsTheSpec() {
        OperatorHarness cluster = install.harness("subresource");
        String namespace = cluster.namespace;
        GenericKubernetesResource job = Serialization.unmarshal(job("gen", "runPolicy: {backoffLimit: 1}"), GenericKubernetesResource.class);
        job.setAdditionalProperty("status", Map.of("phase", "Succeeded"));
        GenericKubernetesResource created = admin.genericKubernetesResources(JOBS).inNamespace(namespace).resource(job).create();
        assertNull(created.getAdditionalProperties().get("status") instanceof Map<?, ?> m ? m.get("phase") : null,
                "status is written only through the status subresource");
        assertEquals(1L, created.getMetadata().getGeneration());

        cluster.awaitJob("gen", j -> j.getStatus() != null && j.getStatus().observedGeneration != null && j.getStatus().observedGeneration == 1L);
        assertEquals(1L, cluster.job("gen").getMetadata().getGeneration(), "status writes do not bump the generation");

        UserEdits.edit(admin.resources(PyTorchTrainingJob.class).inNamespace(namespace).withName("gen"), j -> {
                    j.getMetadata().setLabels(Map.of("team", "vision"));
                    return j;
                });
        assertEquals(1L, cluster.job("gen").getMetadata().getGeneration(), "metadata edits do not bump the generation");
        UserEdits.edit(admin.resources(PyTorchTrainingJob.class).inNamespace(namespace).withName("gen"), j -> {
                    j.getSpec().runPolicy.backoffLimit = 4;
                    return j;
                });
        assertEquals(2L, cluster.job("gen").getMetadata().getGeneration());
        cluster.awaitJob("gen", j -> j.getStatus().observedGeneration == 2L);
        admin.namespaces().withName(namespace).delete();
    }

    /**
     * Jobs stored while the CRD was looser (an older CRD, or one edited by hand) with a value the
     * operator's types cannot hold, met by an operator started once the CRD is strict again (an upgrade):
     * the informer that reads every job keeps reading, each such job fails InvalidSpec naming the field,
     * and a job submitted next to them runs. The API server cannot apply a status to a job its schema no
     * longer types, so the status is written by update.
     */
    @Test
    void jobsStoredBeyondTheSchemaFailAloneAndTheOthersCarryOn() throws InterruptedException {
        OperatorHarness cluster = install.harness("unreadable");
        install.stopSharedOperator();
        String properties = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
        kubectl.run("patch", "crd", "pytorchtrainingjobs.batch.tensorstack.dev", "--type=json", "-p", """
                [{"op": "remove", "path": "%1$s/replicaSpecs/items/properties/replicas/maximum"},
                 {"op": "replace", "path": "%1$s/runPolicy/properties/backoffLimit",
                  "value": {"x-kubernetes-int-or-string": true, "description": "loosened by the test"}}]
                """.formatted(properties)).orFail();
        try {
            GenericKubernetesResource huge = Serialization.unmarshal(job("huge", "runPolicy: {backoffLimit: 1}")
                    .replace("  - type: worker\n", "  - type: worker\n    replicas: 2147483648\n"), GenericKubernetesResource.class);
            GenericKubernetesResource wordy = Serialization.unmarshal(job("wordy", "runPolicy: {backoffLimit: three}"),
                    GenericKubernetesResource.class);
            // The API server takes the loosened schema a moment later.
            for (GenericKubernetesResource job : List.of(huge, wordy)) {
                org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).ignoreExceptions()
                        .until(() -> admin.genericKubernetesResources(JOBS).inNamespace(cluster.namespace).resource(job).create() != null);
            }
        } finally {
            try {
                kubectl.run("apply", "--server-side", "--force-conflicts", "-f", "kubernetes/base/crd/").orFail();
                // The strict schema taken: a job like "wordy" is refused again.
                org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() -> kubectl.runWithInput(
                        job("again", "runPolicy: {backoffLimit: three}"), "create", "--dry-run=server", "-n", cluster.namespace, "-f", "-")
                        .exitCode() != 0);
            } finally {
                install.operator();
            }
        }
        cluster.submit(job("ok", "runPolicy: {backoffLimit: 1}"));
        cluster.awaitPodNames("ok-worker-0");
        Map<String, String> expected = Map.of(
                "huge", "spec.replicaSpecs[0].replicas must be at most 1000 (found 2147483647 or more)",
                "wordy", "spec.runPolicy.backoffLimit cannot be read: ");
        expected.forEach((name, message) -> {
            PyTorchTrainingJob failed = cluster.awaitPhase(name, JobPhase.Failed);
            assertEquals("InvalidSpec", cluster.condition(name, "Failed").reason);
            assertTrue(cluster.condition(name, "Failed").message.contains(message), cluster.condition(name, "Failed").message);
            assertTrue(failed.getStatus().tasks.isEmpty(), "nothing was built per replica");
            assertTrue(cluster.pods().stream().noneMatch(p -> p.getMetadata().getName().startsWith(name + "-")));
        });
        admin.namespaces().withName(cluster.namespace).delete();
    }

    /** A one-worker job with extra spec lines (YAML, two-space indented under spec). */
    static String job(String name, String specLines) {
        return """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %s}
                spec:
                %s
                  replicaSpecs:
                  - type: worker
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                """.formatted(name, specLines.indent(2).stripTrailing());
    }
}
