package dev.torchjob.operator.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.reconciler.OperatorHarness;

/**
 * The dashboard and the alert rules work against the operator users run: the packaged one, which
 * under {@code -Dnative} is the native executable (whose runtime has fewer JVM meters than the JVM:
 * docs/metrics.md). Every metric a shipped query names is in its scrape once it has run a job
 * that restarted a replica.
 * {@link PrometheusScrapeTest} checks the values with a real Prometheus, in-process.
 */
class ShippedQueriesIT {

    @Test
    void everyMetricTheDashboardAndAlertsNameIsScrapedFromThePackagedOperator() throws Exception {
        OperatorInstall install = OperatorInstall.get();
        OperatorProcess operator = install.operator();
        // A job that restarts a replica once and succeeds: every meter a panel shows then has a series.
        OperatorHarness cluster = install.harness("dashboard").runJob("ExitCode", "{backoffLimit: 3}");
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        cluster.kubelet.oomKill("j-worker-0");
        cluster.awaitNewPod("j-worker-0", uid);
        cluster.kubelet.run("j-worker-0");
        cluster.kubelet.exit("j-worker-0", 0);
        cluster.kubelet.exit("j-worker-1", 0);
        cluster.kubelet.exit("j-master-0", 0);
        cluster.awaitPhase("j", JobPhase.Succeeded);

        Set<String> scraped = new TreeSet<>();
        operator.metrics().lines().filter(line -> !line.startsWith("#") && !line.isBlank())
                .forEach(line -> scraped.add(line.split("[{ ]", 2)[0]));
        Map<String, String> missing = new TreeMap<>();
        for (Map.Entry<String, String> query : MonitoringRulesTest.shippedQueries().entrySet()) {
            Matcher names = dev.torchjob.operator.testing.PrometheusServer.METRIC.matcher(query.getValue());
            while (names.find()) {
                String name = names.group(1);
                // `up` is Prometheus's own; a histogram is named by its series.
                if (!name.equals("up") && !scraped.contains(name) && !scraped.contains(name + "_count")) {
                    missing.put(name, query.getKey());
                }
            }
        }
        assertEquals(Map.of(), missing, "metrics the shipped queries name that the packaged operator does not expose");
    }
}
