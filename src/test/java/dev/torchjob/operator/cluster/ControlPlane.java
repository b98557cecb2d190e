package dev.torchjob.operator.cluster;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.torchjob.operator.testing.ListenPorts;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;

/**
 * A real Kubernetes control plane on loopback for the real-cluster test tier: etcd, kube-apiserver,
 * kube-controller-manager (garbage collector, namespace, service-account, resource-quota and ClusterRole aggregation controllers),
 * kube-scheduler and kwok (nodes and pods, driven by our own Stage file), started once per test JVM
 * from the binaries {@code tools/control-plane/provision.sh} provisions, on random ports, and
 * stopped when the JVM exits.
 *
 * <p>With {@code -Dtorchjob.cluster.kubeconfig=FILE} the tests use that cluster instead and start only
 * kwok against it (see docs/testing.md).
 */
public final class ControlPlane {
    /** Nodes kwok plays; enough pod slots for the benchmark (8 x 4000: its raw pods and the operator's). */
    public static final int NODES = 8;
    static final String NODE_ANNOTATION = "test.torchjob.dev/kwok-node";
    /** On a pod: kwok's stages leave it alone, as a kubelet that is gone would (src/test/resources/control-plane/kwok-stages.yaml). */
    static final String KUBELET_GONE = "test.torchjob.dev/kubelet-gone";
    private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
    private static ControlPlane instance;

    final Path bin;
    /** The kube-apiserver and kubectl binaries: those of {@link #bin}, or of the oldest claimed version. */
    private final Path apiServerBinary;
    private final Path kubectlBinary;
    /** The Services' ClusterIPs; the kubernetes Service is the first, 10.96.0.1. */
    static final String SERVICE_RANGE = "10.96.0.0/16";
    public final Path work;
    public final Path adminKubeconfig;
    private final boolean ownServers;
    private final Map<String, Process> processes = new LinkedHashMap<>();
    private final Map<String, List<String>> commands = new LinkedHashMap<>();
    private int etcdPort;
    private KubernetesClient admin;

    /** CPU seconds (user + system) each component of the control plane has used so far. */
    public Map<String, Double> cpuSeconds() {
        Map<String, Double> cpu = new LinkedHashMap<>();
        processes.forEach((name, process) -> {
            try {
                String[] stat = Files.readString(Path.of("/proc", String.valueOf(process.pid()), "stat")).split("\\) ", 2)[1].split(" ");
                cpu.put(name, (Long.parseLong(stat[11]) + Long.parseLong(stat[12])) / 100.0); // utime + stime, USER_HZ 100
            } catch (IOException | RuntimeException e) {
                cpu.put(name, Double.NaN); // not running, or not ours to read
            }
        });
        return cpu;
    }

    private ControlPlane(Path bin, Path work, Path adminKubeconfig, boolean ownServers) {
        this(bin, bin, work, adminKubeconfig, ownServers);
    }

    private ControlPlane(Path bin, Path kubernetesBin, Path work, Path adminKubeconfig, boolean ownServers) {
        this.bin = bin;
        this.apiServerBinary = kubernetesBin.resolve("kube-apiserver");
        this.kubectlBinary = kubernetesBin.resolve("kubectl");
        this.work = work;
        this.adminKubeconfig = adminKubeconfig;
        this.ownServers = ownServers;
    }

    /** The control plane of this JVM, started on first use; an AssertionError says why it could not be. */
    public static synchronized ControlPlane get() {
        if (instance == null) {
            Path work = Path.of("target", "control-plane").toAbsolutePath();
            Path bin = provision();
            String external = System.getProperty("torchjob.cluster.kubeconfig", System.getenv("TORCHJOB_TEST_KUBECONFIG"));
            ControlPlane plane = external == null || external.isBlank()
                    ? new ControlPlane(bin, work, work.resolve("admin.kubeconfig"), true)
                    : new ControlPlane(bin, work, Path.of(external).toAbsolutePath(), false);
            Runtime.getRuntime().addShutdownHook(new Thread(plane::stop, "control-plane-stop"));
            try {
                plane.start();
            } catch (IOException | RuntimeException e) {
                plane.stop();
                throw new AssertionError("the test control plane did not start: " + e.getMessage()
                        + " (logs in " + work.resolve("logs") + ")", e);
            }
            instance = plane;
        }
        return instance;
    }

