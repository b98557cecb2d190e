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

import dev.torchjob.operator.testing.PackagedOperator;

/**
 * The packaged operator as it runs in a cluster: its production profile plus, normally, the install's
 * run-time settings (leader election), authenticated as the install's ServiceAccount with a token
 * from the TokenRequest API, so a verb missing from kubernetes/rbac.yaml fails the test.
 */
public final class OperatorProcess implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final Path kubeconfig;
    final Path log;
    private final Map<String, String> settings;
    private final boolean leaderElection;
    private final int httpPort = ControlPlane.freePort();
    private Process process;

    OperatorProcess(Path kubeconfig, Path log, Map<String, String> settings, boolean leaderElection) {
        this.kubeconfig = kubeconfig;
        this.log = log;
        this.settings = settings;
        this.leaderElection = leaderElection;
    }

    public OperatorProcess start() throws IOException {
        List<String> vmOptions = new ArrayList<>(List.of("-Xmx512m"));
        // Extra JVM options for the operator, e.g. a flight recording of it under the benchmark.
        String jvmOptions = System.getProperty("torchjob.operator.jvm-options", "").strip();
        if (!jvmOptions.isEmpty()) {
            vmOptions.addAll(List.of(jvmOptions.split("\\s+")));
        }
        List<String> command = PackagedOperator.command(vmOptions, settings);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().put("KUBECONFIG", kubeconfig.toString());
        // As the install Deployment turns leader election on: a run-time setting, no profile.
        builder.environment().put("TORCHJOB_LEADER_ELECTION_ENABLED", String.valueOf(leaderElection));
        builder.environment().put("TORCHJOB_LEADER_ELECTION_LEASE_NAMESPACE", "torchjob-system");
        builder.environment().put("QUARKUS_HTTP_PORT", String.valueOf(httpPort));
        builder.environment().put("QUARKUS_HTTP_HOST", "127.0.0.1");
        process = builder.start();
        awaitReady();
        return this;
    }

    /** Ready = the operator's health check says its informers are synced (it holds the lease). */
    private void awaitReady() throws IOException {
        HttpClient http = HttpClient.newHttpClient();
        Instant deadline = Instant.now().plus(START_TIMEOUT);
        while (Instant.now().isBefore(deadline)) {
            if (!process.isAlive()) {
                throw new IOException("the operator exited with " + process.exitValue() + "; log: " + tail());
            }
            try {
                if (http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/q/health/ready")).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
            ControlPlane.sleep(200);
        }
        throw new IOException("the operator was not ready within " + START_TIMEOUT + "; log: " + tail());
    }

    /** Alive, and its readiness check passes (informers synced, lease held). */
    public boolean healthy() {
        if (!process.isAlive()) {
            return false;
        }
        try {
            return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/q/health/ready")).build(),
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
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/q/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
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

    /** CPU time (user + system) the process has used so far, from /proc. */
    public double cpuSeconds() throws IOException {
        String[] stat = Files.readString(Path.of("/proc", String.valueOf(process.pid()), "stat")).split("\\) ", 2)[1].split(" ");
        long ticks = Long.parseLong(stat[11]) + Long.parseLong(stat[12]); // utime, stime (fields 14 and 15)
        return ticks / 100.0; // USER_HZ is 100 on Linux
    }

    /** The heap in use right after a full GC, as jcmd reports it. */
    public String heapAfterGc() throws IOException, InterruptedException {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        new ProcessBuilder(jcmd.toString(), String.valueOf(process.pid()), "GC.run").redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
        Process info = new ProcessBuilder(jcmd.toString(), String.valueOf(process.pid()), "GC.heap_info").redirectErrorStream(true).start();
        String out = new String(info.getInputStream().readAllBytes());
        info.waitFor();
        return out.lines().filter(l -> l.contains("used")).findFirst().orElse(out).trim();
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
