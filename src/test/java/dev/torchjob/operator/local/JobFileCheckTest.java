package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/** The local mode's check of a job file: what kubectl's strict field validation would refuse, said where. */
class JobFileCheckTest {
    static final String T9K = """
            apiVersion: batch.tensorstack.dev/v1beta1
            kind: PyTorchTrainingJob
            metadata:
              name: j
            spec:
              runPolicy:
                backoffLimit: 2
              replicaSpecs:
              - type: worker
                replicas: 2
                restartPolicy: OnFailure
                template:
                  spec:
                    containers:
                    - name: pytorch
                      image: torch
                      command: [python, train.py]
                      env:
                      - {name: EPOCHS, value: "8"}
            """;

    static List<String> problems(String yaml) {
        return JobFileCheck.problemsWith(yaml).stream().map(JobFileCheck.Problem::toString).toList();
    }

    @Test
    void aValidJobHasNoProblem() {
        assertEquals(List.of(), problems(T9K));
    }

    @Test
    void aMisspelledFieldIsNamedWithItsPlaceAndTheFieldMeant() {
        assertEquals(List.of("line 7, column 5: unknown field \"spec.runPolicy.backofLimit\" (did you mean backoffLimit?)"),
                problems(T9K.replace("backoffLimit", "backofLimit")));
    }

    @Test
    void unknownFieldsInsideThePodTemplateAndMetadataAreFoundToo() {
        assertEquals(List.of("line 5, column 3: unknown field \"metadata.lables\" (did you mean labels?)",
                "line 18, column 11: unknown field \"spec.replicaSpecs[0].template.spec.containers[0].comand\" (did you mean command?)"),
                problems(T9K.replace("  name: j", "  name: j\n  lables: {a: b}").replace("command:", "comand:")));
        assertEquals(List.of("line 19, column 35: spec.replicaSpecs[0].template.spec.containers[0].env[0].value: expected a string, found 8 (quote it)"),
                problems(T9K.replace("value: \"8\"", "value: 8")));
    }

    @Test
    void aWrongEnumValueListsTheAllowedOnes() {
        assertEquals(List.of("line 11, column 20: spec.replicaSpecs[0].restartPolicy: \"OnFaillure\" is not one of Always, ExitCode, Never, OnFailure"
                + " (did you mean OnFailure?)"), problems(T9K.replace("restartPolicy: OnFailure", "restartPolicy: OnFaillure")));
    }

    @Test
    void wrongTypesSayWhatWasExpected() {
        assertEquals(List.of("line 10, column 15: spec.replicaSpecs[0].replicas: expected an integer, found \"two\""),
                problems(T9K.replace("replicas: 2", "replicas: two")));
    }

    @Test
    void aYamlSyntaxErrorHasItsLineAndColumn() {
        List<String> found = problems(T9K.replace("  runPolicy:\n", "  runPolicy:\n   - broken: [\n"));
        assertEquals(1, found.size(), found.toString());
        assertEquals(true, found.get(0).startsWith("line ") && found.get(0).contains("not valid YAML"), found.get(0));
    }

    @Test
    void aFieldGivenTwiceIsRefusedAsTheApiServerWould() {
        assertEquals(List.of("line 8, column 3: duplicate field \"spec.runPolicy\""),
                problems(T9K.replace("  replicaSpecs:", "  runPolicy: {backoffLimit: 5}\n  replicaSpecs:")));
    }

    @Test
    void severalDocumentsAreRefusedAsAWhole() {
        assertEquals(List.of("the file holds 2 YAML documents (PyTorchTrainingJob, PyTorchTrainingJob); the local mode runs one job:"
                + " put each in its own file"), problems(T9K + "---\n" + T9K));
    }

    @Test
    void everyShippedExampleAndSeedPasses() throws IOException {
        try (Stream<Path> files = Stream.concat(Files.walk(Path.of("kubernetes/examples")), Files.walk(Path.of("src/test/resources/t9k-seed")))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).toList()) {
                String yaml = Files.readString(file);
                // A job an AppWrapper wraps is AppWrapper's to make: no file the local mode runs.
                if ((yaml.contains("kind: PyTorchTrainingJob") || yaml.contains("kind: \"PyTorchJob\"") || yaml.contains("kind: PyTorchJob"))
                        && !yaml.contains("kind: AppWrapper")) {
                    if (yaml.split("(?m)^---").length == 1) {
                        assertEquals(List.of(), problems(yaml), file.toString());
                    }
                }
            }
        }
    }
}
