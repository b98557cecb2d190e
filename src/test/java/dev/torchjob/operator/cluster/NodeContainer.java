package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * A container the real node runs, seen from the machine the node runs on: its main process as the kernel
 * knows it. What the runtime enforces (user, capabilities, the read-only root, the projected token, the
 * memory limit) is read here, not from inside the container, so it holds for an image without a shell
 * (the native image has none).
 */
public record NodeContainer(long pid) {

    /** The main process of the pod's training container (containerd's task for the container ID the kubelet reports). */
    public static NodeContainer of(RealNode node, Pod pod) {
        // The training container's: the kubelet orders the statuses by name, a sidecar's may come first.
        String training = dev.torchjob.operator.engine.TrainingContainer.of(pod).getName();
        String id = pod.getStatus().getContainerStatuses().stream().filter(s -> training.equals(s.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("no status of container " + training + " of " + pod.getMetadata().getName()))
                .getContainerID().replaceFirst("^containerd://", "");
        return node.ctr("tasks", "ls").out().lines().map(String::strip).filter(line -> line.startsWith(id + " "))
                .map(line -> new NodeContainer(Long.parseLong(line.split("\\s+")[1])))
                .findFirst().orElseThrow(() -> new AssertionError("no task for container " + id + " of " + pod.getMetadata().getName()));
    }

    /** A line of the process's /proc status, without its name: {@code Uid}, {@code CapEff}, {@code VmRSS}... */
    public String status(String field) {
        return read(Path.of("/proc", String.valueOf(pid), "status")).lines().filter(l -> l.startsWith(field + ":"))
                .map(l -> l.substring(field.length() + 1).strip()).findFirst().orElse("");
    }

    /** The mount options of the container's root file system, as its own mount namespace has them. */
    public List<String> rootMountOptions() {
        return read(Path.of("/proc", String.valueOf(pid), "mountinfo")).lines().map(l -> l.split(" "))
                .filter(fields -> fields[4].equals("/")).map(fields -> List.of(fields[5].split(","))).findFirst().orElseThrow();
    }

    /**
     * A path inside the container, through its root, so its mounts and their read-only flags apply. Its
     * absolute symbolic links are followed inside the container (Debian's /var/run is a link to /run),
     * where the kernel, walking from this machine, would follow them on the machine.
     */
    public Path file(String path) {
        Path root = Path.of("/proc", String.valueOf(pid), "root");
        Path resolved = root;
        for (Path name : Path.of(path).normalize()) {
            Path next = resolved.resolve(name.toString());
            Path target = Files.isSymbolicLink(next) ? read(() -> Files.readSymbolicLink(next)) : null;
            resolved = target == null ? next : target.isAbsolute() ? file(target.toString()) : resolved.resolve(target);
        }
        return resolved;
    }

    /** The process first in the OOM killer's line when its cgroup runs out (raising a score needs no privilege). */
    public void firstForTheOomKiller() {
        read(() -> Files.writeString(Path.of("/proc", String.valueOf(pid), "oom_score_adj"), "1000"));
    }

    /** The container's memory cgroup, as the machine mounts it (cgroup v1, the node's cgroupfs driver). */
    public Path memoryCgroup() {
        return read(Path.of("/proc", String.valueOf(pid), "cgroup")).lines().map(l -> l.split(":", 3))
                .filter(fields -> fields[1].equals("memory")).map(fields -> Path.of("/sys/fs/cgroup/memory" + fields[2]))
                .findFirst().orElseThrow();
    }

    private static String read(Path path) {
        return read(() -> Files.readString(path));
    }

    private interface FileAccess<T> {
        T get() throws IOException;
    }

    private static <T> T read(FileAccess<T> access) {
        try {
            return access.get();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
