package dev.torchjob.operator.install;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * What a JVM can check about the native executable's dependency set, since CI has no GraalVM: a
 * dependency left out of the application must have been proved by a native build (GraalVM checks
 * links at build time, so a left-out class that reachable code names stops the build; only a build
 * shows it), and nothing may switch that checking off.
 */
class NativeDependencySetTest {
    private static final Path README = Path.of("native/README.md");
    /** A row of native/README.md's table of left-out dependencies: `group:artifact` | why | proved by. */
    private static final Pattern PROVED = Pattern.compile("^\\| `([\\w.-]+:[\\w.-]+)` \\|.*\\| ([^|]*native[^|]*) \\|$", Pattern.MULTILINE);
    /** GraalVM and Quarkus options that let a build pass with classes missing. */
    private static final List<String> ESCAPE_HATCHES = List.of("--allow-incomplete-classpath", "AllowIncompleteClasspath",
            "--link-at-build-time=", "--report-unsupported-elements-at-runtime", "quarkus.native.report-errors-at-runtime");

    @Test
    void everyDependencyLeftOutOfTheApplicationWasProvedByANativeBuild() throws Exception {
        TreeSet<String> leftOut = new TreeSet<>();
        NodeList dependencies = pom().getElementsByTagName("dependency");
        for (int i = 0; i < dependencies.getLength(); i++) {
            Element dependency = (Element) dependencies.item(i);
            if ("test".equals(text(dependency, "scope"))) {
                continue; // not in the application
            }
            NodeList exclusions = dependency.getElementsByTagName("exclusion");
            for (int j = 0; j < exclusions.getLength(); j++) {
                Element exclusion = (Element) exclusions.item(j);
                leftOut.add(text(exclusion, "groupId") + ":" + text(exclusion, "artifactId"));
            }
        }
        assertTrue(leftOut.contains("org.bouncycastle:bcprov-jdk18on"), "the pom was read: " + leftOut);

        TreeSet<String> proved = new TreeSet<>();
        Matcher row = PROVED.matcher(Files.readString(README));
        while (row.find()) {
            proved.add(row.group(1));
        }
        TreeSet<String> unproved = new TreeSet<>(leftOut);
        unproved.removeAll(proved);
        assertEquals(new TreeSet<>(), unproved, "left out of the application without a native build that proved it in " + README);
        TreeSet<String> stale = new TreeSet<>(proved);
        stale.removeAll(leftOut);
        assertEquals(new TreeSet<>(), stale, README + " lists as left out what the pom keeps");
    }

    @Test
    void nothingTurnsGraalVmsLinkCheckingOff() throws IOException {
        List<String> found = new ArrayList<>();
        Properties settings = new Properties();
        try (var in = Files.newBufferedReader(Path.of("src/main/resources/application.properties"))) {
            settings.load(in);
        }
        for (String name : settings.stringPropertyNames()) {
            String setting = name + "=" + settings.getProperty(name);
            ESCAPE_HATCHES.stream().filter(setting::contains).forEach(hatch -> found.add("application.properties: " + setting));
        }
        String pom = Files.readString(Path.of("pom.xml"));
        ESCAPE_HATCHES.stream().filter(pom::contains).forEach(hatch -> found.add("pom.xml: " + hatch));
        assertEquals(List.of(), found);
    }

    private static org.w3c.dom.Document pom() throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(Path.of("pom.xml").toFile());
    }

    private static String text(Element parent, String tag) {
        NodeList children = parent.getElementsByTagName(tag);
        return children.getLength() == 0 ? null : children.item(0).getTextContent().strip();
    }
}
