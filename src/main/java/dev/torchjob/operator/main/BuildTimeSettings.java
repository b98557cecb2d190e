package dev.torchjob.operator.main;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Settings Quarkus fixes when the operator is built, the profile among them. Given at run time, the
 * JVM would honour one silently and the native executable would ignore it, so the same command would
 * do two different things: both refuse it before starting. The list ({@code build-time-settings.txt},
 * a name pattern and the property a line) comes from the extensions' own configuration model; a test
 * keeps it so, and the Helm chart refuses the same names.
 */
final class BuildTimeSettings {
    static final String RESOURCE = "/build-time-settings.txt";

    private record Fixed(Pattern environmentVariable, String property) {
    }

    private static final List<Fixed> FIXED = load();

    private BuildTimeSettings() {
    }

    /**
     * A line per setting given in the environment or as a system property that is fixed at build
     * time, with what to do instead; empty when there is none.
     */
    static List<String> givenAtRunTime(Map<String, String> environment, Map<String, String> systemProperties) {
        Map<String, String> refused = new TreeMap<>();
        environment.keySet().forEach(name -> fixed(name).ifPresent(f -> refused.put(name, f.property())));
        // A property is matched through its environment variable's name: Quarkus maps the one to the other.
        systemProperties.keySet().stream().filter(name -> name.startsWith("quarkus."))
                .forEach(name -> fixed(asEnvironmentVariable(name)).ifPresent(f -> refused.put("-D" + name, f.property())));
        List<String> lines = new ArrayList<>();
        refused.forEach((given, property) -> lines.add("error: " + given + " sets " + property
                + ", which is fixed when the operator is built: the native executable would ignore it, so the operator refuses it. "
                + insteadOf(property)));
        return lines;
    }

    private static String insteadOf(String property) {
        if (property.startsWith("quarkus.kubernetes-client.")) {
            return "Point the operator at a cluster with a kubeconfig (KUBECONFIG), the client's own KUBERNETES_MASTER and"
                    + " KUBERNETES_NAMESPACE, or its ServiceAccount.";
        }
        if (property.equals("quarkus.profile")) {
            return "Leader election is TORCHJOB_LEADER_ELECTION_ENABLED; every other setting is read at start without a profile.";
        }
        return "docs/user-guide.md lists the settings read at start.";
    }

    static String asEnvironmentVariable(String property) {
        return property.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9]", "_");
    }

    private static Optional<Fixed> fixed(String environmentVariable) {
        return FIXED.stream().filter(f -> f.environmentVariable().matcher(environmentVariable).matches()).findFirst();
    }

    private static List<Fixed> load() {
        List<Fixed> fixed = new ArrayList<>();
        try (InputStream in = BuildTimeSettings.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing from the application");
            }
            BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                String[] patternAndProperty = line.split(" ", 2);
                if (patternAndProperty.length == 2) {
                    fixed.add(new Fixed(Pattern.compile(patternAndProperty[0]), patternAndProperty[1]));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return fixed;
    }
}
