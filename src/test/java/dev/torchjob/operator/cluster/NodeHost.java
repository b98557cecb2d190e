package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The machine under the real node: what the node changes on it (its bridge and address, our guard
 * chain, fixed folders outside its state, the kernel settings the kubelet and kube-proxy set at start)
 * and how each is put back, also after a run that was killed; and the commands run on it.
 */
final class NodeHost {
    /** What the kubelet sets at start (setupKernelTunables), and forwarding, which the node does not need. */
    private static final List<String> KERNEL_SETTINGS = List.of("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
            "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
            "net/ipv4/conf/all/route_localnet");
    /** Our own iptables chain: nothing a pod sends is forwarded off the bridge. */
    private static final String GUARD_CHAIN = "TORCHJOB-NODE";
    /** Fixed paths the kubelet uses outside its root folder. */
    /** Where the kubelet serves device plugins' registrations, whatever its root dir. */
    static final Path DEVICE_PLUGINS = Path.of("/var/lib/kubelet/device-plugins");
    private static final List<Path> OUTSIDE_STATE = List.of(DEVICE_PLUGINS, Path.of("/var/log/containers"));
    /** Marks a folder the node made outside its state (and so removes), as opposed to one that was there. */
    private static final String MADE_HERE = ".made-by-torchjob-real-node";
    private final Map<String, String> kernelBefore = new LinkedHashMap<>();

    /** The fixed folders, the bridge with the node's address, and the chain that forwards nothing off it. */
    void prepare(String gateway) throws IOException {
        for (Path fixed : OUTSIDE_STATE) {
            Path topmostNew = null;
            for (Path p = fixed; p != null && !Files.exists(p); p = p.getParent()) {
                topmostNew = p;
            }
            if (topmostNew != null) {
                Files.createDirectories(fixed);
                Files.createFile(topmostNew.resolve(MADE_HERE)); // found and removed by the next start if this run is killed
            }
        }
        // The bridge and its address first: CoreDNS and the API server's relay bind to it. The pods' only
        // route is to the Services' range, through the node (CNI config below), where kube-proxy sends it
        // to a pod or to the relay; whatever else reaches the node from the bridge is never forwarded.
        command("ip", "link", "add", RealNode.BRIDGE, "type", "bridge");
        // Its MAC address set to itself, as the CNI bridge plugin does for a bridge it makes: a bridge left to
        // choose takes the lowest of its ports' and changes when that pod goes, and every other pod, holding
        // the old one for the gateway, lost CoreDNS and the Services for 30-50 s (PyTorch's rendezvous stalled).
        command("ip", "link", "set", RealNode.BRIDGE, "address", Files.readString(Path.of("/sys/class/net", RealNode.BRIDGE, "address")).strip());
        command("ip", "addr", "add", gateway + "/24", "dev", RealNode.BRIDGE);
        command("ip", "link", "set", RealNode.BRIDGE, "up");
        command("iptables", "-N", GUARD_CHAIN);
        command("iptables", "-A", GUARD_CHAIN, "-i", RealNode.BRIDGE, "!", "-o", RealNode.BRIDGE, "-j", "DROP");
        command("iptables", "-I", "FORWARD", "-j", GUARD_CHAIN);
    }

    void recordKernelSettings() {
        KERNEL_SETTINGS.forEach(s -> kernelBefore.put(s, readSysctl(s)));
        System.out.println("[real-node] kernel settings before the kubelet and kube-proxy: " + kernelBefore);
    }

