package dev.torchjob.operator.cluster.kwok;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.marcnuri.helm.Release;

import dev.torchjob.operator.cluster.ControlPlane;
import dev.torchjob.operator.cluster.DocumentedHelm;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The Helm commands of the README and docs, run as written with real Helm (helm-java) against a real
 * API server: each documented {@code helm install}, the documented {@code helm upgrade}, and the
 * documented {@code helm uninstall}, which must leave the CRDs. On a control plane of its own: the
 * shared one holds the kustomize install, whose cluster-scoped objects and CRDs Helm would refuse to
 * take over.
 */
class HelmInstallIT {
    static ControlPlane plane;
    static KubernetesClient admin;

    @BeforeAll
    static void controlPlane() {
        plane = ControlPlane.separate("helm");
        admin = plane.admin();
    }

    @AfterAll
    static void stop() {
        if (plane != null) {
            plane.stop();
        }
    }

    @Test
    void theDocumentedInstallUpgradeAndUninstallWorkAsWritten() throws IOException {
        List<List<String>> installs = DocumentedHelm.documented("install");
        List<List<String>> upgrades = DocumentedHelm.documented("upgrade");
        List<List<String>> uninstalls = DocumentedHelm.documented("uninstall");
        assertTrue(installs.size() >= 2 && upgrades.size() == 1 && uninstalls.size() == 1,
                "the README's and install.md's commands: " + installs + upgrades + uninstalls);
        for (List<String> install : installs) {
            Release installed = DocumentedHelm.install(install, plane.adminKubeconfig).call();
            assertEquals("deployed", installed.getStatus(), String.join(" ", install));
            String namespace = installed.getNamespace();
            var deployment = admin.apps().deployments().inNamespace(namespace).withName(installed.getName()).get();
            assertNotNull(deployment, "the operator's Deployment: " + String.join(" ", install));
            String image = deployment.getSpec().getTemplate().getSpec().getContainers().get(0).getImage();
            assertTrue(install.stream().noneMatch(a -> a.startsWith("image.repository=")) || image.startsWith("registry.example.com/torchjob-operator:"),
                    "the image set on the command line: " + image);
            assertNotNull(admin.apiextensions().v1().customResourceDefinitions().withName("pytorchtrainingjobs.batch.tensorstack.dev").get());
            assertNotNull(admin.rbac().clusterRoles().withName(installed.getName()).get(), "the operator's ClusterRole");
            assertNotNull(admin.rbac().clusterRoles().withName(installed.getName() + "-edit").get(), "the users' roles");

            Release upgraded = DocumentedHelm.upgrade(upgrades.get(0), plane.adminKubeconfig).call();
            assertEquals("deployed", upgraded.getStatus());
            assertEquals("2", upgraded.getRevision(), "the upgrade is the release's second revision");

            DocumentedHelm.uninstall(uninstalls.get(0), plane.adminKubeconfig);
            assertNull(admin.apps().deployments().inNamespace(namespace).withName(installed.getName()).get(), "the operator is gone");
            assertNotNull(admin.apiextensions().v1().customResourceDefinitions().withName("pytorchtrainingjobs.batch.tensorstack.dev").get(),
                    "the CRD, and with it every job, stays");
        }
    }
}
