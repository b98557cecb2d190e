package dev.torchjob.operator.cluster.kwok;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.cluster.OperatorContainer;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.testing.ListenPorts;
import dev.torchjob.operator.testing.PackagedOperator;
import io.fabric8.kubernetes.api.model.ServiceAccountBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The image the operator ships in, built from the repository's Containerfile and run as the
 * install's Deployment runs its pod (see {@link OperatorContainer}) against the real control plane:
 * it leads, reconciles a job to Succeeded, serves health and metrics, and stops on SIGTERM; without
 * an API server or without its RBAC it says so in one line and exits non-zero.
 */
class ContainerImageIT {
    static OperatorInstall install;
    static KubernetesClient admin;

    @BeforeAll
    static void image() throws InterruptedException {
        Duration build = OperatorContainer.build();
        System.out.printf("[image] %s built from %s in %.1f s: %.1f MB%n", OperatorContainer.IMAGE, OperatorContainer.containerfile(),
                build.toMillis() / 1000.0, OperatorContainer.imageSize() / 1e6);
        // The sizes issue 37 set: the native executable with only the C libraries it links, no shell;
        // the JVM image with a Java runtime of only the modules the operator uses.
        if (PackagedOperator.isNative()) {
            assertTrue(OperatorContainer.imageSize() <= 100_000_000, "native image at most 100 MB: " + OperatorContainer.imageSize());
            assertNotEquals(0, OperatorContainer.Podman.run(Duration.ofSeconds(30), "podman", "run", "--rm", "--entrypoint", "/bin/sh", OperatorContainer.IMAGE,
                    "-c", "true").exitCode(), "no shell in the native image");
        } else {
            assertTrue(OperatorContainer.imageSize() <= 250_000_000, "JVM image at most 250 MB: " + OperatorContainer.imageSize());
        }
        install = OperatorInstall.get();
        admin = install.cluster.admin();
        // The container is the only operator while these tests run.
        install.stopSharedOperator();
    }

    @AfterAll
    static void sharedOperatorBack() {
        install.operator();
    }

    @Test
    void runsAsTheDeploymentRunsItsPodReconcilesAJobAndStopsOnSigterm() throws Exception {
        String token = OperatorInstall.token(install.cluster, OperatorInstall.SERVICE_ACCOUNT);
        try (OperatorContainer container = OperatorContainer.start("torchjob-operator-it", install.cluster, token, Map.of())) {
            Duration ready = container.awaitOk("/q/health/ready", Duration.ofSeconds(60));
            System.out.printf("[image] start to ready %d ms, RSS at ready %s%n", ready.toMillis(), container.status("VmRSS"));
            assertTrue(container.status("Uid").startsWith("1001\t"), "runs as the Deployment's user: " + container.status("Uid"));
            container.awaitLeading(Duration.ofSeconds(30));

            OperatorHarness cluster = install.harness("image").runJob("OnFailure", "{backoffLimit: 3}");
            cluster.kubelet.exit("j-worker-0", 0);
            cluster.kubelet.exit("j-worker-1", 0);
            cluster.kubelet.exit("j-master-0", 0);
            cluster.awaitPhase("j", JobPhase.Succeeded);

            assertEquals(200, container.get("/q/health/live").statusCode());
            String metrics = container.get("/q/metrics").body();
            assertTrue(metrics.contains("pytorchtrainingjob_"), "the operator's metrics are served");
            assertTrue(metrics.contains("jvm_memory_used_bytes"), "runtime metrics are served");
            System.out.printf("[image] after one job: RSS %s, peak %s%n", container.status("VmRSS"), container.status("VmHWM"));

            Duration stop = container.terminate();
            String logs = container.logs();
            System.out.printf("[image] SIGTERM to exit %d ms, exit code %d%n", stop.toMillis(), container.exitCode());
            assertTrue(stop.compareTo(Duration.ofSeconds(15)) < 0, "exits well inside the pod's 30 s grace period, took " + stop);
            assertFalse(logs.contains("\tat "), "no stack trace in the log:\n" + logs);
            Lease lease = admin.leases().inNamespace(OperatorInstall.OPERATOR_NAMESPACE).withName("torchjob-operator-leader").get();
            assertTrue(lease == null || lease.getSpec().getHolderIdentity() == null || lease.getSpec().getHolderIdentity().isEmpty(),
                    "the Lease is handed back: " + (lease == null ? null : lease.getSpec()));
        }
    }

    @Test
    void withoutTheApiServerItSaysSoInOneLineAndExits() throws Exception {
        String token = OperatorInstall.token(install.cluster, OperatorInstall.SERVICE_ACCOUNT);
        int closed = ListenPorts.free();
        var result = OperatorContainer.runToEnd("torchjob-operator-it-offline", install.cluster, token,
                Map.of("KUBERNETES_SERVICE_PORT", String.valueOf(closed)), Duration.ofSeconds(60));
        assertNotEquals(0, result.exitCode(), result.out());
        assertOneErrorLine(result.out(), "no Kubernetes cluster reachable");
    }

    @Test
    void withoutRbacItSaysSoInOneLineAndExits() throws Exception {
        admin.serviceAccounts().inNamespace(OperatorInstall.OPERATOR_NAMESPACE).resource(new ServiceAccountBuilder()
                .withNewMetadata().withName("no-rights").endMetadata().build()).serverSideApply();
        String token = OperatorInstall.token(install.cluster, "no-rights");
        var result = OperatorContainer.runToEnd("torchjob-operator-it-norbac", install.cluster, token, Map.of(), Duration.ofSeconds(90));
        assertNotEquals(0, result.exitCode(), result.out());
        assertOneErrorLine(result.out(), "forbidden");
    }

    private static void assertOneErrorLine(String output, String says) {
        List<String> errors = output.lines().filter(l -> l.toLowerCase().contains("error")).toList();
        assertEquals(1, errors.size(), "one line says what is wrong:\n" + output);
        assertTrue(errors.get(0).contains(says), "it says " + says + ": " + errors.get(0));
        assertFalse(output.contains("\tat "), "no stack trace:\n" + output);
        System.out.println("[image] " + (PackagedOperator.isNative() ? "native" : "JVM") + ": " + errors.get(0));
    }
}