    /**
     * Removes what a node leaves on the machine: the processes of a run that was killed (the kubelet, containerd,
     * its shims and CoreDNS name {@link RealNode#STATE} on their command lines; the pods' processes are in the kubepods
     * cgroups), its mounts, state, bridge, cgroups and the kubelet's iptables chains.
     */
    static void cleanUp() throws IOException {
        try (var processes = Files.list(Path.of("/proc"))) {
            for (Path process : processes.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                String commandLine;
                try (var in = Files.newInputStream(process.resolve("cmdline"))) {
                    commandLine = new String(in.readAllBytes(), StandardCharsets.UTF_8).replace('\0', ' ');
                } catch (IOException e) {
                    continue; // gone meanwhile
                }
                if (commandLine.contains(RealNode.STATE.toString()) || commandLine.contains(RealNode.EXTRA_CONTROLLERS)
                        || commandLine.contains(RealNode.WORKLOAD_CONTROLLERS)) {
                    commandQuietly("kill", "-9", process.getFileName().toString());
                }
            }
        }
        killCgroupProcesses(Path.of("/sys/fs/cgroup/pids/kubepods"));
        // Deepest first: pods' volumes and netns under the kubelet's and containerd's state, overlay mounts.
        List<String> mounts = Files.readAllLines(Path.of("/proc/self/mounts")).stream().map(l -> l.split(" ")[1])
                .map(m -> m.replace("\\040", " "))
                .filter(m -> m.startsWith(RealNode.STATE.toString()) || m.contains("/containerd-root/"))
                .sorted(Comparator.comparingInt(String::length).reversed()).toList();
        for (String mount : mounts) {
            commandQuietly("umount", "-l", mount);
        }
        deleteQuietly(RealNode.STATE);
        for (Path fixed : OUTSIDE_STATE) {
            for (Path p = fixed; p != null; p = p.getParent()) {
                if (Files.exists(p.resolve(MADE_HERE))) {
                    deleteQuietly(p);
                    break;
                }
            }
        }
        commandQuietly("ip", "link", "delete", RealNode.BRIDGE);
        removeIptablesChains();
        try (var controllers = Files.list(Path.of("/sys/fs/cgroup"))) {
            for (Path controller : controllers.toList()) {
                Path kubepods = controller.resolve("kubepods");
                if (Files.isDirectory(kubepods)) {
                    removeCgroup(kubepods);
                }
            }
        }
    }

    /**
     * The kubelet's and kube-proxy's chains (KUBE-*) and ours, with every rule that jumps to them: the
     * rules as iptables-save prints them, less those, restored table by table.
     */
    private static void removeIptablesChains() {
        for (String table : List.of("filter", "nat", "mangle")) {
            Result saved = exec(List.of("iptables-save", "-t", table));
            if (saved.exitCode != 0 || saved.out == null) {
                continue;
            }
            List<String> lines = saved.out.lines().toList();
            List<String> kept = lines.stream().filter(l -> !(l.contains("KUBE-") || l.contains(GUARD_CHAIN))).toList();
            if (kept.size() == lines.size()) {
                continue;
            }
            try {
                Process restore = new ProcessBuilder("iptables-restore", "-T", table).redirectErrorStream(true).start();
                restore.getOutputStream().write((String.join("\n", kept) + "\n").getBytes(StandardCharsets.UTF_8));
                restore.getOutputStream().close();
                String out = new String(restore.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (restore.waitFor() != 0) {
                    System.err.println("[real-node] iptables-restore of " + table + " failed: " + out);
                }
            } catch (IOException e) {
                System.err.println("[real-node] iptables-restore of " + table + ": " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Kills every process in the cgroup and below (the containers of a node whose kubelet is gone). */
    private static void killCgroupProcesses(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (var all = Files.walk(dir)) {
            for (Path procs : all.filter(p -> p.getFileName().toString().equals("cgroup.procs")).toList()) {
                for (String pid : Files.readAllLines(procs)) {
                    if (!pid.isBlank()) {
                        commandQuietly("kill", "-9", pid.strip());
                    }
                }
            }
        }
        ControlPlane.sleep(500);
    }

    /** A cgroup goes with rmdir, children first (its files cannot be deleted). */
    private static void removeCgroup(Path dir) throws IOException {
        try (var children = Files.list(dir)) {
            for (Path child : children.filter(Files::isDirectory).toList()) {
                removeCgroup(child);
            }
        }
        commandQuietly("rmdir", dir.toString());
    }

    void restoreKernelSettings() {
        kernelBefore.forEach((setting, value) -> {
            try {
                String now = readSysctl(setting);
                if (value != null && !value.equals(now)) {
                    Files.writeString(Path.of("/proc/sys", setting), value);
                    System.out.println("[real-node] put back " + setting + " " + now + " -> " + value);
                }
            } catch (IOException e) {
                System.err.println("[real-node] could not put back " + setting + "=" + value + ": " + e.getMessage());
            }
        });
    }

    private static String readSysctl(String setting) {
        // Not Files.readString: procfs reports a size of 0, and Java 17 reads one byte of such a file.
        try (var in = Files.newInputStream(Path.of("/proc/sys", setting))) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            return null;
        }
    }

    record Result(int exitCode, String out) {
    }

    static Result exec(List<String> command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(5, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                return new Result(-1, out);
            }
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            return new Result(-1, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "interrupted");
        }
    }

    static void command(String... command) {
        Result result = exec(List.of(command));
        if (result.exitCode != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed: " + result.out.strip());
        }
    }

    static int commandQuietly(String... command) {
        return exec(List.of(command)).exitCode;
    }

    private static void deleteQuietly(Path path) {
        if (!Files.exists(path)) {
            return;
        }
        try (var all = Files.walk(path)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("[real-node] could not delete " + path + ": " + e.getMessage());
        }
    }
}
