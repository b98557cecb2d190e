package dev.torchjob.operator.local;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import dev.torchjob.operator.engine.TrainingContainer;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * torchrun replicas on one machine. In a cluster each pod's c10d agent compares the rendezvous
 * endpoint with its own host name, and only the pod named there hosts the rendezvous store; here every
 * pod is 127.0.0.1, so every agent would try to host it on the same port and all but one would fail.
 * The local node tells each agent whether it hosts ({@code --rdzv_conf is_host}): only the pod the
 * endpoint names. And because Debian's torchrun (PyTorch 1.13 on Python 3.11) crashes at start-up,
 * a local run first checks that this machine's torchrun starts at all, and refuses at once if not.
 */
final class TorchrunOnOneHost {
    static final Duration PROBE_TIMEOUT = Duration.ofSeconds(60);
    private static final String PROBE_SAYS = "torchrun-probe-ok";

    private TorchrunOnOneHost() {
    }

    static boolean launches(List<String> argv) {
        if (argv.isEmpty()) {
            return false;
        }
        String program = Path.of(argv.get(0)).getFileName().toString();
        return program.equals("torchrun")
                || (program.startsWith("python") && argv.size() > 2 && argv.get(1).equals("-m") && argv.get(2).equals("torch.distributed.run"));
    }

    /** torchrun, or python -m torch.distributed.run: the words before torchrun's own options. */
    private static int launcherWords(List<String> argv) {
        return Path.of(argv.get(0)).getFileName().toString().equals("torchrun") ? 1 : 3;
    }

    /**
     * The command line with this pod's part in the rendezvous made explicit: hosting it when the
     * endpoint names this pod as the cluster would resolve it (before the local mode maps the job's
     * names to 127.0.0.1). The endpoint and extra rendezvous settings may be options or, as Kubeflow
     * gives them, torchrun's PET_ environment variables.
     *
     * @param clusterArgv the same command line with the job's names as they are in a cluster
     * @param clusterEnv the container's environment, likewise
     */
    static List<String> adapted(List<String> argv, List<String> clusterArgv, Map<String, String> clusterEnv, String podName) {
        String endpoint = option(clusterArgv, "rdzv_endpoint").orElse(clusterEnv.get("PET_RDZV_ENDPOINT"));
        String host = endpoint == null ? null : endpoint.lastIndexOf(':') > 0 ? endpoint.substring(0, endpoint.lastIndexOf(':')) : endpoint;
        boolean hosts = host != null && (host.equals(podName) || host.startsWith(podName + "."));
        List<String> adapted = new ArrayList<>(argv);
        for (int i = launcherWords(argv); i < adapted.size(); i++) {
            String word = adapted.get(i);
            if (word.startsWith("--rdzv_conf=") || word.startsWith("--rdzv-conf=")) {
                adapted.set(i, word + ",is_host=" + hosts);
                return adapted;
            }
        }
        String conf = clusterEnv.get("PET_RDZV_CONF");
        adapted.add(launcherWords(argv), "--rdzv_conf=" + (conf == null || conf.isBlank() ? "" : conf + ",") + "is_host=" + hosts);
        return adapted;
    }

    /** A torchrun option's value, in either spelling ({@code --rdzv_endpoint=X}, {@code --rdzv-endpoint X}). */
    static Optional<String> option(List<String> argv, String name) {
        List<String> spellings = List.of("--" + name, "--" + name.replace('_', '-'));
        for (int i = 0; i < argv.size(); i++) {
            String word = argv.get(i);
            for (String spelling : spellings) {
                if (word.startsWith(spelling + "=")) {
                    return Optional.of(word.substring(spelling.length() + 1));
                }
                if (word.equals(spelling) && i + 1 < argv.size()) {
                    return Optional.of(argv.get(i + 1));
                }
            }
        }
        return Optional.empty();
    }

    /**
     * Why this machine cannot run the job's torchrun replicas, or empty: a job none of whose pods
     * launches with torchrun needs nothing; otherwise torchrun must start a one-process job.
     */
    static Optional<String> cannotRun(List<Pod> pods, Path workDirectory) {
        return cannotRun(pods, workDirectory, PROBE_TIMEOUT);
    }

    static Optional<String> cannotRun(List<Pod> pods, Path workDirectory, Duration timeout) {
        Optional<List<String>> torchrun = pods.stream().map(TorchrunOnOneHost::commandLine).filter(TorchrunOnOneHost::launches).findFirst();
        if (torchrun.isEmpty()) {
            return Optional.empty();
        }
        List<String> argv = torchrun.get();
        String program = argv.get(0);
        List<String> launcher = new ArrayList<>(argv.subList(0, launcherWords(argv)));
        Path probe = null;
        Path output = null;
        try {
            probe = Files.createTempFile("torchrun-probe", ".py");
            output = Files.createTempFile("torchrun-probe", ".log");
            Files.writeString(probe, "print('" + PROBE_SAYS + "')\n");
            launcher.addAll(List.of("--standalone", "--nnodes=1", "--nproc_per_node=1", probe.toString()));
            // Its output to a file: a torchrun that hangs must not hang the check with it.
            Process process = new ProcessBuilder(launcher).directory(workDirectory.toFile()).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                return Optional.of(because(program, "it did not finish a one-process job within " + timeout.toSeconds() + " s"));
            }
            String said = Files.readString(output);
            if (process.exitValue() == 0 && said.contains(PROBE_SAYS)) {
                return Optional.empty();
            }
            String lastLine = said.lines().filter(l -> !l.isBlank()).reduce((a, b) -> b).orElse("no output").trim();
            return Optional.of(because(program, "it exits with code " + process.exitValue() + " on a one-process job: " + lastLine));
        } catch (IOException e) {
            return Optional.of(because(program, "it cannot be started: " + e.getMessage()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.of(because(program, "the check was interrupted"));
        } finally {
            deleteQuietly(probe);
            deleteQuietly(output);
        }
    }

    private static void deleteQuietly(Path file) {
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a temporary file left behind is harmless
            }
        }
    }

    private static String because(String program, String reason) {
        return "the job's replicas start with torchrun, and this machine's " + program + " does not work: " + reason
                + ". Locally, use a PyTorch whose torchrun works (2.x: pip install torch), or start the script with python"
                + " for the local run (T9k: spec.torchrunConfig.enabled: false); Debian's python3-torch 1.13 torchrun"
                + " crashes on Python 3.11";
    }

    private static List<String> commandLine(Pod pod) {
        return ReplicaProcess.commandLine(TrainingContainer.of(pod));
    }
}
