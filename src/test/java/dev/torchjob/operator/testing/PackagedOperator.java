package dev.torchjob.operator.testing;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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

    private PackagedOperator() {
    }

    public static boolean isNative() {
        return !RUNNER.toString().endsWith(".jar");
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
}
