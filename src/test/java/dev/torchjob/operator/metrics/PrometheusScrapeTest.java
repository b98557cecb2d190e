package dev.torchjob.operator.metrics;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import dev.torchjob.operator.api.JobPhase;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.reconciler.OperatorScenarios;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;
import dev.torchjob.operator.testing.ExternalTools;

/**
 * A real Prometheus server (Debian's) scrapes the operator while jobs succeed, fail, restart and
 * are deleted; the counters must have the right values, and every query of the dashboard and the
 * alert rules must return data (no dead panel, no misspelled metric).
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true)
class PrometheusScrapeTest {
    static final String NS = "prom";
    static final ObjectMapper JSON = new ObjectMapper();
    static final Pattern COMPARISON = Pattern.compile("^(.*\\S)\\s+(>|<|>=|<=|==|!=)\\s+([0-9.]+)$", Pattern.DOTALL);
    static final Pattern METRIC = Pattern.compile("\\b(training_operator_\\w+|pytorchtrainingjob_\\w+|operator_sdk_\\w+|jvm_\\w+|process_\\w+|up)\\b");

    @Inject
    KubernetesClient client;

    @TestHTTPResource("/q/metrics")
    URL metrics;

    final HttpClient http = HttpClient.newHttpClient();
    int prometheusPort;

    @Test
    void prometheusSeesExactCountersAndEveryShippedQueryHasData() throws Exception {
        Path prometheus = ExternalTools.require("prometheus", "prometheus");
        Path dir = Files.createTempDirectory("prometheus-"); // @TempDir is not injected into Quarkus tests
        prometheusPort = freePort();
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, """
                global: {scrape_interval: 1s, evaluation_interval: 1s}
                rule_files: [%s]
                scrape_configs:
                  - job_name: torchjob-operator
                    metrics_path: /q/metrics
                    static_configs: [{targets: ["127.0.0.1:%d"]}]
                """.formatted(Path.of("kubernetes/monitoring/alert-rules.yaml").toAbsolutePath(), metrics.getPort()));
        Process server = new ProcessBuilder(prometheus.toString(), "--config.file=" + config, "--storage.tsdb.path=" + dir.resolve("data"),
                "--web.listen-address=127.0.0.1:" + prometheusPort, "--log.level=warn")
                .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
        try {
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
                    .until(() -> get("/-/ready").statusCode() == 200);
            // The jobs must run while Prometheus watches, or rates would have a single sample.
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                    .until(() -> value("up{job=\"torchjob-operator\"}") == 1.0);
            runJobs();
            // Every transition is counted once; wait until Prometheus has scraped the final values.
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
                    .until(() -> value("training_operator_jobs_deleted_total{job_namespace=\"prom\"}") == 1.0);
            await().atMost(Duration.ofSeconds(10)).until(() -> value("pytorchtrainingjob_jobs{job_namespace=\"prom\",phase=\"Pending\"}") == 1.0);
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
                    .until(() -> value("count_over_time(training_operator_jobs_deleted_total{job_namespace=\"prom\"}[5m])") >= 3);
            assertEquals(3.0, value("training_operator_jobs_created_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, value("training_operator_jobs_successful_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, value("training_operator_jobs_failed_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, value("training_operator_jobs_restarted_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, value("pytorchtrainingjob_replica_restarts_total{job_namespace=\"prom\",replica_type=\"worker\",exit_code=\"137\"}"));
            assertEquals(2.0, value("pytorchtrainingjob_time_to_running_seconds_count{job_namespace=\"prom\"}"));
            assertEquals(1.0, value("pytorchtrainingjob_duration_seconds_count{job_namespace=\"prom\",outcome=\"Failed\"}"));
            assertEquals(1.0, value("pytorchtrainingjob_jobs{job_namespace=\"prom\",phase=\"Failed\"}"));
            assertTrue(value("pytorchtrainingjob_oldest_pending_seconds{job_namespace=\"prom\"}") > 0);

            List<String> dead = new ArrayList<>();
            for (Map.Entry<String, String> query : MonitoringRulesTest.shippedQueries().entrySet()) {
                String expr = query.getValue().replace("$namespace", ".*").replace("$__rate_interval", "5m").replace("$__range", "5m");
                if (query.getKey().startsWith("alert ")) {
                    Matcher comparison = COMPARISON.matcher(expr);
                    assertTrue(comparison.matches(), query.getKey() + " is written as <query> <comparison> <threshold>");
                    expr = comparison.group(1);
                }
                if (!hasData(expr)) {
                    dead.add(query.getKey() + ": " + expr);
                }
                Matcher names = METRIC.matcher(expr);
                Set<String> metricNames = new LinkedHashSet<>();
                while (names.find()) {
                    metricNames.add(names.group(1));
                }
                for (String name : metricNames) {
                    if (!hasData("count(" + name + ")")) {
                        dead.add(query.getKey() + ": no series named " + name);
                    }
                }
            }
            assertEquals(List.of(), dead, "queries without data");

            JsonNode rules = JSON.readTree(get("/api/v1/rules").body()).get("data").get("groups").get(0).get("rules");
            assertEquals(5, rules.size());
            rules.forEach(rule -> assertEquals("ok", rule.get("health").asText(), rule.toString()));
            System.out.println("Prometheus sample: " + get("/api/v1/query?query="
                    + URLEncoder.encode("{__name__=~\"training_operator_.*\",job_namespace=\"prom\"}", StandardCharsets.UTF_8)).body());
        } finally {
            server.destroy();
            if (!server.waitFor(10, TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
    }

    /** A job that restarts once and succeeds (then is deleted), one that fails, one left Pending. */
    private void runJobs() {
        OperatorScenarios scenarios = new OperatorScenarios(client, NS);
        scenarios.restartOnceThenSucceed("restarted");
        scenarios.failOnce("failed");
        scenarios.submitAndLeavePending("waiting");
        client.resources(PyTorchTrainingJob.class).inNamespace(NS).withName("restarted").delete();
        await().atMost(Duration.ofSeconds(10)).until(() -> scenarios.job("waiting").getStatus() != null
                && scenarios.job("waiting").getStatus().phase == JobPhase.Pending);
    }

    private boolean hasData(String expr) throws IOException, InterruptedException {
        JsonNode result = query(expr);
        for (JsonNode sample : result) {
            String value = sample.get("value").get(1).asText();
            if (!value.equals("NaN")) {
                return true;
            }
        }
        return false;
    }

    private double value(String expr) throws IOException, InterruptedException {
        JsonNode result = query(expr);
        return result.isEmpty() ? Double.NaN : result.get(0).get("value").get(1).asDouble();
    }

    private JsonNode query(String expr) throws IOException, InterruptedException {
        HttpResponse<String> response = get("/api/v1/query?query=" + URLEncoder.encode(expr, StandardCharsets.UTF_8));
        JsonNode body = JSON.readTree(response.body());
        assertEquals("success", body.get("status").asText(), expr + ": " + response.body());
        return body.get("data").get("result");
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + prometheusPort + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
