package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.torchjob.operator.testing.ExternalTools;
import dev.torchjob.operator.testing.ListenPorts;
import dev.torchjob.operator.testing.PackagedOperator;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;

/**
 * The operator's container image, built with podman from the repository's Containerfile
 * ({@code native/Containerfile.jvm}; {@code native/Containerfile} when the tests run the native
 * executable) and run the way {@code kubernetes/base/deployment.yaml} has the kubelet run its pod:
 * the options below are read from that Deployment, not written again here. What a kubelet adds is
 * added the same way: the ServiceAccount's token, CA and namespace at the in-cluster path, and
 * {@code KUBERNETES_SERVICE_HOST}/{@code _PORT}. The one difference: the container has its own
 * network (slirp4netns) and reaches the loopback API server as {@code kubernetes.default.svc}, a name
 * the API server's certificate holds, mapped to the host; its port 8080 is published on a free one.
 */
public final class OperatorContainer implements BenchmarkedOperator {
    public static final String IMAGE = "localhost/torchjob-operator:it";
    private static final String SERVICE_ACCOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount";
    private static final String API_SERVER_NAME = "kubernetes.default.svc";
    private static Duration buildTime;

    final String name;
    final int httpPort = ListenPorts.free();
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    private OperatorContainer(String name) {
        this.name = name;
    }

    public static Path containerfile() {
        return Path.of("native", PackagedOperator.isNative() ? "Containerfile" : "Containerfile.jvm");
    }

    /**
     * Builds the image once per test JVM from the packaged application: the base (a local stand-in
     * made from Debian's packages when no registry is reachable, tools/images/base.sh), then the
     * Containerfile. Returns how long the build took.
     */
    public static synchronized Duration build() {
        if (buildTime == null) {
            for (String tool : List.of("podman", "runc", "slirp4netns", "mmdebstrap")) {
                ExternalTools.require(tool, "podman runc slirp4netns mmdebstrap");
            }
            Instant start = Instant.now();
            Podman.run(Duration.ofMinutes(10), "bash", "tools/images/base.sh").orFail();
            Podman.run(Duration.ofMinutes(10), "podman", "build", "--quiet", "-f", containerfile().toString(), "-t", IMAGE, ".").orFail();
            buildTime = Duration.between(start, Instant.now());
        }
        return buildTime;
    }

    /** The image's size in bytes, as podman counts it (its layers uncompressed). */
    public static long imageSize() {
        return Long.parseLong(Podman.run(Duration.ofSeconds(30), "podman", "image", "inspect", "--format", "{{.Size}}", IMAGE)
                .orFail().strip());
    }

    /**
     * The operator's pod from the Deployment, started detached as {@code name}, authenticated with
     * {@code token}; {@code env} adds to or replaces the Deployment's environment.
     */
    public static OperatorContainer start(String name, ControlPlane cluster, String token, Map<String, String> env) throws IOException {
        OperatorContainer container = new OperatorContainer(name);
        Podman.run(Duration.ofSeconds(30), "podman", "rm", "--force", "--ignore", name);
        List<String> command = new ArrayList<>(List.of("podman", "run", "--detach", "--name", name));
        command.addAll(container.options(cluster, token));
        env.forEach((key, value) -> command.addAll(List.of("--env", key + "=" + value)));
        command.add(IMAGE);
        Podman.run(Duration.ofSeconds(60), command).orFail();
        return container;
    }

    /** The same pod run in the foreground with extra environment; its output and exit code. */
    public static Podman.Result runToEnd(String name, ControlPlane cluster, String token, Map<String, String> env, Duration timeout)
            throws IOException {
        OperatorContainer container = new OperatorContainer(name);
        List<String> command = new ArrayList<>(List.of("podman", "run", "--rm", "--name", name));
        command.addAll(container.options(cluster, token));
        env.forEach((key, value) -> command.addAll(List.of("--env", key + "=" + value)));
        command.add(IMAGE);
        return Podman.run(timeout, command);
    }

