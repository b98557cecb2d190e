package dev.torchjob.operator.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Which Quarkus settings are fixed at build time, as the extensions themselves say: each ships its
 * configuration model, with every property's phase, in META-INF/quarkus-config-doc. The JVM honours
 * such a setting given at run time silently (no warning); the native executable keeps the build's
 * value and ignores it. So nothing the operator is given at run time may be one of them.
 */
public final class QuarkusSettings {
    /** The run-time profile: a second one beside the build's makes the native executable warn at every start. */
    public static final String PROFILE_PROPERTY = "quarkus.profile";
    public static final String PROFILE_VARIABLE = "QUARKUS_PROFILE";
    private static final List<Setting> ALL = load();

    private QuarkusSettings() {
    }

    /**
     * One property of an extension's configuration roots; a quoted segment ("categories") stands for any key.
     * {@code environmentVariable} is the pattern of its environment variable's names, anchored; made of
     * [A-Z0-9_] only, it reads the same in Java and in Go (Helm's regexMatch).
     */
    public record Setting(String property, String phase, Pattern asProperty, String environmentVariable) {
        static Setting of(String property, String phase) {
            StringBuilder asProperty = new StringBuilder();
            StringBuilder asEnv = new StringBuilder("^");
            boolean key = false;
            for (String part : property.split("(?=\")|(?<=\")")) {
                if (part.equals("\"")) {
                    key = !key;
                    continue;
                }
                asProperty.append(key ? "(?:\"[^\"]+\"|[^.]+)" : Pattern.quote(part));
                asEnv.append(key ? "[A-Z0-9_]+" : part.toUpperCase().replaceAll("[^A-Z0-9]", "_"));
            }
            return new Setting(property, phase, Pattern.compile(asProperty.toString()), asEnv.append('$').toString());
        }

        boolean named(String environmentVariableName) {
            return environmentVariableName.matches(environmentVariable);
        }

        boolean fixedAtBuildTime() {
            return !"RUN_TIME".equals(phase);
        }
    }

    /** The build-time-fixed setting a system property names, if it names one. */
    public static Optional<Setting> fixedProperty(String property) {
        return ALL.stream().filter(s -> s.asProperty().matcher(property).matches()).filter(Setting::fixedAtBuildTime).findFirst();
    }

    /** The build-time-fixed setting an environment variable names, if it names one. */
    public static Optional<Setting> fixedEnvironmentVariable(String name) {
        return ALL.stream().filter(s -> s.named(name)).filter(Setting::fixedAtBuildTime).findFirst();
    }

    /** Every setting fixed at build time, by property. */
    public static List<Setting> allFixedAtBuildTime() {
        return ALL.stream().filter(Setting::fixedAtBuildTime).sorted(Comparator.comparing(Setting::property)).toList();
    }

    private static List<Setting> load() {
        List<Setting> settings = new ArrayList<>();
        ObjectMapper json = new ObjectMapper();
        try {
            for (URL model : Collections.list(QuarkusSettings.class.getClassLoader()
                    .getResources("META-INF/quarkus-config-doc/quarkus-config-model.json"))) {
                try (InputStream in = model.openStream()) {
                    json.readTree(in).path("configRoots").forEach(root -> collect(root.path("items"), settings));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return settings;
    }

    private static void collect(JsonNode items, List<Setting> into) {
        for (JsonNode item : items) {
            if (item.has("items")) {
                collect(item.path("items"), into); // a section
            } else if (item.path("path").has("property")) {
                into.add(Setting.of(item.path("path").path("property").asText(), item.path("phase").asText()));
            }
        }
    }
}
