package dev.torchjob.operator.install;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * The examples run what exists: every Python script or module an example starts is in the example
 * image (kubernetes/examples/Containerfile), except in the Kubeflow guides' examples, whose published
 * images carry their own scripts.
 */
class ExampleImageTest {
    static final Path EXAMPLES = Path.of("kubernetes/examples");
    static final String IMAGE = "torchjob-examples:0.1.0";
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    record Container(Path file, String image, List<String> commandLine) {
    }

    @Test
    void everyScriptAnExampleRunsIsInTheExampleImage() throws IOException {
        String containerfile = Files.readString(EXAMPLES.resolve("Containerfile"));
        List<Container> containers = containers();
        assertTrue(containers.size() > 20, "found the examples' containers: " + containers.size());
        for (Container container : containers) {
            for (String script : scripts(container.commandLine())) {
                assertEquals(IMAGE, container.image(), container.file() + " runs " + script + ": only the example image has it");
                assertTrue(Files.exists(EXAMPLES.resolve("local").resolve(script)), container.file() + ": no " + script + " in this repository");
                assertTrue(containerfile.contains("COPY local/" + script + " "), script + " is not copied into the example image");
            }
            if (container.image().equals(IMAGE)) {
                assertTrue(!scripts(container.commandLine()).isEmpty() || container.commandLine().contains("/usr/bin/sshd"),
                        container.file() + ": the example image runs train.py, not " + container.commandLine());
            }
        }
    }

    /** On the official PyTorch image unless the build names another base (BASE: the real node's Debian PyTorch). */
    @Test
    void theExampleImageIsBuiltOnPyTorch() throws IOException {
        List<String> lines = Files.readAllLines(EXAMPLES.resolve("Containerfile"));
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("ARG BASE=docker.io/pytorch/pytorch:")), lines.toString());
        assertTrue(lines.contains("FROM ${BASE}"), lines.toString());
    }

    /** The .py files and -m modules of a command line, as files. */
    static List<String> scripts(List<String> commandLine) {
        List<String> scripts = new ArrayList<>();
        for (int i = 0; i < commandLine.size(); i++) {
            String word = commandLine.get(i);
            if (word.endsWith(".py")) {
                scripts.add(word);
            } else if (word.equals("-m") && i + 1 < commandLine.size() && commandLine.get(i - 1).startsWith("python")) {
                scripts.add(commandLine.get(i + 1).replace('.', '/') + ".py");
            }
        }
        return scripts;
    }

    static List<Container> containers() throws IOException {
        List<Container> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(EXAMPLES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".yaml") && !f.startsWith(EXAMPLES.resolve("kubeflow"))).sorted().toList()) {
                for (JsonNode document : YAML.readValues(YAML.createParser(file.toFile()), JsonNode.class).readAll()) {
                    collect(file, document, found);
                }
            }
        }
        return found;
    }

    private static void collect(Path file, JsonNode node, List<Container> found) {
        if (node.isObject()) {
            JsonNode containers = node.get("containers");
            if (containers != null && containers.isArray()) {
                for (JsonNode container : containers) {
                    List<String> commandLine = new ArrayList<>();
                    container.path("command").forEach(w -> commandLine.add(w.asText()));
                    container.path("args").forEach(w -> commandLine.add(w.asText()));
                    found.add(new Container(file, container.path("image").asText(), commandLine));
                }
            }
            node.forEach(child -> collect(file, child, found));
        } else if (node.isArray()) {
            node.forEach(child -> collect(file, child, found));
        }
    }
}
