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
            if (word.startsWith("-D") && equals > 0) {
                String property = word.substring(2, equals);
                Optional<String> refused = refusal(word, property.equals(QuarkusSettings.PROFILE_PROPERTY),
                        QuarkusSettings.fixedProperty(property));
                if (refused.isPresent()) {
                    return refused;
                }
            }
        }
        return environment.keySet().stream().map(name -> refusal(name, name.equals(QuarkusSettings.PROFILE_VARIABLE),
                QuarkusSettings.fixedEnvironmentVariable(name))).flatMap(Optional::stream).findFirst();
    }

    private static Optional<String> refusal(String given, boolean switchesProfile, Optional<QuarkusSettings.Setting> fixed) {
        if (switchesProfile) {
            return Optional.of(given + " switches the profile at run time; the native executable keeps the build's");
        }
        return fixed.map(setting -> given + " sets " + setting.property() + ", fixed at build time (" + setting.phase()
                + "): only the JVM would honour it");
    }
}
