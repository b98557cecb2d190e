package dev.torchjob.operator.install;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import dev.torchjob.operator.local.LocalLauncher;

/**
 * Nothing the operator is given at run time may be a setting Quarkus fixes at build time: the JVM
 * honours such a value silently (no warning), the native executable keeps the build's and ignores
 * it. Which settings are fixed comes from the extensions themselves (each ships its configuration
 * model, with every property's phase, in META-INF/quarkus-config-doc).
 */
class RunTimeSettingsTest {
    private static final List<QuarkusSetting> QUARKUS = quarkusSettings();
    private static final Pattern ENV_NAME = Pattern.compile("\\bQUARKUS_[A-Z0-9_]+\\b");
    private static final Pattern SYSTEM_PROPERTY = Pattern.compile("-D(quarkus\\.[A-Za-z0-9.\"_-]+)=");

    /** One property of an extension's configuration roots; a quoted segment ("categories") stands for any key. */
    record QuarkusSetting(String property, String phase, Pattern asProperty, Pattern asEnvironmentVariable) {
        static QuarkusSetting of(String property, String phase) {
            StringBuilder asProperty = new StringBuilder();
            StringBuilder asEnv = new StringBuilder();
            boolean key = false;
            for (String part : property.split("(?=\")|(?<=\")")) {
                if (part.equals("\"")) {
                    key = !key;
                    continue;
                }
                asProperty.append(key ? "(?:\"[^\"]+\"|[^.]+)" : Pattern.quote(part));
                asEnv.append(key ? "[A-Z0-9_]+" : Pattern.quote(part.toUpperCase().replaceAll("[^A-Z0-9]", "_")));
            }
            return new QuarkusSetting(property, phase, Pattern.compile(asProperty.toString()), Pattern.compile(asEnv.toString()));
        }

        boolean fixedAtBuildTime() {
            return !"RUN_TIME".equals(phase);
        }
    }

    static List<QuarkusSetting> quarkusSettings() {
        List<QuarkusSetting> settings = new ArrayList<>();
        ObjectMapper json = new ObjectMapper();
        try {
            for (URL model : Collections.list(RunTimeSettingsTest.class.getClassLoader()
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

    private static void collect(JsonNode items, List<QuarkusSetting> into) {
        for (JsonNode item : items) {
            if (item.has("items")) {
                collect(item.path("items"), into); // a section
            } else if (item.path("path").has("property")) {
                into.add(QuarkusSetting.of(item.path("path").path("property").asText(), item.path("phase").asText()));
            }
        }
    }

    static Optional<QuarkusSetting> fixedProperty(String property) {
        return QUARKUS.stream().filter(s -> s.asProperty().matcher(property).matches()).filter(QuarkusSetting::fixedAtBuildTime).findFirst();
    }

    static Optional<QuarkusSetting> fixedEnvironmentVariable(String name) {
        return QUARKUS.stream().filter(s -> s.asEnvironmentVariable().matcher(name).matches()).filter(QuarkusSetting::fixedAtBuildTime)
                .findFirst();
    }

    @Test
    void theExtensionsSayWhichSettingsAreFixed() {
        // Without this the other tests would pass on an empty model.
        assertEquals("quarkus.kubernetes-client.api-server-url", fixedProperty("quarkus.kubernetes-client.api-server-url")
                .orElseThrow().property());
        assertTrue(fixedEnvironmentVariable("QUARKUS_KUBERNETES_CLIENT_NAMESPACE").isPresent());
        assertTrue(fixedProperty("quarkus.log.category.\"io.fabric8\".min-level").isPresent());
        assertTrue(fixedProperty("quarkus.http.port").isEmpty());
        assertTrue(fixedProperty("quarkus.log.category.\"dev.torchjob\".level").isEmpty());
        assertTrue(fixedEnvironmentVariable("QUARKUS_OPERATOR_SDK_CONTROLLERS_PYTORCHTRAININGJOB_NAMESPACES").isEmpty());
    }

    @Test
    void theLocalModeSetsOnlyRunTimeSettings() {
        Map<String, String> fixed = new TreeMap<>();
        LocalLauncher.runTimeSettings("http://127.0.0.1:1", "0", Path.of("job.yaml")).keySet()
                .forEach(property -> fixedProperty(property).ifPresent(s -> fixed.put(property, s.phase())));
        assertEquals(Map.of(), fixed);
    }

    @Test
    void theInstallManifestsSetOnlyRunTimeSettings() throws IOException {
        assertEquals(Map.of(), fixedIn(Path.of("kubernetes"), ".yaml", false));
    }

    @Test
    void theDocsDocumentOnlyRunTimeSettings() throws IOException {
        Map<String, String> fixed = new TreeMap<>(fixedIn(Path.of("docs"), ".md", true));
        fixed.putAll(fixedIn(Path.of("native"), ".md", true));
        fixed.putAll(fixedIn(Path.of("README.md"), ".md", true));
        assertEquals(Map.of(), fixed);
    }

    /**
     * Environment variables ({@code QUARKUS_…}) and, in docs, {@code -Dquarkus.…} properties given to
     * the operator, by file: those Quarkus fixes at build time. A Maven command line is a build: its
     * {@code -D} properties are build settings and not looked at, nor is the docs' line that lists
     * what is "fixed at build time:".
     */
    private static Map<String, String> fixedIn(Path where, String suffix, boolean systemProperties) throws IOException {
        Map<String, String> fixed = new TreeMap<>();
        try (Stream<Path> files = Files.walk(where)) {
            for (Path file : files.filter(f -> f.toString().endsWith(suffix)).toList()) {
                for (String line : Files.readAllLines(file)) {
                    if (line.contains("fixed at build time:")) {
                        continue; // the docs' own list of what never to set at run time
                    }
                    Matcher env = ENV_NAME.matcher(line);
                    while (env.find()) {
                        String name = env.group();
                        fixedEnvironmentVariable(name).ifPresent(s -> fixed.put(file + ": " + name, s.phase()));
                    }
                    Matcher property = SYSTEM_PROPERTY.matcher(line);
                    while (systemProperties && !line.contains("mvn") && property.find()) {
                        String name = property.group(1);
                        fixedProperty(name).ifPresent(s -> fixed.put(file + ": -D" + name, s.phase()));
                    }
                }
            }
        }
        return fixed;
    }
}
