package dev.torchjob.operator.install;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.local.LocalLauncher;
import dev.torchjob.operator.testing.QuarkusSettings;

/**
 * Nothing the operator is given at run time may be a setting Quarkus fixes at build time: the JVM
 * honours such a value silently (no warning), the native executable keeps the build's and ignores
 * it ({@link QuarkusSettings}). Looked at: what the code sets or reads, what the local mode passes,
 * the install manifests, the Helm chart, the container files and the docs. The operator itself
 * refuses such a setting at start (main/BuildTimeSettings), from the list checked here.
 */
class RunTimeSettingsTest {
    private static final Pattern ENV_NAME = Pattern.compile("\\bQUARKUS_[A-Z0-9_]+\\b");
    private static final Pattern SYSTEM_PROPERTY = Pattern.compile("-D(quarkus\\.[A-Za-z0-9.\"_-]+)=");
    /** The Helm chart's list of the settings it refuses: every one is named there. */
    private static final Path REFUSED_BY_THE_CHART = Path.of("helm/torchjob-operator/files/build-time-settings.txt");
    /** A string literal naming a Quarkus setting in Java source, with its escaped quotes. */
    private static final Pattern SETTING_LITERAL = Pattern.compile("\"(quarkus\\.(?:[^\"\\\\]|\\\\.)*)\"");

    @Test
    void theExtensionsSayWhichSettingsAreFixed() {
        // Without this the other tests would pass on an empty model.
        assertEquals("quarkus.kubernetes-client.api-server-url", QuarkusSettings.fixedProperty("quarkus.kubernetes-client.api-server-url")
                .orElseThrow().property());
        assertTrue(QuarkusSettings.fixedEnvironmentVariable("QUARKUS_KUBERNETES_CLIENT_NAMESPACE").isPresent());
        assertTrue(QuarkusSettings.fixedProperty("quarkus.log.category.\"io.fabric8\".min-level").isPresent());
        assertTrue(QuarkusSettings.fixedProperty("quarkus.http.port").isEmpty());
        assertTrue(QuarkusSettings.fixedProperty("quarkus.log.category.\"dev.torchjob\".level").isEmpty());
        assertTrue(QuarkusSettings.fixedEnvironmentVariable("QUARKUS_OPERATOR_SDK_CONTROLLERS_PYTORCHTRAININGJOB_NAMESPACES").isEmpty());
    }

    @Test
    void theLocalModeSetsOnlyRunTimeSettings() {
        Map<String, String> fixed = new TreeMap<>();
        LocalLauncher.runTimeSettings("http://127.0.0.1:1", "0", Path.of("job.yaml")).keySet()
                .forEach(property -> QuarkusSettings.fixedProperty(property).ifPresent(s -> fixed.put(property, s.phase())));
        assertEquals(Map.of(), fixed);
    }

    @Test
    void theCodeNamesOnlyRunTimeSettings() throws IOException {
        // Set or read at run time, a fixed one would mean something else natively.
        Map<String, String> fixed = new TreeMap<>();
        try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                Matcher literal = SETTING_LITERAL.matcher(Files.readString(file));
                while (literal.find()) {
                    String property = literal.group(1).replace("\\\"", "\"");
                    QuarkusSettings.fixedProperty(property).ifPresent(s -> fixed.put(file + ": " + property, s.phase()));
                }
            }
        }
        assertEquals(Map.of(), fixed);
    }

    @Test
    void theInstallManifestsTheChartAndTheContainerFilesSetOnlyRunTimeSettings() throws IOException {
        Map<String, String> fixed = new TreeMap<>(fixedIn(Path.of("kubernetes"), true));
        fixed.putAll(fixedIn(Path.of("native"), true));
        assertEquals(Map.of(), fixed);
    }

    @Test
    void theDocsDocumentOnlyRunTimeSettings() throws IOException {
        Map<String, String> fixed = new TreeMap<>(fixedIn(Path.of("docs"), false));
        fixed.putAll(fixedIn(Path.of("README.md"), false));
        assertEquals(Map.of(), fixed);
    }

    @Test
    void theListTheOperatorAndTheChartRefuseIsTheExtensionsOwn() throws IOException {
        // Neither the operator nor Helm can read the extensions' model at run time: both read this list.
        // The profile too: the native executable keeps the build's (and warns at every start).
        String list = QuarkusSettings.allFixedAtBuildTime().stream().map(s -> s.environmentVariable() + " " + s.property())
                .distinct().collect(Collectors.joining("\n", "^" + QuarkusSettings.PROFILE_VARIABLE + "$ " + QuarkusSettings.PROFILE_PROPERTY
                        + "\n", "\n"));
        Path generated = Path.of("target/build-time-settings.txt");
        Files.writeString(generated, list);
        for (Path copy : List.of(Path.of("src/main/resources/build-time-settings.txt"), Path.of("kubernetes").resolve(REFUSED_BY_THE_CHART))) {
            assertEquals(list, Files.readString(copy), copy + " is not the extensions' list (an extension changed): copy " + generated + " over it");
        }
    }

    /**
     * Environment variables ({@code QUARKUS_…}) and {@code -Dquarkus.…} properties given to the
     * operator, by file: those Quarkus fixes at build time, and, where {@code profiles} says so, a
     * run-time profile in what ships (manifests, chart, container files; not their READMEs). A Maven command line is a build: its {@code -D}
     * properties are build settings and not looked at, nor is the docs' line that lists what is
     * "fixed at build time:".
     */
    private static Map<String, String> fixedIn(Path where, boolean profiles) throws IOException {
        Map<String, String> fixed = new TreeMap<>();
        try (Stream<Path> files = Files.walk(where)) {
            for (Path file : files.filter(Files::isRegularFile).filter(RunTimeSettingsTest::isText)
                    .filter(file -> !file.endsWith(REFUSED_BY_THE_CHART)).toList()) {
                // What is deployed or built into an image; a README may say why a profile is not used.
                boolean noProfile = profiles && !file.toString().endsWith(".md");
                for (String line : Files.readAllLines(file)) {
                    if (line.contains("fixed at build time:")) {
                        continue; // the docs' own list of what never to set at run time
                    }
                    Matcher env = ENV_NAME.matcher(line);
                    while (env.find()) {
                        String name = env.group();
                        if (noProfile && name.equals(QuarkusSettings.PROFILE_VARIABLE)) {
                            fixed.put(file + ": " + name, "a run-time profile");
                        }
                        QuarkusSettings.fixedEnvironmentVariable(name).ifPresent(s -> fixed.put(file + ": " + name, s.phase()));
                    }
                    Matcher property = SYSTEM_PROPERTY.matcher(line);
                    while (!line.contains("mvn") && property.find()) {
                        String name = property.group(1);
                        if (noProfile && name.equals(QuarkusSettings.PROFILE_PROPERTY)) {
                            fixed.put(file + ": -D" + name, "a run-time profile");
                        }
                        QuarkusSettings.fixedProperty(name).ifPresent(s -> fixed.put(file + ": -D" + name, s.phase()));
                    }
                }
            }
        }
        return fixed;
    }

    /** Manifests, chart templates and values, container files, docs: what a user or a cluster reads. */
    private static boolean isText(Path file) {
        String name = file.getFileName().toString();
        return name.startsWith("Containerfile") || Stream.of(".yaml", ".yml", ".tpl", ".txt", ".json", ".md", ".sh")
                .anyMatch(name::endsWith);
    }
}
