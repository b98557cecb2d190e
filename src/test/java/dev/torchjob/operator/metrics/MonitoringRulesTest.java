package dev.torchjob.operator.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.torchjob.operator.testing.ExternalTools;

/** The shipped alert rules and dashboard, checked with Prometheus's own promtool. */
public class MonitoringRulesTest {
    static final Path MONITORING = Path.of("kubernetes/monitoring");
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    record Result(int exitCode, String output) {
    }

    static Result promtool(String... args) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of(ExternalTools.require("promtool", "prometheus").toString()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).directory(MONITORING.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(60, TimeUnit.SECONDS));
        return new Result(process.exitValue(), output);
    }

    @Test
    void promtoolChecksTheRules() throws Exception {
        Result result = promtool("check", "rules", "alert-rules.yaml");
        assertEquals(0, result.exitCode(), result.output());
        assertTrue(result.output().contains("SUCCESS: 5 rules found"), result.output());
    }

    @Test
    void everyAlertFiresAndStaysQuietInPromtoolUnitTests() throws Exception {
        Result result = promtool("test", "rules", "tests/alert-rules-test.yaml");
        assertEquals(0, result.exitCode(), result.output());
        String tests = Files.readString(MONITORING.resolve("tests/alert-rules-test.yaml"));
        for (String alert : alertNames()) {
            assertTrue(tests.contains("alertname: " + alert), alert + " has unit tests");
        }
    }

    @Test
    void prometheusRuleHoldsExactlyTheRulesFile() throws IOException {
        JsonNode rules = YAML.readTree(MONITORING.resolve("alert-rules.yaml").toFile());
        JsonNode custom = YAML.readTree(MONITORING.resolve("prometheusrule.yaml").toFile());
        assertEquals("PrometheusRule", custom.get("kind").asText());
        assertEquals(rules.get("groups"), custom.get("spec").get("groups"));
    }

    @Test
    void everyAlertHasASeveritySummaryAndDescription() throws IOException {
        for (JsonNode rule : YAML.readTree(MONITORING.resolve("alert-rules.yaml").toFile()).get("groups").get(0).get("rules")) {
            assertFalse(rule.path("labels").path("severity").asText().isEmpty(), rule.toString());
            assertFalse(rule.path("annotations").path("summary").asText().isEmpty(), rule.toString());
            assertTrue(rule.path("annotations").path("description").asText().length() > 40, rule.toString());
        }
    }

    @Test
    void dashboardHasANamespaceVariableAndQueriesOnEveryPanel() throws IOException {
        JsonNode dashboard = new ObjectMapper().readTree(MONITORING.resolve("grafana-dashboard.json").toFile());
        List<String> variables = new java.util.ArrayList<>();
        dashboard.get("templating").get("list").forEach(v -> variables.add(v.get("name").asText()));
        assertTrue(variables.contains("namespace"));
        for (JsonNode panel : dashboard.get("panels")) {
            assertTrue(panel.get("targets").size() > 0, panel.get("title").asText());
        }
        List<String> titles = new java.util.ArrayList<>();
        dashboard.get("panels").forEach(p -> titles.add(p.get("title").asText()));
        for (String needed : List.of("Jobs by phase", "Success and failure rate", "Replica restarts by exit code",
                "Time to running (p50, p95)", "Job duration (p50, p95)", "Reconciliations and errors",
                "Reconcile latency (p50, p95)", "Operator memory", "Operator CPU")) {
            assertTrue(titles.contains(needed), needed);
        }
    }

    static List<String> alertNames() throws IOException {
        List<String> names = new java.util.ArrayList<>();
        YAML.readTree(MONITORING.resolve("alert-rules.yaml").toFile()).get("groups").get(0).get("rules")
                .forEach(rule -> names.add(rule.get("alert").asText()));
        return names;
    }

    /** Every PromQL query the dashboard and the alert rules run, by where it comes from. */
    public static Map<String, String> shippedQueries() throws IOException {
        Map<String, String> queries = new java.util.LinkedHashMap<>();
        JsonNode dashboard = new ObjectMapper().readTree(MONITORING.resolve("grafana-dashboard.json").toFile());
        for (JsonNode panel : dashboard.get("panels")) {
            for (JsonNode target : panel.get("targets")) {
                queries.put("panel '" + panel.get("title").asText() + "' " + target.get("refId").asText(), target.get("expr").asText());
            }
        }
        for (JsonNode rule : YAML.readTree(MONITORING.resolve("alert-rules.yaml").toFile()).get("groups").get(0).get("rules")) {
            queries.put("alert " + rule.get("alert").asText(), rule.get("expr").asText());
        }
        return queries;
    }
}
