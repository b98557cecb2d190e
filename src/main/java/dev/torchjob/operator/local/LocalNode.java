package dev.torchjob.operator.local;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import dev.torchjob.operator.engine.TrainingContainer;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerStateBuilder;
import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStateTerminatedBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

/**
 * Plays kubelet on this machine: runs each pod's training container as a local process, and
 * writes its state and exit code back into the pod's status, so the real reconciler decides
 * restarts, budget and outcome. Images are ignored; the job's DNS names resolve to 127.0.0.1.
 */
final class LocalNode implements ResourceEventHandler<Pod> {
    private static final long GRACE_MILLIS = 3000;

    private final KubernetesClient client;
    private final String namespace;
    private final Path defaultWorkingDirectory;
    private final PrintStream out;
    private final GpuAssignment gpus;
    /** What the downward API says of the node every pod runs on: this machine. */
    private final DownwardApi.Node node = DownwardApi.Node.thisMachine();
    private final Map<String, Process> processesByPodUid = new ConcurrentHashMap<>();
    /** The end of each running process's output: its termination message if it fails. */
    private final Map<String, OutputTail> outputByPodUid = new ConcurrentHashMap<>();
    private final Set<String> startedPodUids = ConcurrentHashMap.newKeySet();
    /** Pods deleted while their container waited to be restarted in place: it is not started again. */
    private final Set<String> deletedPodUids = ConcurrentHashMap.newKeySet();
    /** Pods whose GPUs a pod of the last group, still stopping, holds: said once. */
    private final Set<String> waitingForGpus = ConcurrentHashMap.newKeySet();
    private volatile boolean stopping;
    /**
     * Held while a process is started and registered, and while a pod is marked deleted: a restart in
     * place that fires as its pod is deleted either sees the deletion or is stopped by it. Without it a
     * process could start after its pod was gone and keep the job's MASTER_PORT from the next group.
     */
    private final Object lifecycle = new Object();
    private SharedIndexInformer<Pod> informer;

    LocalNode(KubernetesClient client, String namespace, Path defaultWorkingDirectory, PrintStream out, GpuAssignment gpus) {
        this.client = client;
        this.namespace = namespace;
        this.defaultWorkingDirectory = defaultWorkingDirectory;
        this.out = out;
        this.gpus = gpus;
    }

    void start() {
        // The embedded API server holds only this job's pods, of either kind.
        informer = client.pods().inNamespace(namespace).inform(this);
    }

    @Override
    public void onAdd(Pod pod) {
        startIfNew(pod);
    }

    @Override
    public void onUpdate(Pod oldPod, Pod pod) {
        startIfNew(pod);
    }

    @Override
    public void onDelete(Pod pod, boolean finalStateUnknown) {
        synchronized (lifecycle) {
            deletedPodUids.add(pod.getMetadata().getUid());
        }
        stop(pod.getMetadata().getUid());
    }

    /** Kills every training process (graceful first), like a node being drained. */
    void stopAll() {
        synchronized (lifecycle) {
            stopping = true;
        }
        if (informer != null) {
            informer.close();
        }
        new ArrayList<>(processesByPodUid.keySet()).forEach(this::stop);
    }

    private void startIfNew(Pod pod) {
        String uid = pod.getMetadata().getUid();
        if (stopping || pod.getMetadata().getDeletionTimestamp() != null || !startedPodUids.add(uid)) {
            return;
        }
        launch(pod, 0, null);
    }

