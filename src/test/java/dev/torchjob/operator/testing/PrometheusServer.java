package dev.torchjob.operator.testing;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
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

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Debian's real Prometheus on loopback, with the scrape configuration a test gives it and the shipped
 * alert rules as its rule file, asked through its HTTP API.
 */
public final class PrometheusServer implements AutoCloseable {
    public static final Pattern METRIC = Pattern.compile("\\b(training_operator_\\w+|pytorchtrainingjob_\\w+|jvm_\\w+|process_\\w+|up)\\b");
    private static final Pattern COMPARISON = Pattern.compile("^(.*\\S)\\s+(>|<|>=|<=|==|!=)\\s+([0-9.]+)$", Pattern.DOTALL);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process process;
    private final int port;
    private final HttpClient http = HttpClient.newHttpClient();

    private PrometheusServer(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** Debian's Prometheus; {@code scrapeConfigs}: the YAML list under scrape_configs; scraped and evaluated every second. */
    public static PrometheusServer start(String scrapeConfigs) throws IOException {
        return start(ExternalTools.require("prometheus", "prometheus"), scrapeConfigs);
    }

    /** This Prometheus binary (tools/monitoring/prometheus.sh builds one with Kubernetes service discovery). */
    public static PrometheusServer start(Path prometheus, String scrapeConfigs) throws IOException {
        Path dir = Files.createTempDirectory("prometheus-");
        int port = ListenPorts.free();
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, """
                global: {scrape_interval: 1s, evaluation_interval: 1s}
                rule_files: [%s]
                scrape_configs:
                %s""".formatted(Path.of("kubernetes/monitoring/alert-rules.yaml").toAbsolutePath(), scrapeConfigs.indent(2)));
        Process process = new ProcessBuilder(prometheus.toString(), "--config.file=" + config, "--storage.tsdb.path=" + dir.resolve("data"),
                "--web.listen-address=127.0.0.1:" + port, "--log.level=warn")
                .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
        PrometheusServer server = new PrometheusServer(process, port);
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
                .until(() -> server.get("/-/ready").statusCode() == 200);
        return server;
    }

    /** The first sample's value, NaN when there is none. */
    public double value(String expr) throws IOException, InterruptedException {
        JsonNode result = query(expr);
        return result.isEmpty() ? Double.NaN : result.get(0).get("value").get(1).asDouble();
    }

    public boolean hasData(String expr) throws IOException, InterruptedException {
        for (JsonNode sample : query(expr)) {
            if (!sample.get("value").get(1).asText().equals("NaN")) {
                return true;
            }
        }
        return false;
    }

    public JsonNode query(String expr) throws IOException, InterruptedException {
        HttpResponse<String> response = get("/api/v1/query?query=" + URLEncoder.encode(expr, StandardCharsets.UTF_8));
        JsonNode body = JSON.readTree(response.body());
        assertEquals("success", body.get("status").asText(), expr + ": " + response.body());
        return body.get("data").get("result");
    }

    /**
     * The shipped queries (dashboard panels, alert expressions without their threshold) that return no
     * data, and the metric names they use that have no series: empty when every one works.
     */
    public List<String> shippedQueriesWithoutData(Map<String, String> shipped) throws IOException, InterruptedException {
        List<String> dead = new ArrayList<>();
        for (Map.Entry<String, String> query : shipped.entrySet()) {
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
        return dead;
    }

    /** The loaded alert rules, and whether each evaluates. */
    public JsonNode rules() throws IOException, InterruptedException {
        return JSON.readTree(get("/api/v1/rules").body()).get("data").get("groups").get(0).get("rules");
    }

    public HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
