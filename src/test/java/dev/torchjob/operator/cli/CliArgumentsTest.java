package dev.torchjob.operator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.cli.CliArguments.BadInput;
import dev.torchjob.operator.cli.CliArguments.JobKind;
import dev.torchjob.operator.cli.CliArguments.Verb;

class CliArgumentsTest {
    static CliArguments parse(String line) throws BadInput {
        return CliArguments.parse(List.of(line.split(" ")));
    }

    @Test
    void flagsAreReadAsKubectlReadsThem() throws BadInput {
        CliArguments logs = parse("logs ddp -f -n team-a --context=prod --type worker --index=1 -c pytorch --since 10m --timestamps");
        assertEquals(Verb.LOGS, logs.verb());
        assertEquals("ddp", logs.job().orElseThrow().name());
        assertEquals(Optional.empty(), logs.job().orElseThrow().kind());
        assertTrue(logs.on("follow") && logs.on("timestamps"));
        assertEquals("team-a", logs.flags().get("namespace"));
        assertEquals("prod", logs.flags().get("context"));
        assertEquals("worker", logs.flags().get("type"));
        assertEquals("1", logs.flags().get("index"));
        assertEquals("pytorch", logs.flags().get("container"));
        assertEquals(Duration.ofMinutes(10), logs.duration("since"));

        CliArguments wait = parse("wait pytorchjob/mnist --for failed --timeout 1h30m --namespace=ml");
        assertEquals(Optional.of(JobKind.KUBEFLOW), wait.job().orElseThrow().kind());
        assertEquals("mnist", wait.job().orElseThrow().name());
        assertEquals(Duration.ofMinutes(90), wait.duration("timeout"));
        assertEquals(Duration.ofSeconds(45), parse("wait j --timeout 45").duration("timeout"));
        assertEquals(Optional.of(JobKind.T9K), parse("describe pj/j").job().orElseThrow().kind());
        assertEquals(Optional.empty(), parse("get").job(), "get lists every job");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "''| say what to do",
            "delete j| unknown command \"delete\"",
            "describe| name the job: kubectl torchjob describe JOB",
            "logs a b| one job at a time; got a, b",
            "logs j --follow-all| unknown flag --follow-all for logs",
            "get --for Succeeded| unknown flag --for for get",
            "wait j --for Done| --for Done: wait for one of Succeeded, Failed, Running, Admitted",
            "wait j --timeout soon| --timeout soon is not a duration",
            "wait j --timeout| flag --timeout needs a value",
            "logs j --index 1| --index needs --type",
            "logs j --type worker --index -1| --index -1 is not a replica index",
            "logs deployment/j| deployment is not a training job kind",
            "logs j --follow=maybe| --follow=maybe: true or false",
    })
    void badInputIsOneLineNamingTheMistake(String line, String expected) {
        BadInput bad = assertThrows(BadInput.class, () -> CliArguments.parse(line.isEmpty() ? List.of() : List.of(line.split(" "))));
        assertTrue(bad.getMessage().startsWith("error: ") && bad.getMessage().contains(expected), bad.getMessage());
        assertEquals(1, bad.getMessage().lines().count());
    }
}