    /**
     * Another control plane of its own (etcd, kube-apiserver, controller manager, scheduler; no kwok
     * nodes) next to this JVM's, for a test that installs what would clash with the shared install
     * (cluster-scoped names, CRDs another field manager owns). The caller stops it ({@link #stop()}).
     */
    public static ControlPlane separate(String name) {
        Path work = Path.of("target", "control-plane-" + name).toAbsolutePath();
        return startedApart(new ControlPlane(provision(), work, work.resolve("admin.kubeconfig"), true), "the control plane " + name,
                ControlPlane::startServers);
    }

    /**
     * etcd and the kube-apiserver of the oldest Kubernetes docs/install.md claims (OLDEST_KUBERNETES_VERSION,
     * tools/control-plane/oldest-kubernetes.sh), with its own kubectl; nothing else runs: no controllers, no
     * scheduler, no kwok. The caller stops it ({@link #stop()}).
     */
    public static ControlPlane oldestClaimed() {
        List<String> printed = provisioned("control-plane/oldest-kubernetes.sh");
        Path work = Path.of("target", "control-plane-oldest").toAbsolutePath();
        return startedApart(new ControlPlane(provision(), Path.of(printed.get(printed.size() - 1)), work,
                work.resolve("admin.kubeconfig"), true), "the oldest claimed Kubernetes", ControlPlane::startEtcdAndApiServer);
    }

    /** Which servers a control plane apart from this JVM's runs. */
    private interface Servers {
        void start(ControlPlane plane) throws IOException;
    }

    /** Starts a control plane a test owns; an AssertionError says why it could not, with its logs' folder. */
    private static ControlPlane startedApart(ControlPlane plane, String what, Servers servers) {
        try {
            deleteRecursively(plane.work.resolve("logs"));
            Files.createDirectories(plane.work.resolve("logs"));
            servers.start(plane);
            plane.admin = new KubernetesClientBuilder().withConfig(Config.fromKubeconfig(Files.readString(plane.adminKubeconfig))).build();
        } catch (IOException | RuntimeException e) {
            plane.stop();
            throw new AssertionError(what + " did not start: " + e.getMessage() + " (logs in " + plane.work.resolve("logs") + ")", e);
        }
        return plane;
    }

    /** Whether the controller manager runs (it creates each namespace's default ServiceAccount, collects garbage). */
    boolean runsControllers() {
        return !ownServers || processes.containsKey("kube-controller-manager");
    }

    /** Runs the provisioning script (warm: a version check) and returns the folder with the binaries. */
    private static Path provision() {
        List<String> printed = provisioned("control-plane/provision.sh");
        return Path.of(printed.get(printed.size() - 1));
    }