    /** podman's options for the Deployment's pod, plus what the kubelet adds to every pod. */
    private List<String> options(ControlPlane cluster, String token) throws IOException {
        Deployment deployment = PackagedOperator.deployment();
        PodSpec pod = deployment.getSpec().getTemplate().getSpec();
        Container operator = pod.getContainers().get(0);
        String namespace = deployment.getMetadata().getNamespace();
        List<String> options = new ArrayList<>();
        PodSecurityContext podSecurity = pod.getSecurityContext();
        options.addAll(List.of("--user", podSecurity.getRunAsUser() + ":" + podSecurity.getRunAsGroup()));
        SecurityContext security = operator.getSecurityContext();
        if (Boolean.TRUE.equals(security.getReadOnlyRootFilesystem())) {
            // podman would add its own tmpfs on /tmp, /var/tmp and /run; a pod has only its volumes.
            options.addAll(List.of("--read-only", "--read-only-tmpfs=false"));
        }
        security.getCapabilities().getDrop().forEach(capability -> options.add("--cap-drop=" + capability));
        if (Boolean.FALSE.equals(security.getAllowPrivilegeEscalation())) {
            options.add("--security-opt=no-new-privileges");
        }
        Map<String, Quantity> limits = operator.getResources().getLimits();
        options.add("--memory=" + Quantity.getAmountInBytes(limits.get("memory")).longValue());
        options.add("--cpus=" + Quantity.getAmountInBytes(limits.get("cpu")).toPlainString());
        for (VolumeMount mount : operator.getVolumeMounts()) {
            Volume volume = pod.getVolumes().stream().filter(v -> v.getName().equals(mount.getName())).findFirst().orElseThrow();
            if (volume.getEmptyDir() == null) {
                throw new IllegalStateException("the test runs emptyDir volumes only, not " + volume);
            }
            // An emptyDir: a fresh directory on the node's disk, writable by the pod.
            Path dir = Files.createTempDirectory(cluster.work, "emptydir-" + volume.getName());
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
            options.addAll(List.of("--volume", dir + ":" + mount.getMountPath() + ":rw"));
        }
        for (EnvVar env : operator.getEnv()) {
            String value = env.getValue();
            if (env.getValueFrom() != null) {
                String field = env.getValueFrom().getFieldRef().getFieldPath();
                if (!"metadata.namespace".equals(field)) {
                    throw new IllegalStateException("the test resolves metadata.namespace only, not " + field);
                }
                value = namespace;
            }
            options.addAll(List.of("--env", env.getName() + "=" + value));
        }
        int containerPort = operator.getPorts().get(0).getContainerPort();
        options.addAll(List.of("--publish", "127.0.0.1:" + httpPort + ":" + containerPort));
        // What the kubelet adds: the pod's hostname, the API server's address, the ServiceAccount.
        options.addAll(List.of("--hostname", name));
        URI apiServer = URI.create(cluster.admin().getConfiguration().getMasterUrl());
        options.addAll(List.of("--network", "slirp4netns:allow_host_loopback=true", "--add-host", API_SERVER_NAME + ":10.0.2.2"));
        options.addAll(List.of("--env", "KUBERNETES_SERVICE_HOST=" + API_SERVER_NAME,
                "--env", "KUBERNETES_SERVICE_PORT=" + apiServer.getPort()));
        Path serviceAccount = Files.createTempDirectory(cluster.work, "serviceaccount-");
        Files.writeString(serviceAccount.resolve("token"), token);
        Files.write(serviceAccount.resolve("ca.crt"), cluster.certificateAuthority());
        Files.writeString(serviceAccount.resolve("namespace"), namespace);
        Files.setPosixFilePermissions(serviceAccount, PosixFilePermissions.fromString("rwxr-xr-x"));
        options.addAll(List.of("--volume", serviceAccount + ":" + SERVICE_ACCOUNT_PATH + ":ro"));
        return options;
    }

