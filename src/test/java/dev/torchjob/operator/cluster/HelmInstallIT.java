package dev.torchjob.operator.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.InstallCommand;
import com.marcnuri.helm.Release;
import com.marcnuri.helm.UpgradeCommand;

import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The Helm commands of the README and docs, run as written with real Helm (helm-java) against a real
 * API server: each documented {@code helm install}, the documented {@code helm upgrade}, and the
 * documented {@code helm uninstall}, which must leave the CRDs. On a control plane of its own: the
 * shared one holds the kustomize install, whose cluster-scoped objects and CRDs Helm would refuse to
 * take over.
 */
class HelmInstallIT {
    private static final Pattern HELM_COMMAND = Pattern.compile("helm (install|upgrade|uninstall) [^`#\\n]*");
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

    /** Every helm command of the README and docs, continuation lines joined, comments dropped, in order. */
    static List<List<String>> documented(String verb) throws IOException {
        List<Path> texts = new ArrayList<>(List.of(Path.of("README.md")));
        try (var docs = Files.list(Path.of("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(texts::add);
        }
        Set<List<String>> commands = new LinkedHashSet<>();
        for (Path text : texts) {
            String joined = Files.readString(text).replaceAll("\\\\\\n\\s*", " ");
            Matcher m = HELM_COMMAND.matcher(joined);
            while (m.find()) {
                if (m.group(1).equals(verb)) {
                    commands.add(List.of(m.group().strip().split("\\s+")));
                }
            }
        }
        return new ArrayList<>(commands);
    }

    @Test
    void theDocumentedInstallUpgradeAndUninstallWorkAsWritten() throws IOException {
        List<List<String>> installs = documented("install");
        List<List<String>> upgrades = documented("upgrade");
        List<List<String>> uninstalls = documented("uninstall");
        assertTrue(installs.size() >= 2 && upgrades.size() == 1 && uninstalls.size() == 1,
                "the README's and install.md's commands: " + installs + upgrades + uninstalls);
        for (List<String> install : installs) {
            Release installed = install(install, plane.adminKubeconfig).call();
            assertEquals("deployed", installed.getStatus(), String.join(" ", install));
            String namespace = installed.getNamespace();
            var deployment = admin.apps().deployments().inNamespace(namespace).withName(installed.getName()).get();
            assertNotNull(deployment, "the operator's Deployment: " + String.join(" ", install));
            String image = deployment.getSpec().getTemplate().getSpec().getContainers().get(0).getImage();
            assertTrue(install.stream().noneMatch(a -> a.startsWith("image.repository=")) || image.startsWith("registry.example.com/torchjob-operator:"),
                    "the image set on the command line: " + image);
            assertNotNull(admin.apiextensions().v1().customResourceDefinitions().withName("pytorchtrainingjobs.batch.tensorstack.dev").get());
            assertNotNull(admin.rbac().clusterRoles().withName(installed.getName()).get(), "the operator's ClusterRole");

            Release upgraded = upgrade(upgrades.get(0), plane.adminKubeconfig).call();
            assertEquals("deployed", upgraded.getStatus());
            assertEquals("2", upgraded.getRevision(), "the upgrade is the release's second revision");

            uninstall(uninstalls.get(0), plane.adminKubeconfig);
            assertNull(admin.apps().deployments().inNamespace(namespace).withName(installed.getName()).get(), "the operator is gone");
            assertNotNull(admin.apiextensions().v1().customResourceDefinitions().withName("pytorchtrainingjobs.batch.tensorstack.dev").get(),
                    "the CRD, and with it every job, stays");
        }
    }

    /** {@code helm install NAME CHART [-n|--namespace NS] [--create-namespace] [--set K=V]...}; anything else fails the test. */
    static InstallCommand install(List<String> args, Path kubeconfig) {
        InstallCommand install = new Helm(Path.of(args.get(3))).install().withName(args.get(2)).withKubeConfig(kubeconfig);
        for (int i = 4; i < args.size(); i++) {
            switch (args.get(i)) {
                case "-n", "--namespace" -> install = install.withNamespace(args.get(++i));
                case "--create-namespace" -> install = install.createNamespace();
                case "--set" -> {
                    String[] value = args.get(++i).split("=", 2);
                    install = install.set(value[0], value[1]);
                }
                default -> throw new AssertionError("the test does not know " + args.get(i) + " of: " + String.join(" ", args));
            }
        }
        return install;
    }

    /** {@code helm upgrade NAME CHART [-n|--namespace NS] [--reuse-values]}. */
    static UpgradeCommand upgrade(List<String> args, Path kubeconfig) {
        UpgradeCommand upgrade = new Helm(Path.of(args.get(3))).upgrade().withName(args.get(2)).withKubeConfig(kubeconfig);
        for (int i = 4; i < args.size(); i++) {
            switch (args.get(i)) {
                case "-n", "--namespace" -> upgrade = upgrade.withNamespace(args.get(++i));
                case "--reuse-values" -> upgrade = upgrade.reuseValues();
                default -> throw new AssertionError("the test does not know " + args.get(i) + " of: " + String.join(" ", args));
            }
        }
        return upgrade;
    }

    /** {@code helm uninstall NAME [-n|--namespace NS]}. */
    static void uninstall(List<String> args, Path kubeconfig) {
        var uninstall = Helm.uninstall(args.get(2)).withKubeConfig(kubeconfig);
        for (int i = 3; i < args.size(); i++) {
            switch (args.get(i)) {
                case "-n", "--namespace" -> uninstall = uninstall.withNamespace(args.get(++i));
                default -> throw new AssertionError("the test does not know " + args.get(i) + " of: " + String.join(" ", args));
            }
        }
        uninstall.call();
    }
}
