package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.torchjob.operator.testing.ListenPorts;
import dev.torchjob.operator.testing.PackagedOperator;

/**
 * The packaged operator as it runs in a cluster: its production profile plus, normally, the install's
 * run-time settings (leader election), authenticated as the install's ServiceAccount with a token
 * from the TokenRequest API, so a verb missing from kubernetes/base/rbac.yaml fails the test.
 */
public final class OperatorProcess implements BenchmarkedOperator {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final Path kubeconfig;
    public final Path log;
    private final Map<String, String> settings;
    private final boolean leaderElection;
    private final int httpPort = ListenPorts.free();
    private Process process;
    private Duration startToReady;
    /** Plain HTTP/1.1 (no h2c upgrade attempt) and bounded: a request to a process that hangs must not hang the test. */
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    OperatorProcess(Path kubeconfig, Path log, Map<String, String> settings, boolean leaderElection) {
        this.kubeconfig = kubeconfig;
        this.log = log;
        this.settings = settings;
        this.leaderElection = leaderElection;
    }

    public OperatorProcess start() throws IOException {
        // As it runs in its pod: the JVM with its image's options under the Deployment's memory limit,
        // the native executable with the heap settings it was built with.
        List<String> vmOptions = new ArrayList<>(PackagedOperator.shippedVmOptions());
        // Extra JVM options for the operator, e.g. a flight recording of it under the benchmark.
        String jvmOptions = System.getProperty("torchjob.operator.jvm-options", "").strip();
        if (!jvmOptions.isEmpty()) {
            vmOptions.addAll(List.of(jvmOptions.split("\\s+")));
        }
        List<String> command = PackagedOperator.command(vmOptions, settings);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().putAll(PackagedOperator.shippedEnvironment());
        builder.environment().put("KUBECONFIG", kubeconfig.toString());
        // As the install Deployment turns leader election on: a run-time setting, no profile.
        builder.environment().put("TORCHJOB_LEADER_ELECTION_ENABLED", String.valueOf(leaderElection));
        builder.environment().put("TORCHJOB_LEADER_ELECTION_LEASE_NAMESPACE", "torchjob-system");
        builder.environment().put("QUARKUS_HTTP_PORT", String.valueOf(httpPort));
        builder.environment().put("QUARKUS_HTTP_HOST", "127.0.0.1");
        Instant started = Instant.now();
        process = builder.start();
        awaitReady();
        startToReady = Duration.between(started, Instant.now());
        return this;
    }

    /** Ready = the operator's health check passes (it started; leading is {@link #leading()}). */
    private void awaitReady() throws IOException {
        Instant deadline = Instant.now().plus(START_TIMEOUT);
        while (Instant.now().isBefore(deadline)) {
            if (!process.isAlive()) {
                throw new IOException("the operator exited with " + process.exitValue() + "; log: " + tail());
            }
            try {
                if (http.send(request("/q/health/ready"),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
            ControlPlane.sleep(10); // fine enough to measure a native start (docs/testing.md)
        }
        throw new IOException("the operator was not ready within " + START_TIMEOUT + "; log: " + tail());
    }

    /** Alive, and its readiness check passes. */
    public boolean healthy() {
        if (!process.isAlive()) {
            return false;
        }
        try {
            return http.send(request("/q/health/ready"),
                    HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The operator's Prometheus metrics, as scraped. */
    public String metrics() throws IOException, InterruptedException {
        return http.send(request("/q/metrics"),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    private HttpRequest request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path)).timeout(Duration.ofSeconds(10)).build();
    }

    /** Whether this process leads, as its {@code leader_election_master_status} gauge says. */
    public boolean leading() {
        try {
            return metrics().lines().anyMatch(l -> l.startsWith("leader_election_master_status{") && l.endsWith(" 1.0"));
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Waits until this process leads; fails after {@code timeout}. */
    public OperatorProcess awaitLeading(Duration timeout) {
        Instant deadline = Instant.now().plus(timeout);
        while (!leading()) {
            if (Instant.now().isAfter(deadline)) {
                throw new AssertionError("not leading within " + timeout);
            }
            ControlPlane.sleep(50);
        }
        return this;
    }

    /** SIGTERM, as the kubelet stops a pod; how long the process took to exit (it must exit within 30 s). */
    public Duration terminate() throws InterruptedException {
        Instant sent = Instant.now();
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("still running 30 s after SIGTERM");
        }
        return Duration.between(sent, Instant.now());
    }

    /** kill -9: no shutdown hook, no lease release, requests cut wherever they are. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** Freezes the process (SIGSTOP) or thaws it (SIGCONT): its connections stay open but nothing is read. */
    public void signal(String signal) throws IOException, InterruptedException {
        new ProcessBuilder("kill", "-" + signal, String.valueOf(process.pid())).inheritIO().start().waitFor();
    }

    @Override
    public double cpuSeconds() throws IOException {
        return ProcessMeasures.cpuSeconds(process.pid());
    }

    @Override
    public String residentMemory() throws IOException {
        return ProcessMeasures.residentMemory(process.pid());
    }

    /** How long the start took until the readiness check first passed. */
    public Duration startToReady() {
        return startToReady;
    }

    @Override
    public String heapAfterGc() throws IOException, InterruptedException {
        return ProcessMeasures.heapAfterGc(process.pid(), PackagedOperator.isNative(), PackagedOperator.isNative() ? metrics() : "");
    }

    public String tail() throws IOException {
        List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }

    @Override
    public void close() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }
}