    /** The readiness path of the Deployment's probe, or another path, answered on the published port. */
    public HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Waits until {@code path} answers 200; fails at once if the container ends. Returns how long that took. */
    public Duration awaitOk(String path, Duration timeout) throws IOException, InterruptedException {
        Instant start = Instant.now();
        while (Duration.between(start, Instant.now()).compareTo(timeout) < 0) {
            if (!running()) {
                throw new AssertionError("the container ended: " + logs());
            }
            try {
                if (get(path).statusCode() == 200) {
                    return Duration.between(start, Instant.now());
                }
            } catch (IOException e) {
                // not listening yet
            }
            Thread.sleep(10);
        }
        throw new AssertionError(path + " did not answer 200 within " + timeout + ": " + logs());
    }

    /** Waits until the operator leads, as its {@code leader_election_master_status} gauge says. */
    public void awaitLeading(Duration timeout) throws IOException, InterruptedException {
        Instant deadline = Instant.now().plus(timeout);
        while (!get("/q/metrics").body().lines()
                .anyMatch(l -> l.startsWith("leader_election_master_status{") && l.endsWith(" 1.0"))) {
            if (Instant.now().isAfter(deadline)) {
                throw new AssertionError("the container did not lead within " + timeout + ": " + logs());
            }
            Thread.sleep(50);
        }
    }

    boolean running() {
        return "true".equals(Podman.run(Duration.ofSeconds(30), "podman", "inspect", "--format", "{{.State.Running}}", name).out().strip());
    }

    /** The container's process (the operator) as the host sees it. */
    long pid() {
        return Long.parseLong(Podman.run(Duration.ofSeconds(30), "podman", "inspect", "--format", "{{.State.Pid}}", name).orFail().strip());
    }

    /** A line of the operator process's /proc status (Uid, VmRSS, VmHWM, …). */
    public String status(String field) throws IOException {
        return Files.readString(Path.of("/proc", String.valueOf(pid()), "status")).lines()
                .filter(l -> l.startsWith(field + ":")).findFirst().orElseThrow().substring(field.length() + 1).strip();
    }

    @Override
    public double cpuSeconds() throws IOException {
        return ProcessMeasures.cpuSeconds(pid());
    }

    @Override
    public String residentMemory() throws IOException {
        return ProcessMeasures.residentMemory(pid());
    }

    @Override
    public String heapAfterGc() throws IOException, InterruptedException {
        return ProcessMeasures.heapAfterGc(pid(), PackagedOperator.isNative(), PackagedOperator.isNative() ? get("/q/metrics").body() : "");
    }

    public String logs() {
        return Podman.run(Duration.ofSeconds(30), "podman", "logs", name).out();
    }

    /** SIGTERM, as the kubelet stops a pod (grace period 30 s); how long it took to exit. */
    public Duration terminate() {
        Instant sent = Instant.now();
        Podman.run(Duration.ofSeconds(60), "podman", "stop", "--time", "30", name).orFail();
        return Duration.between(sent, Instant.now());
    }

    public int exitCode() {
        return Integer.parseInt(Podman.run(Duration.ofSeconds(30), "podman", "inspect", "--format", "{{.State.ExitCode}}", name)
                .orFail().strip());
    }

    @Override
    public void close() {
        Podman.run(Duration.ofSeconds(60), "podman", "rm", "--force", "--ignore", name);
    }

    /** podman with the settings of tools/images/containers.conf (runc; no default ulimits). */
    public static final class Podman {
        public record Result(List<String> command, int exitCode, String out) {
            String orFail() {
                if (exitCode != 0) {
                    throw new AssertionError(String.join(" ", command) + " exited with " + exitCode + ": " + out);
                }
                return out;
            }
        }

        public static Result run(Duration timeout, String... command) {
            return run(timeout, List.of(command));
        }

        public static Result run(Duration timeout, List<String> command) {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
            builder.environment().put("CONTAINERS_CONF", Path.of("tools", "images", "containers.conf").toAbsolutePath().toString());
            try {
                Process process = builder.start();
                var output = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try {
                        return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    } catch (IOException e) {
                        return "";
                    }
                });
                if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly();
                    throw new AssertionError(String.join(" ", command) + " still running after " + timeout);
                }
                return new Result(command, process.exitValue(), output.join());
            } catch (IOException e) {
                throw new AssertionError("could not run " + command.get(0) + ": " + e.getMessage(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
    }
}
