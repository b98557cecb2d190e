package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import dev.torchjob.operator.testing.ListenPorts;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;

/**
 * A real Kubernetes node in the test control plane, beside the kwok nodes: the kubelet, containerd
 * with runc, Debian's CNI bridge plugin and CoreDNS for the cluster's names, as built by
 * tools/node/node.sh, running the images node-images.sh makes from Debian's packages.
 *
 * <p>Nothing of it reaches past the machine: the node's address and the pods' addresses are on a bridge
 * of its own ({@link #BRIDGE}, {@link #POD_RANGE}) with no route out of it (the pods get no default
 * route, the host forwards nothing), and CoreDNS answers the cluster's names and forwards nothing.
 * Everything it leaves on the machine (mounts, cgroups, the bridge, the kubelet's iptables chains and
 * kernel settings) is put back by {@link #close()}, and by the next start after a run that was killed
 * ({@link NodeHost}: the machine under the node).
 *
 * <p>Started by the tests that need a kubelet ({@link #get()}); while they run, {@link #exclusive()}
 * keeps other pods off the kwok nodes' way: the kwok nodes are cordoned, so the scheduler places the
 * pods, as written, on this node.
 */
public final class RealNode implements AutoCloseable {
    public static final String NAME = "real-node";
    static final String BRIDGE = "torchjob0";
    /** The node's pods; the bridge holds the first address, which is also the node's and CoreDNS's. */
    static final String POD_RANGE = "10.250.0.0/24";
    static final String GATEWAY = "10.250.0.1";
    /** Where the node keeps what it runs (fixed, so a run killed half-way is found and cleaned up by the next). */
    public static final Path STATE = Path.of("/run/torchjob-node");
    /** How many GPUs the node's device plugin stand-in has. */
    public static final int GPUS = 4;
    /** Where the pods reach the API server: the relay on the bridge's address ({@link ApiServerRelay}). */
    static final int API_SERVER_RELAY_PORT = 6443;
    private static final Duration READY_TIMEOUT = Duration.ofMinutes(3);
    static final String EXTRA_CONTROLLERS = "endpointslice-controller,root-ca-certificate-publisher-controller,"
            + "resourceclaim-controller,device-taint-eviction-controller";
    /** Deployments and ReplicaSets, while a test runs the operator's own Deployment on this node ({@link #workloads()}). */
    static final String WORKLOAD_CONTROLLERS = "deployment-controller,replicaset-controller";
    private static RealNode instance;

    private final ControlPlane cluster;
    private final Path bin;
    private final Path containerdRoot;
    private final List<Path> images;
    private final NodeHost host = new NodeHost();
    private final int kubeletPort = ListenPorts.free();
    private final int corednsHealthPort = ListenPorts.free();
    private final int corednsReadyPort = ListenPorts.free();
    private final int kubeProxyHealthPort = ListenPorts.free();
    private ApiServerRelay relay;

    private RealNode(ControlPlane cluster, Path bin, Path containerdRoot, List<Path> images) {
        this.cluster = cluster;
        this.bin = bin;
        this.containerdRoot = containerdRoot;
        this.images = images;
    }

    /**
     * The real node of this JVM's control plane, started on first use. Where the machine does not
     * allow it (no root, no cgroup to write, no network namespaces) the test is skipped with the reason,
     * except in CI, where that is a failure.
     */
    public static synchronized RealNode get() {
        if (instance == null) {
            ControlPlane cluster = OperatorInstall.get().cluster;
            String missing = missingPrivileges();
            if (missing != null) {
                if ("true".equals(System.getenv("CI"))) {
                    throw new AssertionError("the real node cannot run on this machine: " + missing);
                }
                throw new org.opentest4j.TestAbortedException("no real node here: " + missing);
            }
            List<String> provisioned = ControlPlane.provisioned("node/node.sh");
            Path bin = Path.of(provisioned.get(provisioned.size() - 1));
            List<Path> images = ControlPlane.provisioned("node/node-images.sh", bin.toString()).stream().map(Path::of).toList();
            Path containerdRoot = bin.getParent().resolve("containerd-root");
            RealNode node = new RealNode(cluster, bin, containerdRoot, images);
            Runtime.getRuntime().addShutdownHook(new Thread(node::close, "real-node-stop"));
            try {
                node.start();
            } catch (IOException | RuntimeException e) {
                node.close();
                throw new AssertionError("the real node did not start: " + e.getMessage() + " (logs in "
                        + cluster.work.resolve("logs") + ")", e);
            }
            instance = node;
        }
        return instance;
    }

