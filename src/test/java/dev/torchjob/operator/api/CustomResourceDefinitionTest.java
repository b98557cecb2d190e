package dev.torchjob.operator.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceColumnDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinitionVersion;
import io.fabric8.kubernetes.api.model.apiextensions.v1.JSONSchemaProps;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/**
 * The CRD users install from kubernetes/base/crd/ is the one the build generates (the build writes
 * it during augmentation, before this test runs), and it gives kubectl what users need.
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
class CustomResourceDefinitionTest {
    static final Path GENERATED = Path.of("target/kubernetes/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml");

    @Inject
    KubernetesClient client;

    @Test
    void shippedCrdIsTheGeneratedOne() throws IOException {
        assertEquals(Files.readString(GENERATED), Files.readString(CrdRuleEvaluator.CRD_FILE),
                "kubernetes/base/crd/ is out of date: run ./mvnw package -DskipTests and copy " + GENERATED + " to kubernetes/base/crd/");
    }

    @Test
    void crdIsSmallEnoughForClientSideApply() throws IOException {
        // kubectl apply (client-side) stores the object in an annotation limited to 256 KiB.
        assertTrue(Files.size(CrdRuleEvaluator.CRD_FILE) < 256 * 1024);
    }

    @Test
    void kubectlNamesColumnsAndSubresources() {
        CustomResourceDefinition crd = client.apiextensions().v1().customResourceDefinitions()
                .withName(PyTorchTrainingJob.CRD_NAME).get();
        assertNotNull(crd, "the operator's test profile installs the CRD");
        assertEquals(List.of("pj"), crd.getSpec().getNames().getShortNames());
        assertEquals(List.of("t9k", "trainingjobs"), crd.getSpec().getNames().getCategories());
        assertEquals("Namespaced", crd.getSpec().getScope());
        CustomResourceDefinitionVersion version = crd.getSpec().getVersions().get(0);
        assertEquals("v1beta1", version.getName());
        assertEquals(List.of("PHASE", "RUNNING", "SUCCEEDED", "FAILED", "RESTARTS", "AGE", "STARTED", "COMPLETED", "QUEUE", "LOCALQUEUE"),
                version.getAdditionalPrinterColumns().stream().map(CustomResourceColumnDefinition::getName).toList());
        assertEquals(List.of(0, 0, 0, 0, 0, 0, 1, 1, 1, 1),
                version.getAdditionalPrinterColumns().stream().map(CustomResourceColumnDefinition::getPriority).toList(),
                "STARTED, COMPLETED, QUEUE and LOCALQUEUE show with -o wide");
        assertNotNull(version.getSubresources().getStatus());
        assertEquals(".spec.elastic.expectedReplicas", version.getSubresources().getScale().getSpecReplicasPath());
        assertEquals(".status.elastic.currentReplicas", version.getSubresources().getScale().getStatusReplicasPath());
        assertEquals(".status.selector", version.getSubresources().getScale().getLabelSelectorPath());
    }

    @Test
    void fieldsHaveDescriptionsForKubectlExplainAndTheTemplateStaysOpen() {
        JSONSchemaProps spec = client.apiextensions().v1().customResourceDefinitions().withName(PyTorchTrainingJob.CRD_NAME).get()
                .getSpec().getVersions().get(0).getSchema().getOpenAPIV3Schema().getProperties().get("spec");
        JSONSchemaProps group = spec.getProperties().get("replicaSpecs").getItems().getSchema();
        for (String field : List.of("type", "replicas", "restartPolicy", "template")) {
            assertTrue(group.getProperties().get(field).getDescription().length() > 10, field);
        }
        assertTrue(spec.getProperties().get("runPolicy").getProperties().get("backoffLimit").getDescription().contains("shared"));
        JSONSchemaProps template = group.getProperties().get("template");
        assertTrue(template.getXKubernetesPreserveUnknownFields());
        assertTrue(template.getProperties() == null || template.getProperties().isEmpty(), "no schema for pod templates");
        assertEquals(List.of("Always", "ExitCode", "Never", "OnFailure"),
                group.getProperties().get("restartPolicy").getEnum().stream().map(n -> n.asText()).toList());
        assertEquals(0.0, spec.getProperties().get("runPolicy").getProperties().get("backoffLimit").getMinimum());
        JSONSchemaProps priority = spec.getProperties().get("scheduler").getProperties().get("t9kScheduler").getProperties().get("priority");
        assertEquals(0.0, priority.getMinimum());
        assertEquals(100.0, priority.getMaximum());
    }

    static final Path KUBEFLOW_GENERATED = Path.of("target/kubernetes/pytorchjobs.kubeflow.org-v1.yml");
    static final Path KUBEFLOW_SHIPPED = Path.of("kubernetes/kubeflow/crd/pytorchjobs.kubeflow.org-v1.yml");

    @Test
    void theKubeflowCrdIsTheGeneratedOneAndCompact() throws IOException {
        assertEquals(Files.readString(KUBEFLOW_GENERATED), Files.readString(KUBEFLOW_SHIPPED),
                "kubernetes/kubeflow/crd/ is out of date: run ./mvnw package -DskipTests and copy " + KUBEFLOW_GENERATED);
        assertTrue(Files.size(KUBEFLOW_SHIPPED) < 64 * 1024, "Kubeflow's own is 644 KB; ours keeps the template open");
    }

    @Test
    void thePyTorchJobCrdHasKubeflowsColumnsAndScaleAndNamesThatDoNotClash() throws IOException {
        CustomResourceDefinition crd = client.getKubernetesSerialization().unmarshal(Files.readString(KUBEFLOW_SHIPPED),
                CustomResourceDefinition.class);
        assertEquals("pytorchjobs.kubeflow.org", crd.getMetadata().getName());
        assertEquals(List.of("ptj"), crd.getSpec().getNames().getShortNames(), "Kubeflow's CRD has none");
        assertEquals(List.of("torchjob", "trainingjobs"), crd.getSpec().getNames().getCategories());
        CustomResourceDefinitionVersion version = crd.getSpec().getVersions().get(0);
        assertEquals("v1", version.getName());
        assertEquals(List.of("State", "Restarts", "Age", "Started", "Completed", "Queue"),
                version.getAdditionalPrinterColumns().stream().map(CustomResourceColumnDefinition::getName).toList());
        assertEquals(".status.conditions[-1:].type", version.getAdditionalPrinterColumns().get(0).getJsonPath(),
                "State is the last condition's type, as Kubeflow shows it");
        assertEquals(List.of(0, 1, 0, 1, 1, 1),
                version.getAdditionalPrinterColumns().stream().map(CustomResourceColumnDefinition::getPriority).toList(),
                "kubectl get shows State and Age as Kubeflow's; -o wide adds ours");
        assertEquals(".spec.pytorchReplicaSpecs.Worker.replicas", version.getSubresources().getScale().getSpecReplicasPath());
        assertEquals(".status.replicaStatuses.Worker.active", version.getSubresources().getScale().getStatusReplicasPath());
        assertEquals(".status.replicaStatuses.Worker.selector", version.getSubresources().getScale().getLabelSelectorPath());
        JSONSchemaProps replica = version.getSchema().getOpenAPIV3Schema().getProperties().get("spec").getProperties()
                .get("pytorchReplicaSpecs").getAdditionalProperties().getSchema();
        assertTrue(replica.getProperties().get("template").getXKubernetesPreserveUnknownFields(), "the pod template is open");
        assertEquals(List.of("Always", "ExitCode", "Never", "OnFailure"),
                replica.getProperties().get("restartPolicy").getEnum().stream().map(n -> n.asText()).toList());
    }
}
