package dev.torchjob.operator.metrics;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.reconciler.OperatorScenarios;
import dev.torchjob.operator.testing.PrometheusServer;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/**
 * A real Prometheus server (Debian's) scrapes the operator while jobs succeed, fail, restart and
 * are deleted; the counters must have the right values, and every query of the dashboard and the
 * alert rules must return data (no dead panel, no misspelled metric).
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
class PrometheusScrapeTest {
    static final String NS = "prom";

    @Inject
    KubernetesClient client;

    @TestHTTPResource("/q/metrics")
    URL metrics;

    @Test
    void prometheusSeesExactCountersAndEveryShippedQueryHasData() throws Exception {
        try (PrometheusServer prometheus = PrometheusServer.start("""
                - job_name: torchjob-operator
                  metrics_path: /q/metrics
                  static_configs: [{targets: ["127.0.0.1:%d"]}]
                """.formatted(metrics.getPort()))) {
            // The jobs must run while Prometheus watches, or rates would have a single sample.
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                    .until(() -> prometheus.value("up{job=\"torchjob-operator\"}") == 1.0);
            runJobs();
            // Every transition is counted once; wait until Prometheus has scraped the final values.
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
                    .until(() -> prometheus.value("training_operator_jobs_deleted_total{job_namespace=\"prom\"}") == 1.0);
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> prometheus.value("pytorchtrainingjob_jobs{job_namespace=\"prom\",phase=\"Pending\"}") == 1.0);
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
                    .until(() -> prometheus.value("count_over_time(training_operator_jobs_deleted_total{job_namespace=\"prom\"}[5m])") >= 3);
            assertEquals(3.0, prometheus.value("training_operator_jobs_created_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, prometheus.value("training_operator_jobs_successful_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, prometheus.value("training_operator_jobs_failed_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, prometheus.value("training_operator_jobs_restarted_total{job_namespace=\"prom\",framework=\"pytorch\"}"));
            assertEquals(1.0, prometheus.value(
                    "pytorchtrainingjob_replica_restarts_total{job_namespace=\"prom\",replica_type=\"worker\",exit_code=\"137\"}"));
            assertEquals(2.0, prometheus.value("pytorchtrainingjob_time_to_running_seconds_count{job_namespace=\"prom\"}"));
            assertEquals(1.0, prometheus.value("pytorchtrainingjob_duration_seconds_count{job_namespace=\"prom\",outcome=\"Failed\"}"));
            assertEquals(1.0, prometheus.value("pytorchtrainingjob_jobs{job_namespace=\"prom\",phase=\"Failed\"}"));
            assertTrue(prometheus.value("pytorchtrainingjob_oldest_pending_seconds{job_namespace=\"prom\"}") > 0);
            // Every pass counted and timed under our own names, one pass one sample; the SDK counts them too.
            // Compared within one scrape: a pass may be under way at it (begun, not yet timed).
            String passes = "sum(pytorchtrainingjob_reconciliations_total{kind=\"PyTorchTrainingJob\"})";
            assertTrue(prometheus.value(passes) >= 3, prometheus.value(passes) + " passes");
            assertEquals(0.0, prometheus.value("sum(pytorchtrainingjob_reconcile_duration_seconds_count{kind=\"PyTorchTrainingJob\"}) - " + passes), 1.0);
            assertEquals(0.0, prometheus.value("sum(reconciliations_started_total{controller_name=\"pytorchtrainingjob\"}) - " + passes), 1.0);

            assertEquals(List.of(), prometheus.shippedQueriesWithoutData(MonitoringRulesTest.shippedQueries()), "queries without data");
            JsonNode rules = prometheus.rules();
            assertEquals(5, rules.size());
            rules.forEach(rule -> assertEquals("ok", rule.get("health").asText(), rule.toString()));
            System.out.println("Prometheus sample: " + prometheus.get("/api/v1/query?query="
                    + URLEncoder.encode("{__name__=~\"training_operator_.*\",job_namespace=\"prom\"}", StandardCharsets.UTF_8)).body());
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
}
