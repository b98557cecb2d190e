package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** The real kubectl, run as a user would, against the test cluster. */
public final class Kubectl {
    private final Path binary;
    private final Path kubeconfig;
    /** Where kubectl finds plugins (kubectl-NAME on PATH), or null: then the kubeconfig is passed as a flag. */
    private final Path plugins;
    /** Variables set for kubectl and its plugins, on top of this process's environment. */
    private final Map<String, String> environment;

    Kubectl(Path binary, Path kubeconfig) {
        this(binary, kubeconfig, null, Map.of());
    }

    private Kubectl(Path binary, Path kubeconfig, Path plugins, Map<String, String> environment) {
        this.binary = binary;
        this.kubeconfig = kubeconfig;
        this.plugins = plugins;
        this.environment = environment;
    }

    /**
     * This kubectl with the plugins of a folder on PATH, the kubeconfig in KUBECONFIG as a plugin
     * user has it (kubectl hands a plugin no flag given before the plugin's name).
     */
    public Kubectl withPlugins(Path folder, Path userKubeconfig) {
        return new Kubectl(binary, userKubeconfig, folder, environment);
    }

    /** This kubectl with these variables in its environment (a plugin's JAVA_HOME, say). */
    public Kubectl withEnvironment(Map<String, String> variables) {
        Map<String, String> all = new java.util.HashMap<>(environment);
        all.putAll(variables);
        return new Kubectl(binary, kubeconfig, plugins, Map.copyOf(all));
    }

    private ProcessBuilder process(String... args) {
        List<String> command = new ArrayList<>(List.of(binary.toString()));
        if (plugins == null) {
            command.add("--kubeconfig=" + kubeconfig);
        }
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().putAll(environment);
        if (plugins != null) {
            builder.environment().put("KUBECONFIG", kubeconfig.toString());
            builder.environment().put("PATH", plugins + java.io.File.pathSeparator + System.getenv("PATH"));
        }
        return builder;
    }

    public record Result(int exitCode, String out, String err) {
        public Result orFail() {
            if (exitCode != 0) {
                throw new AssertionError("kubectl exited with " + exitCode + ": " + err + out);
            }
            return this;
        }
    }

    /** Runs {@code kubectl ARGS} with the given standard input (or none) and waits up to two minutes. */
    public Result runWithInput(String stdin, String... args) {
        try {
            Process process = process(args).start();
            CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(process.getInputStream()));
            CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(process.getErrorStream()));
            try (var in = process.getOutputStream()) {
                if (stdin != null) {
                    in.write(stdin.getBytes(StandardCharsets.UTF_8));
                }
            }
            if (!process.waitFor(2, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                throw new AssertionError("kubectl " + String.join(" ", args) + " did not finish in two minutes");
            }
            return new Result(process.exitValue(), out.join(), err.join());
        } catch (IOException e) {
            throw new AssertionError("could not run kubectl: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Starts {@code kubectl ARGS} that runs until stopped, such as a watch ({@code -w}). */
    public Watch watch(String... args) throws IOException {
        Process process = process(args).redirectErrorStream(true).start();
        StringBuffer printed = new StringBuffer();
        Thread reader = new Thread(() -> {
            try (var lines = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                lines.lines().forEach(line -> printed.append(line).append('\n'));
            } catch (IOException | java.io.UncheckedIOException e) {
                // ended
            }
        }, "kubectl-watch");
        reader.setDaemon(true);
        reader.start();
        return new Watch(process, printed);
    }

    /** A kubectl that runs until {@link #stop()}; {@link #printed()} is what it printed so far. */
    public record Watch(Process process, StringBuffer output) {
        public String printed() {
            return output.toString();
        }

        public String stop() {
            process.destroy();
            return printed();
        }

        /** Its exit code once it ends by itself within this time; an AssertionError with what it printed otherwise. */
        public int awaitExit(java.time.Duration within) throws InterruptedException {
            if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError("still running after " + within + "; printed:\n" + stop());
            }
            return process.exitValue();
        }
    }

    public Result run(String... args) {
        return runWithInput(null, args);
    }

    private static String read(java.io.InputStream stream) {
        try {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    /** The cells of one row of kubectl's table output (columns are two or more spaces apart). */
    public static List<String> columns(String line) {
        return List.of(line.trim().split("\\s{2,}"));
    }
}