    /** Starts the training container's process; {@code restarts} and {@code last}: in-place restarts so far and how the last run ended. */
    private void launch(Pod pod, int restarts, ContainerStateTerminated last) {
        String uid = pod.getMetadata().getUid();
        String podName = pod.getMetadata().getName();
        ReplicaProcess replica = ReplicaProcess.of(pod, defaultWorkingDirectory, node);
        List<String> argv = replica.argv();
        if (argv.isEmpty()) {
            out.println("[" + podName + "] no command: images are not run locally, give the container a command");
            finish(pod, restarts, last, 127, "StartError", "no command: images are not run locally, give the container a command");
            return;
        }
        int askedGpus = GpuAssignment.asked(pod);
        Optional<List<MachineGpus.Gpu>> given = gpus.take(podName, uid, askedGpus);
        if (given.isEmpty()) {
            // As a pod waits for a node's GPUs: a pod of the last group, still stopping, holds them.
            if (waitingForGpus.add(uid)) {
                out.println("[" + podName + "] waiting for " + askedGpus + " GPU(s): other replicas hold this machine's (one still"
                        + " stopping frees its own when it ends)");
            }
            CompletableFuture.delayedExecutor(200, TimeUnit.MILLISECONDS).execute(() -> {
                if (!stopping && !deletedPodUids.contains(uid)) {
                    launch(pod, restarts, last);
                }
            });
            return;
        }
        if (restarts == 0) {
            // Said once per pod, as it starts: not again while it waits for GPUs, nor at each restart in place.
            replica.leftOut().forEach(line -> out.println("[" + podName + "] " + line));
            if (askedGpus > 0) {
                out.println("[" + podName + "] given " + String.join(", ", given.get().stream().map(MachineGpus.Gpu::toString).toList())
                        + " (" + GpuAssignment.NVIDIA_GPU + ": " + askedGpus + ")");
            }
        }
        ProcessBuilder builder = new ProcessBuilder(argv).directory(replica.workingDirectory().toFile()).redirectErrorStream(true);
        builder.environment().putAll(replica.environment());
        builder.environment().putAll(gpus.environment(given.get(), replica.environment().get("CUDA_VISIBLE_DEVICES")));
        Process started = null;
        String cannotStart = null;
        synchronized (lifecycle) {
            if (stopping || deletedPodUids.contains(uid)) {
                gpus.release(uid);
                return;
            }
            try {
                started = builder.start();
                processesByPodUid.put(uid, started);
            } catch (IOException e) {
                cannotStart = "cannot start " + argv.get(0) + ": " + e.getMessage();
            }
        }
        if (started == null) {
            out.println("[" + podName + "] " + cannotStart);
            finish(pod, restarts, last, 127, "StartError", cannotStart);
            return;
        }
        Process process = started;
        markRunning(pod, restarts, last);
        OutputTail tail = new OutputTail();
        outputByPodUid.put(uid, tail);
        Thread output = new Thread(() -> copyOutput(podName, process, tail), "output-" + podName);
        output.setDaemon(true);
        output.start();
        process.onExit().thenAccept(ended -> {
            try {
                output.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            OutputTail lines = outputByPodUid.remove(uid);
            // A process we stopped belongs to a deleted pod: there is no status to write.
            if (processesByPodUid.remove(uid) != null && !stopping) {
                int exitCode = ended.exitValue();
                // As the kubelet says it: a process killed by a signal is an Error; only the memory cgroup's kill is OOMKilled.
                String reason = exitCode == 0 ? "Completed" : "Error";
                String message = exitCode == 0 || lines == null ? null : lines.message();
                if (restartsInPlace(pod, exitCode)) {
                    // As the kubelet does under pod restartPolicy OnFailure or Always: the same pod, a new run, after a back-off.
                    long delay = Math.min(30_000L, 1000L << Math.min(restarts, 5));
                    out.println("[" + podName + "] exited with code " + exitCode + "; the node restarts it in place in " + delay / 1000 + " s");
                    ContainerStateTerminated terminated = new ContainerStateTerminatedBuilder().withExitCode(exitCode).withReason(reason)
                            .withMessage(message).withFinishedAt(kubeletTime()).build();
                    CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS).execute(() -> {
                        if (!stopping && !deletedPodUids.contains(uid)) {
                            launch(pod, restarts + 1, terminated);
                        }
                    });
                } else {
                    finish(pod, restarts, last, exitCode, reason, message);
                }
            }
        });
    }

    private void stop(String uid) {
        Process process = processesByPodUid.remove(uid);
        if (process == null) {
            gpus.release(uid); // deleted while waiting to be restarted in place
            return;
        }
        // SIGTERM to the process and its children, SIGKILL after the grace period.
        process.descendants().forEach(ProcessHandle::destroy);
        process.destroy();
        try {
            if (!process.waitFor(GRACE_MILLIS, TimeUnit.MILLISECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly().waitFor(GRACE_MILLIS, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            gpus.release(uid);
        }
    }

    private void copyOutput(String podName, Process process, OutputTail tail) {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                tail.add(line);
                if (!stopping) { // the last words of processes we are killing are noise
                    out.println("[" + podName + "] " + line);
                }
            }
        } catch (IOException e) {
            // the process is gone
        }
    }

    /** Pod restartPolicy OnFailure restarts a container that failed, Always any that ended (T9k pods are Never). */
    private static boolean restartsInPlace(Pod pod, int exitCode) {
        String policy = pod.getSpec().getRestartPolicy();
        return "Always".equals(policy) || ("OnFailure".equals(policy) && exitCode != 0);
    }

    private void markRunning(Pod pod, int restarts, ContainerStateTerminated last) {
        Container container = TrainingContainer.of(pod);
        writeStatus(pod, new PodStatusBuilder().withPhase("Running").withStartTime(kubeletTime())
                .withContainerStatuses(new ContainerStatusBuilder().withName(container.getName()).withReady(true).withRestartCount(restarts)
                        .withState(new ContainerStateBuilder().withNewRunning().withStartedAt(kubeletTime()).endRunning().build())
                        .withLastState(last == null ? null : new ContainerStateBuilder().withTerminated(last).build())
                        .build())
                .build());
    }

    /** The pod's last run ended for good; its restarts in place stay counted in its status, as the kubelet keeps them. */
    private void finish(Pod pod, int restarts, ContainerStateTerminated last, int exitCode, String reason, String message) {
        gpus.release(pod.getMetadata().getUid());
        Container container = TrainingContainer.of(pod);
        writeStatus(pod, new PodStatusBuilder().withPhase(exitCode == 0 ? "Succeeded" : "Failed")
                .withContainerStatuses(new ContainerStatusBuilder().withName(container.getName()).withReady(false).withRestartCount(restarts)
                        .withLastState(last == null ? null : new ContainerStateBuilder().withTerminated(last).build())
                        .withState(new ContainerStateBuilder().withNewTerminated().withExitCode(exitCode).withReason(reason)
                                .withMessage(message).withFinishedAt(kubeletTime()).endTerminated().build())
                        .build())
                .build());
    }

    /** Now, in whole seconds, as the API serves the kubelet's times. */
    private static String kubeletTime() {
        return Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString();
    }

    /** Writes the status only to the very pod that ran: a replacement of the same name is left alone. */
    private void writeStatus(Pod pod, PodStatus status) {
        try {
            Pod current = client.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).get();
            if (current == null || !current.getMetadata().getUid().equals(pod.getMetadata().getUid())) {
                return;
            }
            current.setStatus(status);
            client.pods().inNamespace(namespace).resource(current).updateStatus();
        } catch (KubernetesClientException e) {
            out.println("[local] could not update pod " + pod.getMetadata().getName() + ": " + e.getMessage());
        }
    }
}
