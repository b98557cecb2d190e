package dev.torchjob.operator.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.utils.Serialization;

/**
 * The application as it ships, for tests that start it as a process: the JVM jar
 * ({@code target/quarkus-app/quarkus-run.jar}) or, when built with {@code -Dnative}, the native
 * executable (the build names it in {@code torchjob.runner}). Settings reach it only through
 * run-time channels: {@code -D} properties (both accept them), the environment and the kubeconfig.
 * A setting Quarkus fixes at build time is refused by the application itself, in both forms.
 */
public final class PackagedOperator {
    public static final Path RUNNER = Path.of(System.getProperty("torchjob.runner", "target/quarkus-app/quarkus-run.jar"))
            .toAbsolutePath();
    static final Path JVM_CONTAINERFILE = Path.of("native", "Containerfile.jvm");
    public static final Path DEPLOYMENT = Path.of("kubernetes", "base", "deployment.yaml");
    private static final Pattern JAVA_OPTS = Pattern.compile("(?m)^ENV JAVA_OPTS=\"([^\"]*)\"$");
    private static final Pattern OTHER_ENV = Pattern.compile("(?m)^ENV (?!JAVA_OPTS=)(\\w+)=(\\S+)$");

    private PackagedOperator() {
    }

    public static boolean isNative() {
        return !RUNNER.toString().endsWith(".jar");
    }

    /**
     * The VM options the operator runs with in its pod: the JVM image's {@code JAVA_OPTS}, its heap
     * sized from the Deployment's memory limit as in the container; none for the native executable,
     * whose heap settings are built in.
     */
    public static List<String> shippedVmOptions() {
        if (isNative()) {
            return List.of();
        }
        try {
            Matcher javaOpts = JAVA_OPTS.matcher(Files.readString(JVM_CONTAINERFILE));
            if (!javaOpts.find()) {
                throw new IllegalStateException(JVM_CONTAINERFILE + " sets no JAVA_OPTS");
            }
            Quantity memory = deployment().getSpec().getTemplate().getSpec().getContainers().get(0).getResources().getLimits().get("memory");
            List<String> options = new ArrayList<>(List.of("-XX:MaxRAM=" + Quantity.getAmountInBytes(memory).longValue()));
            options.addAll(List.of(javaOpts.group(1).strip().split("\\s+")));
            return options;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The install's Deployment of the operator, as kubectl applies it. */
    public static Deployment deployment() {
        try (InputStream in = Files.newInputStream(DEPLOYMENT)) {
            return Serialization.unmarshal(in, Deployment.class);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The rest of the JVM image's environment (glibc's malloc arenas); nothing for the native executable. */
    public static Map<String, String> shippedEnvironment() {
        if (isNative()) {
            return Map.of();
        }
        try {
            Map<String, String> environment = new TreeMap<>();
            OTHER_ENV.matcher(Files.readString(JVM_CONTAINERFILE)).results().forEach(r -> environment.put(r.group(1), r.group(2)));
            return environment;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The command line: VM options and properties first, then the application's own arguments. */
    public static List<String> command(List<String> vmOptions, Map<String, String> properties, String... arguments) {
        List<String> command = new ArrayList<>();
        if (isNative()) {
            command.add(RUNNER.toString());
        } else {
            command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        }
        command.addAll(vmOptions);
        properties.forEach((key, value) -> command.add("-D" + key + "=" + value));
        if (!isNative()) {
            command.addAll(List.of("-jar", RUNNER.toString()));
        }
        command.addAll(List.of(arguments));
        return command;
    }

    /**
     * The operator's executable as a kubectl plugin in this folder, as docs/user-guide.md installs it:
     * the native executable linked as kubectl-torchjob, or for the jar the launcher the user guide links,
     * {@code bin/kubectl-torchjob}. Returns the folder (for PATH).
     */
    public static Path asKubectlPlugin(Path folder) throws IOException {
        Files.createDirectories(folder);
        Path plugin = folder.resolve("kubectl-torchjob");
        Files.deleteIfExists(plugin);
        if (isNative()) {
            Files.createSymbolicLink(plugin, RUNNER.toAbsolutePath());
        } else {
            Files.createSymbolicLink(plugin, Path.of("bin", "kubectl-torchjob").toAbsolutePath());
        }
        return folder;
    }
}