    /**
     * Runs a provisioning script of tools/ ({@code script} as "control-plane/kueue.sh", "node/node.sh", ...;
     * cold: it builds and caches; warm: a check) and returns what it printed, line by line; its messages go
     * to the test's output.
     */
    public static List<String> provisioned(String script, String... args) {
        List<String> command = new java.util.ArrayList<>(List.of("bash", Path.of("tools", script).toAbsolutePath().toString()));
        command.addAll(List.of(args));
        try {
            Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            List<String> lines = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip().lines().toList();
            if (p.waitFor() != 0 || lines.isEmpty()) {
                throw new AssertionError("tools/" + script + " exited with " + p.exitValue()
                        + " (its messages are above; docs/testing.md says what it needs)");
            }
            return lines;
        } catch (IOException e) {
            throw new AssertionError("could not run tools/" + script + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while running tools/" + script, e);
        }
    }

    public KubernetesClient admin() {
        return admin;
    }

    /** The kubectl that matches the API server's version, as the cluster administrator. */
    public Kubectl kubectl() {
        return new Kubectl(kubectlBinary, adminKubeconfig);
    }

    private void start() throws IOException {
        deleteRecursively(work.resolve("logs"));
        Files.createDirectories(work.resolve("logs"));
        if (ownServers) {
            startServers();
        }
        admin = new KubernetesClientBuilder().withConfig(Config.fromKubeconfig(Files.readString(adminKubeconfig))).build();
        startKwok();
        createNodes();
    }

    private void startServers() throws IOException {
        startEtcdAndApiServer();
        start("kube-controller-manager", List.of(bin.resolve("kube-controller-manager").toString(),
                "--kubeconfig=" + adminKubeconfig,
                "--controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller,resourcequota-controller,"
                        + "clusterrole-aggregation-controller,podgroup-protection-controller",
                "--leader-elect=false", "--secure-port=0", "--kube-api-qps=200", "--kube-api-burst=400", WORKLOAD_API_GATE));
        start("kube-scheduler", List.of(bin.resolve("kube-scheduler").toString(),
                "--kubeconfig=" + adminKubeconfig, "--leader-elect=false", "--secure-port=0",
                "--kube-api-qps=500", "--kube-api-burst=1000", WORKLOAD_API_GATE));
    }

    private void startEtcdAndApiServer() throws IOException {
        Path pki = work.resolve("pki");
        deleteRecursively(work.resolve("etcd"));
        Files.createDirectories(pki);
        String token = UUID.randomUUID().toString();
        Files.writeString(pki.resolve("tokens.csv"), token + ",admin,admin,\"system:masters\"\n");
        Path serviceAccountKey = pki.resolve("service-account.key");
        Files.writeString(serviceAccountKey, newRsaKeyPem());

        etcdPort = ListenPorts.free();
        int peerPort = ListenPorts.free();
        start("etcd", List.of(bin.resolve("etcd").toString(),
                "--name=default", "--data-dir=" + work.resolve("etcd"),
                "--listen-client-urls=http://127.0.0.1:" + etcdPort, "--advertise-client-urls=http://127.0.0.1:" + etcdPort,
                "--listen-peer-urls=http://127.0.0.1:" + peerPort, "--initial-advertise-peer-urls=http://127.0.0.1:" + peerPort,
                "--initial-cluster=default=http://127.0.0.1:" + peerPort,
                "--listen-metrics-urls=", "--unsafe-no-fsync=true", "--quota-backend-bytes=8589934592"));
        awaitHttp("etcd", URI.create("http://127.0.0.1:" + etcdPort + "/health"));

        int apiPort = ListenPorts.free();
        startApiServer(apiPort, pki, serviceAccountKey);
        writeKubeconfig(adminKubeconfig, "https://127.0.0.1:" + apiPort, Files.readAllBytes(pki.resolve("apiserver.crt")), token);
    }

    /**
     * Kubernetes' own gang scheduling, the Workload API (beta in 1.37, off by default), as a platform team turns it
     * on: the feature gate on the API server, the scheduler and the controller manager (whose PodGroup protection
     * controller lets a PodGroup go once no running pod names it), its API group version served. Pods that name no
     * PodGroup are scheduled as before.
     */
    static final String WORKLOAD_API_GATE = "--feature-gates=GenericWorkload=true";
    static final String WORKLOAD_API_VERSION = "--runtime-config=scheduling.k8s.io/v1beta1=true";

    private void startApiServer(int port, Path pki, Path serviceAccountKey) throws IOException {
        Path auditPolicy = work.resolve("audit-policy.yaml");
        try (var in = ControlPlane.class.getResourceAsStream("/control-plane/audit-policy.yaml")) {
            Files.write(auditPolicy, in.readAllBytes());
        }
        Files.deleteIfExists(auditLog());
        // The oldest claimed version has neither.
        List<String> workloadApi = apiServerBinary.equals(bin.resolve("kube-apiserver")) ? List.of(WORKLOAD_API_GATE, WORKLOAD_API_VERSION)
                : List.of();
        start("kube-apiserver", java.util.stream.Stream.concat(java.util.stream.Stream.of(apiServerBinary.toString(),
                "--audit-policy-file=" + auditPolicy, "--audit-log-path=" + auditLog(), "--audit-log-mode=batch",
                "--audit-log-batch-max-wait=1s",
                "--etcd-servers=http://127.0.0.1:" + etcdPort,
                "--bind-address=127.0.0.1", "--secure-port=" + port,
                // Nothing reaches this cluster from outside the machine: no endpoints for the kubernetes Service.
                "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
                "--cert-dir=" + pki, "--token-auth-file=" + pki.resolve("tokens.csv"),
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file=" + serviceAccountKey,
                "--service-account-signing-key-file=" + serviceAccountKey,
                "--service-cluster-ip-range=" + SERVICE_RANGE,
                // Off by default upstream, on in OpenShift: owner references that block deletion need RBAC on the owner.
                "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
                // The real node's kubelet (RealNode) is reached at its address for logs and exec, not by name.
                "--kubelet-preferred-address-types=InternalIP",
                "--allow-privileged=true"), workloadApi.stream()).toList());
        awaitHttp("kube-apiserver", URI.create("https://127.0.0.1:" + port + "/readyz"));
    }

    /** One JSON line per write the operator made (see src/test/resources/control-plane/audit-policy.yaml). */
    public Path auditLog() {
        return work.resolve("operator-writes.audit.jsonl");
    }

    /**
     * Kills kube-apiserver (SIGKILL, as a crashed or lost control-plane node) and starts it again on the
     * same port and etcd: every connection and watch is cut at once.
     */
    public void restartApiServer() throws IOException {
        requireOwnServers("restart the API server");
        Process old = processes.get("kube-apiserver");
        // Not SIGTERM: a graceful shutdown waits for clients that do not read (a frozen operator).
        old.destroyForcibly();
        try {
            old.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        start("kube-apiserver", commands.get("kube-apiserver"));
        String url = admin.getConfiguration().getMasterUrl();
        awaitHttp("kube-apiserver", URI.create(url.replaceAll("/$", "") + "/readyz"));
    }

    /** Compacts etcd's history up to now, so every older resourceVersion is gone (watches from it get 410). */
    public long compactEtcd() throws IOException, InterruptedException {
        requireOwnServers("compact etcd");
        HttpClient http = HttpClient.newHttpClient();
        String key = Base64.getEncoder().encodeToString("/".getBytes(StandardCharsets.UTF_8));
        String range = post(http, "/v3/kv/range", "{\"key\":\"" + key + "\",\"limit\":1,\"keys_only\":true}");
        Matcher revision = Pattern.compile("\"revision\":\"?(\\d+)").matcher(range);
        if (!revision.find()) {
            throw new IOException("etcd did not say its revision: " + range);
        }
        long current = Long.parseLong(revision.group(1));
        post(http, "/v3/kv/compaction", "{\"revision\":\"" + current + "\",\"physical\":true}");
        return current;
    }

    private String post(HttpClient http, String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + etcdPort + path))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException("etcd " + path + ": " + response.statusCode() + " " + response.body());
        }
        return response.body();
    }

    private void requireOwnServers(String what) {
        if (!ownServers) {
            throw new org.opentest4j.TestAbortedException("cannot " + what + " of a cluster the tests did not start");
        }
    }

    private void startKwok() throws IOException {
        Path stages = work.resolve("kwok-stages.yaml");
        try (var in = ControlPlane.class.getResourceAsStream("/control-plane/kwok-stages.yaml")) {
            Files.write(stages, in.readAllBytes());
        }
        start("kwok", List.of(bin.resolve("kwok").toString(),
                "--kubeconfig=" + adminKubeconfig, "--config=" + stages,
                "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + NODE_ANNOTATION + "=true",
                // Pod IPs are only strings written into pod status: nothing is ever sent to them.
                "--cidr=10.244.0.0/16", "--node-ip=10.243.0.1", "--node-lease-duration-seconds=0"));
    }

    private void createNodes() {
        for (int i = 0; i < NODES; i++) {
            createNode("kwok-node-" + i, "kwok", null);
        }
        Instant deadline = Instant.now().plus(START_TIMEOUT);
        while (admin.nodes().withLabel("type", "kwok").list().getItems().stream()
                .filter(n -> n.getStatus() != null && n.getStatus().getConditions() != null)
                .filter(n -> n.getStatus().getConditions().stream().anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus())))
                .count() < NODES) {
            if (Instant.now().isAfter(deadline)) {
                throw new IllegalStateException("kwok did not make its nodes Ready within " + START_TIMEOUT);
            }
            sleep(200);
        }
    }

    /**
     * A kwok node of its own, tainted {@code taint:NoSchedule} so that only pods tolerating it go there (no other
     * test's), Ready when this returns: a node whose kubelet a test can take away ({@link #kubeletGone}).
     */
    public void nodeApart(String name, String taint) {
        createNode(name, "kwok-apart", taint);
        await().atMost(START_TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> {
            var node = admin.nodes().withName(name).get();
            return node.getStatus() != null && node.getStatus().getConditions() != null
                    && node.getStatus().getConditions().stream().anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
        });
    }

    /**
     * kwok stops playing the kubelet of the pods now on this node, as when a node goes down or is cut off: they
     * stay as they were, and a deletion of one is never confirmed, so the API server keeps it terminating. (kwok
     * is told per pod, by the annotation {@value #KUBELET_GONE} its stages read: a pod bound to the node later runs.)
     */
    public void kubeletGone(String node) {
        podsOn(node).forEach(pod -> admin.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName())
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"" + KUBELET_GONE + "\":\"true\"}}}"));
    }

    /** kwok plays the kubelet of the node's pods again: it finishes what happened meanwhile (a deletion). */
    public void kubeletBack(String node) {
        podsOn(node).forEach(pod -> admin.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName())
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"" + KUBELET_GONE + "\":null}}}"));
    }

    private List<io.fabric8.kubernetes.api.model.Pod> podsOn(String node) {
        return admin.pods().inAnyNamespace().withField("spec.nodeName", node).list().getItems();
    }

    private void createNode(String name, String type, String taint) {
        admin.nodes().resource(new NodeBuilder().withNewMetadata().withName(name)
                .addToAnnotations(NODE_ANNOTATION, "true")
                .addToLabels("kubernetes.io/hostname", name).addToLabels("type", type)
                .endMetadata().build()).serverSideApply();
        // The TaintNodesByCondition admission plugin marks a new node not-ready; the node lifecycle
        // controller (not run here: it would evict pods of nodes without a kubelet heartbeat) lifts it.
        // A merge patch: kwok may be writing the node's status at the same time.
        String taints = taint == null ? "null" : "[{\"key\":\"" + taint + "\",\"effect\":\"NoSchedule\"}]";
        admin.nodes().withName(name).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"taints\":" + taints + "}}");
    }

    /** Stops one process this control plane started (SIGTERM, then SIGKILL after 10 s); nothing if it is not running. */
    synchronized void stopProcess(String name) {
        Process process = processes.remove(name);
        if (process == null) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /** Starts a process next to the control plane (its output in logs/NAME.log), stopped with it. */
    void start(String name, List<String> command) throws IOException {
        Path log = work.resolve("logs").resolve(name + ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        processes.put(name, process);
        commands.put(name, command);
    }

    /** The process id of a process started here. */
    synchronized long pid(String name) {
        Process process = processes.get(name);
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException(name + " is not running");
        }
        return process.pid();
    }

    /**
     * Whether a process started here still runs, and the last lines of its log: what a failed wait
     * says, so that CI's output shows why without the logs folder.
     */
    synchronized String report(String name) {
        Process process = processes.get(name);
        String state = process == null ? "not started" : process.isAlive() ? "running" : "exited with " + process.exitValue();
        Path log = work.resolve("logs").resolve(name + ".log");
        List<String> lines;
        try {
            lines = Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : List.of();
        } catch (IOException | UncheckedIOException e) {
            lines = List.of("(log unreadable: " + e.getMessage() + ")");
        }
        List<String> tail = lines.subList(Math.max(0, lines.size() - 8), lines.size());
        return name + " " + state + "; the last lines of " + log + ":\n  " + String.join("\n  ", tail);
    }

    /** Waits until the process answers 200 at this address; fails at once if it exits. */
    void awaitHttp(String name, URI uri) throws IOException {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .sslContext(TrustAll.context()).connectTimeout(Duration.ofSeconds(2)).build();
        Instant deadline = Instant.now().plus(START_TIMEOUT);
        while (Instant.now().isBefore(deadline)) {
            Process process = processes.get(name);
            if (!process.isAlive()) {
                throw new IOException(name + " exited with " + process.exitValue() + "; see " + work.resolve("logs").resolve(name + ".log"));
            }
            try {
                // /readyz answers anonymous requests (system:public-info-viewer).
                if (http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            sleep(250);
        }
        throw new IOException(name + " was not ready within " + START_TIMEOUT);
    }

    /** Stops what this JVM started, newest first. */
    public synchronized void stop() {
        List<String> names = new ArrayList<>(processes.keySet());
        java.util.Collections.reverse(names);
        names.forEach(this::stopProcess);
        if (admin != null) {
            admin.close();
        }
    }

    /** The PEM bytes of the CA the API server's certificate is checked against. */
    public byte[] certificateAuthority() throws IOException {
        if (ownServers) {
            return Files.readAllBytes(work.resolve("pki").resolve("apiserver.crt"));
        }
        Config config = admin.getConfiguration();
        if (config.getCaCertData() != null) {
            return Base64.getDecoder().decode(config.getCaCertData());
        }
        if (config.getCaCertFile() != null) {
            return Files.readAllBytes(Path.of(config.getCaCertFile()));
        }
        throw new IOException("the kubeconfig " + adminKubeconfig + " names no certificate authority for its cluster");
    }

    /** Writes a kubeconfig for this API server with a ServiceAccount's bound token: a controller with its install's rights alone. */
    Path serviceAccountKubeconfig(Path file, String namespace, String serviceAccount) throws IOException {
        writeKubeconfig(file, admin().getConfiguration().getMasterUrl(), certificateAuthority(), OperatorInstall.token(this, namespace, serviceAccount));
        return file;
    }

    public static void writeKubeconfig(Path file, String server, byte[] caPem, String token) throws IOException {
        String ca = Base64.getEncoder().encodeToString(caPem);
        Files.writeString(file, """
                apiVersion: v1
                kind: Config
                clusters:
                - name: test
                  cluster: {server: "%s", certificate-authority-data: %s}
                users:
                - name: user
                  user: {token: "%s"}
                contexts:
                - name: test
                  context: {cluster: test, user: user, namespace: default}
                current-context: test
                """.formatted(server, ca, token));
    }

    private static String newRsaKeyPem() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
            generator.initialize(2048);
            byte[] pkcs8 = generator.generateKeyPair().getPrivate().getEncoded();
            return "-----BEGIN PRIVATE KEY-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                    .encodeToString(pkcs8) + "\n-----END PRIVATE KEY-----\n";
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (Files.exists(dir)) {
            try (var paths = Files.walk(dir)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** Readiness probes only: the serving certificate is self-signed by the API server at its first start. */
    private static final class TrustAll implements javax.net.ssl.X509TrustManager {
        static javax.net.ssl.SSLContext context() {
            try {
                javax.net.ssl.SSLContext context = javax.net.ssl.SSLContext.getInstance("TLS");
                context.init(null, new javax.net.ssl.TrustManager[] {new TrustAll()}, null);
                return context;
            } catch (java.security.GeneralSecurityException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void checkClientTrusted(java.security.cert.X509Certificate[] chain, String authType) {
        }

        @Override
        public void checkServerTrusted(java.security.cert.X509Certificate[] chain, String authType) {
        }

        @Override
        public java.security.cert.X509Certificate[] getAcceptedIssuers() {
            return new java.security.cert.X509Certificate[0];
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
