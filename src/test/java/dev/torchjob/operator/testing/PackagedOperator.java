package dev.torchjob.operator.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The application as it ships, for tests that start it as a process: the JVM jar
 * ({@code target/quarkus-app/quarkus-run.jar}) or, when built with {@code -Dnative}, the native
 * executable (the build names it in {@code torchjob.runner}). Settings reach it only through
 * run-time channels: {@code -D} properties (both accept them), the environment and the kubeconfig;
 * {@link #start} refuses any that Quarkus fixes at build time, which only the JVM would honour.
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

    /**
     * Starts the packaged application as the builder says, after checking that nothing it is given is
     * fixed at build time or switches the profile: what passes here works the same natively.
     */
    public static Process start(ProcessBuilder builder) throws IOException {
        Optional<String> problem = buildTimeSetting(builder.command(), builder.environment());
        if (problem.isPresent()) {
            throw new IllegalArgumentException(problem.get());
        }
        return builder.start();
    }

    /** The first setting among the command's {@code -D} properties and the environment that is not a run-time one. */
    public static Optional<String> buildTimeSetting(List<String> command, Map<String, String> environment) {
        for (String word : command) {
            int equals = word.indexOf('=');
            if (!word.startsWith("-D") || equals < 0) {
                continue;
            }
            String property = word.substring(2, equals);
            if (property.equals(QuarkusSettings.PROFILE_PROPERTY)) {
                return Optional.of(word + " switches the profile at run time; the native executable keeps the build's");
            }
            Optional<QuarkusSettings.Setting> fixed = QuarkusSettings.fixedProperty(property);
            if (fixed.isPresent()) {
                return Optional.of(word + " sets " + fixed.get().property() + ", fixed at build time (" + fixed.get().phase()
                        + "): only the JVM would honour it");
            }
        }
        for (String name : environment.keySet()) {
            if (name.equals(QuarkusSettings.PROFILE_VARIABLE)) {
                return Optional.of(name + " switches the profile at run time; the native executable keeps the build's");
            }
            Optional<QuarkusSettings.Setting> fixed = QuarkusSettings.fixedEnvironmentVariable(name);
            if (fixed.isPresent()) {
                return Optional.of(name + " sets " + fixed.get().property() + ", fixed at build time (" + fixed.get().phase()
                        + "): only the JVM would honour it");
            }
        }
        return Optional.empty();
    }
}