    private static String missingPrivileges() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "the kubelet and containerd need root";
        }
        if (!Files.isWritable(Path.of("/sys/fs/cgroup/memory")) && !Files.isWritable(Path.of("/sys/fs/cgroup/cgroup.procs"))) {
            return "the memory cgroup is not writable";
        }
        try {
            Process p = new ProcessBuilder("ip", "netns", "add", "torchjob-probe").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                return "no network namespaces (" + out.strip() + ")";
            }
            new ProcessBuilder("ip", "netns", "delete", "torchjob-probe").start().waitFor();
        } catch (IOException e) {
            return "no 'ip' command (" + e.getMessage() + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
        return null;
    }

    private void start() throws IOException {
        NodeHost.cleanUp(); // what a killed run left
        Files.createDirectories(STATE);
        Files.createDirectories(containerdRoot);
        host.prepare(GATEWAY);
        writeCniConfig();
        startContainerd();
        importImages();
        startCoreDns();
        startExtraControllers();
        relay = ApiServerRelay.start(GATEWAY, API_SERVER_RELAY_PORT, URI.create(cluster.admin().getConfiguration().getMasterUrl()));
        publishApiServer();
        host.recordKernelSettings();
        startKubeProxy();
        startLogind();
        startKubelet();
        startGpus();
        startDra();
        awaitReady();
        awaitKubeProxy();
        host.restoreKernelSettings(); // the kubelet and kube-proxy changed them at start, not again later
    }

    private void writeCniConfig() throws IOException {
        Path dir = STATE.resolve("cni/net.d");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("10-torchjob.conflist"), """
                {
                  "cniVersion": "1.0.0",
                  "name": "torchjob-node",
                  "plugins": [
                    {
                      "type": "bridge", "bridge": "%s", "isGateway": false, "ipMasq": false, "hairpinMode": true,
                      "ipam": {"type": "host-local", "ranges": [[{"subnet": "%s", "gateway": "%s"}]],
                               "routes": [{"dst": "%s", "gw": "%s"}], "dataDir": "%s"}
                    },
                    {"type": "portmap", "capabilities": {"portMappings": true}}
                  ]
                }
                """.formatted(BRIDGE, POD_RANGE, GATEWAY, ControlPlane.SERVICE_RANGE, GATEWAY, STATE.resolve("cni/ipam")));
    }

    private Path socket() {
        return STATE.resolve("containerd/containerd.sock");
    }

    private void startContainerd() throws IOException {
        // Every registry is a closed port on loopback: an image that is not on the node fails to pull here
        // (ImagePullBackOff) without a packet leaving the machine.
        Path registries = STATE.resolve("registries");
        Files.createDirectories(registries.resolve("_default"));
        Files.writeString(registries.resolve("_default/hosts.toml"), """
                server = "http://127.0.0.1:9"
                [host."http://127.0.0.1:9"]
                  capabilities = ["pull", "resolve"]
                """);
        Path config = STATE.resolve("containerd.toml");
        Files.writeString(config, """
                version = 3
                root = "%s"
                state = "%s"
                [grpc]
                  address = "%s"
                [ttrpc]
                  address = "%s.ttrpc"
                [plugins."io.containerd.cri.v1.images"]
                  snapshotter = "overlayfs"
                  [plugins."io.containerd.cri.v1.images".pinned_images]
                    sandbox = "localhost/torchjob-pause:1"
                  [plugins."io.containerd.cri.v1.images".registry]
                    config_path = "%s"
                [plugins."io.containerd.cri.v1.runtime"]
                  restrict_oom_score_adj = true
                  netns_mounts_under_state_dir = true
                  [plugins."io.containerd.cri.v1.runtime".cni]
                    bin_dirs = ["/usr/lib/cni"]
                    conf_dir = "%s"
                  [plugins."io.containerd.cri.v1.runtime".containerd]
                    default_runtime_name = "runc"
                    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
                      runtime_type = "io.containerd.runc.v2"
                      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
                        BinaryName = "/usr/sbin/runc"
                        Root = "%s"
                        SystemdCgroup = false
                [plugins."io.containerd.grpc.v1.cri"]
                  stream_server_address = "127.0.0.1"
                  stream_server_port = "0"
                """.formatted(containerdRoot, STATE.resolve("containerd/state"), socket(), socket(), registries,
                STATE.resolve("cni/net.d"), STATE.resolve("runc")));
        startProcess("containerd", List.of(bin.resolve("containerd").toString(), "--config", config.toString()));
        await("containerd", () -> Files.exists(socket()) && ctr("version").exitCode() == 0);
    }

    /** Imports each image archive once into containerd's store, which is kept between runs (its names carry their content). */
    private void importImages() throws IOException {
        for (Path image : images) {
            Path marker = containerdRoot.resolve(".imported-" + image.getFileName());
            if (Files.exists(marker)) {
                continue;
            }
            NodeHost.Result imported = ctr("images", "import", image.toString());
            if (imported.exitCode() != 0) {
                throw new IllegalStateException("ctr could not import " + image + ": " + imported.out());
            }
            Files.createFile(marker);
        }
    }

    /** The image arrives on the node under another name too ({@code ctr images tag}): as if it had been pulled. */
    public void tagImage(String image, String name) {
        NodeHost.Result tagged = ctr("images", "tag", "--force", image, name);
        if (tagged.exitCode() != 0) {
            throw new IllegalStateException("ctr could not tag " + image + " as " + name + ": " + tagged.out());
        }
    }

    /**
     * A podman image of this machine imported into the node's store under {@code name} as well (the name a
     * manifest gives, e.g. docker.io/library/torchjob-operator:0.1.0 for torchjob-operator:0.1.0).
     */
    public void importImage(String podmanImage, String name) throws IOException {
        Path archive = STATE.resolve("import.tar");
        Files.deleteIfExists(archive);
        List<String> save = List.of("podman", "save", "--quiet", "--format", "docker-archive", "-o", archive.toString(), podmanImage);
        NodeHost.Result saved = NodeHost.exec(save);
        if (saved.exitCode() != 0) {
            throw new IllegalStateException("podman could not save " + podmanImage + ": " + saved.out());
        }
        NodeHost.Result imported = ctr("images", "import", archive.toString());
        Files.deleteIfExists(archive);
        if (imported.exitCode() != 0) {
            throw new IllegalStateException("ctr could not import " + podmanImage + ": " + imported.out());
        }
        tagImage(podmanImage, name);
    }

    /**
     * The Deployment and ReplicaSet controllers, which the shared control plane does not run (its
     * Deployments are inert, so the install's own Deployment never competes with the operator the tests
     * run), until the returned handle is closed.
     */
    public AutoCloseable workloads() throws IOException {
        return controllers("workloads", WORKLOAD_CONTROLLERS);
    }

    /**
     * Kubernetes' taint eviction controller, until the returned handle is closed: it deletes the pods of a node
     * tainted {@code NoExecute} that do not tolerate the taint (a node health checker's remediation), saying so in
     * their {@code DisruptionTarget} condition. The shared control plane does not run it. It finds a tainted node's
     * pods through an index of pods by node that, in kube-controller-manager, other controllers register: without one
     * it acts only on pods that happen to change. The node lifecycle controller, which registers it on a cluster,
     * would mark kwok's nodes (no heartbeats) unreachable; the DaemonSet controller registers the same index and has
     * no DaemonSet to manage here.
     */
    public AutoCloseable taintEviction() throws IOException {
        return controllers("taint-eviction", "taint-eviction-controller,daemonset-controller");
    }

    private AutoCloseable controllers(String name, String controllers) throws IOException {
        startProcess("kube-controller-manager-" + name, List.of(cluster.bin.resolve("kube-controller-manager").toString(),
                "--kubeconfig=" + cluster.adminKubeconfig, "--controllers=" + controllers,
                "--leader-elect=false", "--secure-port=0"));
        return () -> cluster.stopProcess("kube-controller-manager-" + name);
    }

    /** The node forgets this name of an image, if it has it (the store, kept between runs, keeps the content under its other names). */
    public void forgetImage(String name) {
        ctr("images", "rm", name);
    }

    /**
     * The kubernetes Service's endpoint, which this tier's API server does not publish itself (it listens
     * on loopback only, which a pod cannot reach): the relay on the bridge. In-cluster clients (the
     * operator's pod) reach https://10.96.0.1 through kube-proxy, as on any cluster.
     */
    private void publishApiServer() {
        cluster.kubectl().runWithInput("""
                apiVersion: discovery.k8s.io/v1
                kind: EndpointSlice
                metadata:
                  name: kubernetes
                  namespace: default
                  labels: {kubernetes.io/service-name: kubernetes, endpointslice.kubernetes.io/managed-by: torchjob-real-node}
                addressType: IPv4
                endpoints: [{addresses: ["%s"], conditions: {ready: true}}]
                ports: [{name: https, port: %d, protocol: TCP}]
                """.formatted(GATEWAY, API_SERVER_RELAY_PORT), "apply", "--server-side", "--force-conflicts", "-f", "-").orFail();
    }

    /**
     * kube-proxy in iptables mode, for the Services' range only: no NodePorts beyond the bridge's address,
     * no localhost NodePorts, and the conntrack settings left as they are.
     */
    private void startKubeProxy() throws IOException {
        Path config = STATE.resolve("kube-proxy.yaml");
        Files.writeString(config, """
                apiVersion: kubeproxy.config.k8s.io/v1alpha1
                kind: KubeProxyConfiguration
                clientConnection: {kubeconfig: %s}
                hostnameOverride: %s
                bindAddress: %s
                healthzBindAddress: 127.0.0.1:%d
                metricsBindAddress: 127.0.0.1:%d
                mode: iptables
                clusterCIDR: %s
                nodePortAddresses: ["%s/32"]
                iptables: {localhostNodePorts: false, masqueradeAll: false}
                conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
                """.formatted(cluster.adminKubeconfig, NAME, GATEWAY, kubeProxyHealthPort, ListenPorts.free(), POD_RANGE, GATEWAY));
        startProcess("kube-proxy", List.of(bin.resolve("kube-proxy").toString(), "--config=" + config));
    }

    /** kube-proxy is healthy once the node it serves exists and it has written the Services' rules. */
    private void awaitKubeProxy() {
        await("kube-proxy", () -> {
            try {
                var connection = (java.net.HttpURLConnection) URI.create("http://127.0.0.1:" + kubeProxyHealthPort + "/healthz").toURL()
                        .openConnection();
                connection.setConnectTimeout(500);
                connection.setReadTimeout(2000);
                return connection.getResponseCode() == 200;
            } catch (IOException e) {
                return false;
            }
        });
    }

    private void startCoreDns() throws IOException {
        Path corefile = STATE.resolve("Corefile");
        // The cluster's names from the API server; any other name NXDOMAIN at once, as an upstream resolver
        // would answer it (without that block CoreDNS answers SERVFAIL, which resolvers retry: PyTorch's
        // rendezvous, whose short names are tried outside the cluster's domain too, waited 30 s and more).
        Files.writeString(corefile, """
                cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
                    bind %1$s
                    errors
                    log
                    health 127.0.0.1:%2$d
                    ready 127.0.0.1:%3$d
                    kubernetes cluster.local in-addr.arpa ip6.arpa {
                        kubeconfig %4$s
                        pods insecure
                        ttl 5
                    }
                    cache 5
                }
                .:53 {
                    bind %1$s
                    errors
                    log
                    template ANY ANY {
                        rcode NXDOMAIN
                    }
                }
                """.formatted(GATEWAY, corednsHealthPort, corednsReadyPort, cluster.adminKubeconfig));
        startProcess("coredns", List.of(bin.resolve("coredns").toString(), "-conf", corefile.toString()));
    }

    /**
     * The controllers a kubelet's pods need and the kwok tests do not (run in a second controller manager,
     * so the shared one stays as light as the benchmarks measured it): EndpointSlices, from which CoreDNS
     * answers the headless Services' names, and each namespace's kube-root-ca.crt, which every pod's
     * service-account token volume mounts.
     */
    private void startExtraControllers() throws IOException {
        startProcess("kube-controller-manager-node", List.of(cluster.bin.resolve("kube-controller-manager").toString(),
                "--kubeconfig=" + cluster.adminKubeconfig,
                "--controllers=" + EXTRA_CONTROLLERS,
                "--leader-elect=false", "--secure-port=0"));
    }

    private Path systemBus() {
        return STATE.resolve("dbus/system_bus_socket");
    }

    /**
     * The node's own D-Bus system bus (Debian's dbus-daemon) and on it the stand-in for systemd-logind that node.sh
     * builds: what the kubelet's graceful node shutdown talks to. The machine's own bus, if it has one, is not used.
     */
    private void startLogind() throws IOException {
        Files.createDirectories(systemBus().getParent());
        Files.deleteIfExists(systemBus());
        Path config = systemBus().resolveSibling("system.conf");
        Files.writeString(config, """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig>
                  <type>system</type>
                  <listen>unix:path=%s</listen>
                  <auth>EXTERNAL</auth>
                  <policy context="default">
                    <allow user="root"/>
                    <allow own="*"/>
                    <allow send_destination="*"/>
                    <allow receive_sender="*"/>
                  </policy>
                </busconfig>
                """.formatted(systemBus()));
        startProcess("dbus-daemon", List.of("dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile"));
        await("dbus-daemon", () -> Files.exists(systemBus()));
        startProcess("logind", List.of("env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + systemBus(), bin.resolve("logind").toString()));
        await("logind", () -> cluster.report("logind").contains("logind: ready"));
    }

    /**
     * The kubelet's graceful node shutdown, as systemd starts it on {@code shutdown} or {@code systemctl poweroff}:
     * logind says the machine is about to go down, the kubelet stops every pod of the node (reason {@code Terminated},
     * within {@code shutdownGracePeriod}), says the node is not ready and refuses new pods ({@code NodeShutdown}).
     * Nothing is shut down: the returned handle, closed, cancels it ({@code shutdown -c}), and the kubelet takes pods again.
     */
    public AutoCloseable shutDown() throws IOException, InterruptedException {
        long pid = cluster.pid("logind");
        signal(pid, "USR1");
        return () -> signal(pid, "USR2");
    }

    /** The file naming the stand-in GPUs that are unhealthy, one a line. */
    private Path unhealthyGpus() {
        return STATE.resolve("gpus/unhealthy");
    }

    /**
     * The stand-in for a GPU vendor's device plugin that node.sh builds: the node has {@value #GPUS} {@code nvidia.com/gpu},
     * GPU-0 to GPU-3, each container told its own in {@code NVIDIA_VISIBLE_DEVICES}. Waits until the node shows them.
     */
    private void startGpus() throws IOException {
        Files.createDirectories(unhealthyGpus().getParent());
        Files.writeString(unhealthyGpus(), "");
        // The kubelet's device-plugins folder is /var/lib/kubelet/device-plugins whatever its root dir (NodeHost removes it).
        startProcess("gpus", List.of(bin.resolve("gpus").toString(), "-dir", NodeHost.DEVICE_PLUGINS.toString(),
                "-count", String.valueOf(GPUS), "-unhealthy", unhealthyGpus().toString()));
        await("gpus", () -> gpusAllocatable() != null);
    }

    /** The DRA driver of the stand-in GPUs, its DeviceClass names it. */
    public static final String DRA_DRIVER = "gpu.torchjob.test";

    private Path draFaults() {
        return STATE.resolve("dra/faults");
    }

    /**
     * The stand-in for a GPU vendor's DRA driver that node.sh builds: a kubelet plugin publishing {@value #GPUS} devices
     * of {@link #DRA_DRIVER}, gpu-0 to gpu-3, in the node's ResourceSlice, and the DeviceClass of the same name that a
     * ResourceClaimTemplate asks for. Waits until the slice is there.
     */
    private void startDra() throws IOException {
        Files.createDirectories(draFaults().getParent());
        Files.writeString(draFaults(), "");
        startProcess("dra", List.of(bin.resolve("dra").toString(), "-kubeconfig", cluster.adminKubeconfig.toString(), "-node", NAME,
                "-kubelet-dir", STATE.resolve("kubelet").toString(), "-count", String.valueOf(GPUS), "-faults", draFaults().toString()));
        cluster.kubectl().runWithInput("""
                apiVersion: resource.k8s.io/v1
                kind: DeviceClass
                metadata: {name: %s}
                spec:
                  selectors: [{cel: {expression: 'device.driver == "%s"'}}]
                """.formatted(DRA_DRIVER, DRA_DRIVER), "apply", "-f", "-").orFail();
        await("dra", () -> cluster.report("dra").contains("dra: ready"));
    }

    /**
     * The DRA driver reports this device (gpu-0 …) failed until the returned handle is closed, as the vendor's driver
     * does after a fatal Xid error: with {@code words}, its health {@code Unhealthy} with them; with a {@code taint}
     * (NoSchedule, NoExecute), the device tainted so in its ResourceSlice.
     */
    public AutoCloseable draDeviceFails(String device, String words, String taint) throws IOException {
        String lines = (words == null ? "" : device + " Unhealthy " + words + "\n") + (taint == null ? "" : device + " " + taint + "\n");
        Files.writeString(draFaults(), lines);
        return () -> Files.writeString(draFaults(), "");
    }

    /**
     * The device plugin stopped and started again (a DaemonSet's upgrade): the kubelet offers no GPU while it is away.
     * Returns once the node offers them again.
     */
    public void restartGpus() throws Exception {
        gpusDown().close();
    }

    /**
     * The device plugin stopped until the returned handle is closed: the kubelet offers none of its GPUs, and refuses a
     * pod that asks for one ({@code UnexpectedAdmissionError}). Closed, it waits until the node offers them again.
     */
    public AutoCloseable gpusDown() throws IOException {
        cluster.stopProcess("gpus");
        await("gpus gone", () -> "0".equals(gpusAllocatable()));
        return () -> {
            startGpus();
            await("gpus", () -> String.valueOf(GPUS).equals(gpusAllocatable()));
        };
    }

    private String gpusAllocatable() {
        Node node = cluster.admin().nodes().withName(NAME).get();
        var allocatable = node == null || node.getStatus().getAllocatable() == null ? null : node.getStatus().getAllocatable().get("nvidia.com/gpu");
        return allocatable == null ? null : allocatable.getAmount();
    }

    /**
     * The device plugin reports these stand-in GPUs Unhealthy, as NVIDIA's reports a GPU after a fatal Xid error (ECC,
     * fallen off the bus), until the returned handle is closed.
     */
    public AutoCloseable gpusFail(String... devices) throws IOException {
        Files.writeString(unhealthyGpus(), String.join("\n", devices) + "\n");
        return () -> Files.writeString(unhealthyGpus(), "");
    }

    private void startKubelet() throws IOException {
        Path config = STATE.resolve("kubelet.yaml");
        Files.writeString(config, """
                apiVersion: kubelet.config.k8s.io/v1beta1
                kind: KubeletConfiguration
                cgroupDriver: cgroupfs
                failCgroupV1: false
                failSwapOn: false
                containerRuntimeEndpoint: unix://%s
                clusterDNS: [%s]
                clusterDomain: cluster.local
                resolvConf: ""
                address: %s
                port: %d
                healthzPort: 0
                readOnlyPort: 0
                enforceNodeAllocatable: []
                evictionHard: {}
                volumeStatsAggPeriod: 5s
                imageGCHighThresholdPercent: 100
                imageGCLowThresholdPercent: 99
                shutdownGracePeriod: 10s
                shutdownGracePeriodCriticalPods: 2s
                rotateCertificates: false
                serverTLSBootstrap: false
                podLogsDir: %s
                authentication:
                  anonymous: {enabled: true}
                  webhook: {enabled: false}
                authorization: {mode: AlwaysAllow}
                """.formatted(socket(), GATEWAY, GATEWAY, kubeletPort, STATE.resolve("pod-logs")));
        startProcess("kubelet", List.of("env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + systemBus(), bin.resolve("kubelet").toString(),
                "--config=" + config,
                "--kubeconfig=" + cluster.adminKubeconfig, "--root-dir=" + STATE.resolve("kubelet"),
                "--cert-dir=" + STATE.resolve("kubelet-pki"), "--hostname-override=" + NAME, "--node-ip=" + GATEWAY,
                "--node-labels=test.torchjob.dev/real-node=true", "--v=" + System.getProperty("torchjob.kubelet.verbosity", "0")));
    }

    private void awaitReady() {
        KubernetesClient admin = cluster.admin();
        await("kubelet", () -> {
            Node node = admin.nodes().withName(NAME).get();
            return node != null && node.getStatus() != null && node.getStatus().getConditions() != null
                    && node.getStatus().getConditions().stream().anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
        });
        // The not-ready taint the node got at registration is lifted by the node lifecycle controller, which the
        // tier does not run (it would evict the kwok nodes' pods): the same merge patch as for the kwok nodes.
        admin.nodes().withName(NAME).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"taints\":null}}");
    }

    /**
     * Pods go to this node while the returned handle is open: the kwok nodes are cordoned (their pods
     * stay), then uncordoned and this node cordoned when it is closed.
     */
    public AutoCloseable exclusive() {
        cordon(NAME, false);
        kwokNodes().forEach(n -> cordon(n, true));
        return () -> {
            cordon(NAME, true);
            kwokNodes().forEach(n -> cordon(n, false));
        };
    }

    /**
     * The node's kubelet stopped and started again, as an upgrade or a change of its configuration does: the
     * containers run on meanwhile. Returns once the new kubelet has renewed the node's Lease.
     */
    public void restartKubelet() throws IOException {
        cluster.stopProcess("kubelet");
        Instant stopped = Instant.now();
        host.recordKernelSettings();
        startKubelet();
        awaitLeaseRenewedAfter(stopped);
        host.restoreKernelSettings();
    }

    /**
     * The node's containerd stopped and started again (an upgrade): the containers run on meanwhile, held by their
     * shims. Returns once containerd answers again.
     */
    public void restartContainerd() throws IOException {
        cluster.stopProcess("containerd");
        startContainerd();
    }

    /** Until the node's Lease, which its kubelet renews every 10 s from its start, was renewed after {@code moment}. */
    private void awaitLeaseRenewedAfter(Instant moment) {
        KubernetesClient admin = cluster.admin();
        await("kubelet", () -> admin.leases().inNamespace("kube-node-lease").withName(NAME).get().getSpec().getRenewTime()
                .toInstant().isAfter(moment));
    }

    /**
     * The node's kubelet stops (SIGSTOP) until the returned handle is closed (SIGCONT), as a node cut off from the
     * API server: its containers run on, nothing about them is reported, and no deletion of its pods is confirmed.
     */
    public AutoCloseable kubeletCutOff() throws IOException, InterruptedException {
        long pid = cluster.pid("kubelet");
        signal(pid, "STOP");
        return () -> signal(pid, "CONT");
    }

    private static void signal(long pid, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("bash", "-c", "kill -" + signal + " " + pid).redirectErrorStream(true).start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + signal + " " + pid + ": " + new String(kill.getInputStream().readAllBytes()));
        }
    }

    private List<String> kwokNodes() {
        return cluster.admin().nodes().withLabel("type", "kwok").list().getItems().stream().map(n -> n.getMetadata().getName()).toList();
    }

    private void cordon(String node, boolean unschedulable) {
        cluster.admin().nodes().withName(node).patch(PatchContext.of(PatchType.JSON_MERGE),
                "{\"spec\":{\"unschedulable\":" + (unschedulable ? "true" : "null") + "}}");
    }

    private void startProcess(String name, List<String> command) throws IOException {
        cluster.start(name, command);
    }

    /** Stops the node and puts back what it changed on the machine. */
    @Override
    public synchronized void close() {
        for (String name : List.of("dra", "gpus", "kubelet", "logind", "dbus-daemon", "kube-proxy", "coredns", "kube-controller-manager-node")) {
            cluster.stopProcess(name);
        }
        if (relay != null) {
            relay.close();
        }
        cluster.kubectl().run("delete", "endpointslice", "kubernetes", "-n", "default", "--ignore-not-found");
        if (Files.exists(socket())) {
            // Every container of the node's pods, then containerd.
            for (String task : ctr("tasks", "ls", "-q").out().lines().filter(l -> !l.isBlank()).toList()) {
                ctr("tasks", "kill", "-s", "SIGKILL", task);
            }
            sleepQuietly(500);
            for (String task : ctr("tasks", "ls", "-q").out().lines().filter(l -> !l.isBlank()).toList()) {
                ctr("tasks", "rm", "-f", task);
            }
            for (String container : ctr("containers", "ls", "-q").out().lines().filter(l -> !l.isBlank()).toList()) {
                ctr("containers", "rm", container);
            }
        }
        cluster.stopProcess("containerd");
        host.restoreKernelSettings();
        try {
            NodeHost.cleanUp();
        } catch (IOException e) {
            System.err.println("[real-node] clean-up incomplete: " + e.getMessage());
        }
    }

    NodeHost.Result ctr(String... args) {
        List<String> command = new ArrayList<>(List.of(bin.resolve("ctr").toString(), "--address", socket().toString(), "-n", "k8s.io"));
        command.addAll(List.of(args));
        return NodeHost.exec(command);
    }

    private interface Check {
        boolean done() throws Exception;
    }

    private void await(String what, Check check) {
        Instant deadline = Instant.now().plus(READY_TIMEOUT);
        while (Instant.now().isBefore(deadline)) {
            try {
                if (check.done()) {
                    return;
                }
            } catch (Exception e) {
                // not yet
            }
            sleepQuietly(250);
        }
        throw new IllegalStateException(what + " was not ready within " + READY_TIMEOUT + ": " + cluster.report(what));
    }

    private static void sleepQuietly(long millis) {
        ControlPlane.sleep(millis);
    }

}
