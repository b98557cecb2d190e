package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.torchjob.operator.testing.Kubeconfigs;
import dev.torchjob.operator.testing.PackagedOperator;

/**
 * The first minute with the packaged application: help and version answer at once, and the two
 * mistakes of a first start (no cluster, the port taken) end within seconds with one paragraph.
 */
class CommandLineIT {
    /** Well under the 20 s and 241 lines a start without a cluster used to take. */
    static final Duration QUICKLY = Duration.ofSeconds(10);

    @TempDir
    Path home;

    record Result(int exitCode, String out, String err, Duration took) {
        void saysOneParagraph(String... parts) {
            List<String> lines = err.lines().filter(l -> !l.isBlank()).toList();
            assertEquals(1, lines.size(), err);
            assertTrue(lines.get(0).startsWith("error: "), err);
            for (String part : parts) {
                assertTrue(err.contains(part), "says " + part + ": " + err);
            }
            assertFalse(err.contains("Exception\n") || err.contains("\tat ") || out.contains("\tat "), err + out);
        }
    }

    Result start(Map<String, String> environment, String... arguments) throws Exception {
        return start(Map.of(), environment, arguments);
    }

    Result start(Map<String, String> properties, Map<String, String> environment, String... arguments) throws Exception {
        Path out = home.resolve("out.log");
        Path err = home.resolve("err.log");
        ProcessBuilder builder = new ProcessBuilder(PackagedOperator.command(List.of(), properties, arguments))
                .redirectOutput(out.toFile()).redirectError(err.toFile()).directory(home.toFile());
        // Nothing of this machine's cluster settings: only what the test gives.
        builder.environment().keySet().removeIf(k -> k.startsWith("KUBE") || k.startsWith("QUARKUS_"));
        builder.environment().put("HOME", home.toString());
        builder.environment().put("KUBECONFIG", home.resolve("no-kubeconfig").toString());
        builder.environment().putAll(environment);
        Instant start = Instant.now();
        Process process = builder.start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("still running after 60 s: " + Files.readString(out));
        }
        return new Result(process.exitValue(), Files.readString(out), Files.readString(err), Duration.between(start, Instant.now()));
    }

    @Test
    void helpInEveryFormPrintsTheUsageOfBothModesAndExitsAtOnce() throws Exception {
        for (String asked : List.of("--help", "-h", "help")) {
            Result help = start(Map.of(), asked);
            assertEquals(0, help.exitCode(), asked);
            assertTrue(help.out().contains("usage:") && help.out().contains("run JOB.yaml [--metrics-port PORT]")
                    && help.out().contains("QUARKUS_HTTP_PORT"), help.out());
            assertEquals("", help.err(), asked);
            assertTrue(help.took().compareTo(QUICKLY) < 0, asked + " took " + help.took());
        }
    }

    @Test
    void dryRunPrintsWhatWouldBeCreatedAndStartsNothing() throws Exception {
        Result dryRun = start(Map.of(), "run", Path.of("kubernetes/examples/local/ddp-job.yaml").toAbsolutePath().toString(), "--dry-run");
        assertEquals(0, dryRun.exitCode(), dryRun.err());
        assertTrue(dryRun.out().startsWith("PyTorchTrainingJob ddp-local: 2 pods, Service ddp-local (headless)\n"), dryRun.out());
        assertTrue(dryRun.out().contains("  command: python3 train.py\n") && dryRun.out().contains("  env RANK=1\n"), dryRun.out());
        assertFalse(dryRun.out().contains("[local]") || dryRun.out().contains("[operator]"), "nothing started: " + dryRun.out());
        assertTrue(dryRun.took().compareTo(QUICKLY) < 0, "took " + dryRun.took());
    }

    @Test
    void versionPrintsTheVersion() throws Exception {
        Result version = start(Map.of(), "--version");
        assertEquals(0, version.exitCode());
        assertTrue(version.out().matches("torchjob-operator \\d+\\.\\d+\\.\\d+.*\\n"), version.out());
    }

    @Test
    void withoutAClusterTheOperatorSaysWhatItTriedAndHowToFixItWithinSeconds() throws Exception {
        Result none = start(Map.of("QUARKUS_HTTP_PORT", "0"));
        assertEquals(1, none.exitCode(), none.err());
        none.saysOneParagraph("no Kubernetes cluster reachable", "kubeconfig (" + home.resolve("no-kubeconfig") + ": not found)",
                "in-cluster ServiceAccount (not in a pod)", "KUBECONFIG", "run JOB.yaml");
        assertTrue(none.took().compareTo(QUICKLY) < 0, "took " + none.took());
    }

    @Test
    void aSettingFixedAtBuildTimeIsRefusedInBothModesBeforeAnythingStarts() throws Exception {
        // The JVM would honour these, the native executable would not: the same command must not do two things.
        Result operator = start(Map.of(), Map.of("QUARKUS_KUBERNETES_CLIENT_API_SERVER_URL", "https://10.0.0.1:6443"));
        assertEquals(2, operator.exitCode(), operator.err());
        operator.saysOneParagraph("QUARKUS_KUBERNETES_CLIENT_API_SERVER_URL sets quarkus.kubernetes-client.api-server-url, which is fixed "
                + "when the operator is built", "KUBERNETES_MASTER");
        assertTrue(operator.took().compareTo(QUICKLY) < 0, "took " + operator.took());

        String job = Path.of("kubernetes/examples/local/ddp-job.yaml").toAbsolutePath().toString();
        Result local = start(Map.of("quarkus.log.min-level", "TRACE"), Map.of(), "run", job, "--dry-run");
        assertEquals(2, local.exitCode(), local.err());
        local.saysOneParagraph("-Dquarkus.log.min-level sets quarkus.log.min-level");
        assertEquals("", local.out());

        Result profile = start(Map.of(), Map.of("QUARKUS_PROFILE", "prod,cluster"), "run", job, "--dry-run");
        assertEquals(2, profile.exitCode(), profile.err());
        profile.saysOneParagraph("QUARKUS_PROFILE sets quarkus.profile", "TORCHJOB_LEADER_ELECTION_ENABLED");
    }

    @Test
    void aKubeconfigWhoseServerIsDownSaysSo() throws Exception {
        int closed;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort(); // free again once closed: nothing listens there
        }
        Path kubeconfig = Kubeconfigs.write(home.resolve("kubeconfig"), "https://127.0.0.1:" + closed, null);
        Result down = start(Map.of("KUBECONFIG", kubeconfig.toString(), "QUARKUS_HTTP_PORT", "0"));
        assertEquals(1, down.exitCode(), down.err());
        down.saysOneParagraph("https://127.0.0.1:" + closed + "/ does not answer", "kubeconfig (" + kubeconfig + ")");
        assertTrue(down.took().compareTo(QUICKLY) < 0, "took " + down.took());
    }

    @Test
    void aTakenPortSaysWhichSettingMovesIt() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String port = String.valueOf(taken.getLocalPort());
            Result operator = start(Map.of("QUARKUS_HTTP_PORT", port, "QUARKUS_HTTP_HOST", "127.0.0.1"));
            assertEquals(1, operator.exitCode(), operator.err());
            operator.saysOneParagraph("port " + port + " (health and metrics) is in use", "QUARKUS_HTTP_PORT");

            Path job = home.resolve("job.yaml");
            Files.writeString(job, """
                    apiVersion: batch.tensorstack.dev/v1beta1
                    kind: PyTorchTrainingJob
                    metadata: {name: j}
                    spec:
                      replicaSpecs:
                      - type: master
                        template: {spec: {containers: [{name: pytorch, image: torch, command: ["true"]}]}}
                    """);
            Result local = start(Map.of(), "run", job.toString(), "--metrics-port", port);
            assertEquals(2, local.exitCode(), local.err());
            local.saysOneParagraph("port " + port + " (health and metrics) is in use", "--metrics-port");
        }
    }

    @Test
    void anUnknownArgumentIsRefused() throws IOException, Exception {
        Result unknown = start(Map.of(), "--metrics-port", "9000");
        assertEquals(2, unknown.exitCode());
        unknown.saysOneParagraph("unknown argument --metrics-port", "--help");
    }
}
