package dev.torchjob.operator.main;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.torchjob.operator.local.HealthPort;
import io.fabric8.kubernetes.client.Config;

/**
 * What the operator checks before it starts, so that the two mistakes of a first start (no cluster
 * reachable, the health port taken) end within seconds with one paragraph that says what was tried
 * and what to do, instead of a long start and three stack traces.
 */
final class OperatorPreflight {
    private static final int CONNECT_TIMEOUT_SECONDS = 5;

    private OperatorPreflight() {
    }

    static Optional<String> problem() {
        return portTaken().or(OperatorPreflight::noCluster);
    }

    /** The health and metrics port, as Quarkus will read it (-D, then the environment, then 8080). */
    static Optional<String> portTaken() {
        String configured = Optional.ofNullable(System.getProperty("quarkus.http.port"))
                .or(() -> Optional.ofNullable(System.getenv("QUARKUS_HTTP_PORT"))).orElse("8080");
        String host = Optional.ofNullable(System.getProperty("quarkus.http.host"))
                .or(() -> Optional.ofNullable(System.getenv("QUARKUS_HTTP_HOST"))).orElse("0.0.0.0");
        return HealthPort.taken(configured, host, "Set QUARKUS_HTTP_PORT (or -Dquarkus.http.port) to another port, 0 for any free one.");
    }

    /** The cluster the client would use, reachable within a few seconds, or what was tried and how to fix it. */
    static Optional<String> noCluster() {
        Config config = Config.autoConfigure(null);
        String kubeconfig = Optional.ofNullable(System.getenv("KUBECONFIG"))
                .orElse(Path.of(System.getProperty("user.home"), ".kube", "config").toString());
        boolean kubeconfigFound = Files.isRegularFile(Path.of(kubeconfig.split(java.io.File.pathSeparator)[0]));
        boolean inCluster = System.getenv("KUBERNETES_SERVICE_HOST") != null;
        String server = config.getMasterUrl();
        if (config.getHttpsProxy() != null || config.getHttpProxy() != null) {
            return Optional.empty(); // reached through a proxy: a direct connection says nothing
        }
        Optional<String> unreachable = unreachable(server);
        if (unreachable.isEmpty()) {
            return Optional.empty();
        }
        if (inCluster && !kubeconfigFound) {
            // In a pod: the kubeconfig advice would mislead; what blocks a pod from its API server is the network.
            return Optional.of("error: no Kubernetes cluster reachable: " + server + " " + unreachable.get()
                    + ". Tried the in-cluster ServiceAccount (KUBERNETES_SERVICE_HOST/PORT). Check that this pod may reach"
                    + " the API server (network policies, the kubernetes Service's endpoints).");
        }
        return Optional.of("error: no Kubernetes cluster reachable: " + server + " " + unreachable.get() + ". Tried the kubeconfig ("
                + kubeconfig + (kubeconfigFound ? "" : ": not found") + ") and the in-cluster ServiceAccount ("
                + (inCluster ? "in a pod" : "not in a pod") + "). Point KUBECONFIG at your cluster's kubeconfig (or check"
                + " that its server is up), or run one job on this machine without a cluster: torchjob-operator run JOB.yaml"
                + " (see --help).");
    }

    /** Why nothing answers at the server's address, or empty when a connection opens. */
    private static Optional<String> unreachable(String server) {
        URI uri;
        try {
            uri = URI.create(server);
        } catch (IllegalArgumentException e) {
            return Optional.of("is not a URL");
        }
        int port = uri.getPort() != -1 ? uri.getPort() : "http".equals(uri.getScheme()) ? 80 : 443;
        // Name resolution can hang far longer than a connect timeout: the whole attempt is bounded.
        CompletableFuture<Optional<String>> attempt = CompletableFuture.supplyAsync(() -> {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(uri.getHost(), port), CONNECT_TIMEOUT_SECONDS * 1000);
                return Optional.empty();
            } catch (IOException e) {
                return Optional.of("does not answer (" + e.getClass().getSimpleName() + ": " + e.getMessage() + ")");
            }
        });
        try {
            return attempt.get(CONNECT_TIMEOUT_SECONDS + 1, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            return Optional.of("does not answer within " + CONNECT_TIMEOUT_SECONDS + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.of("was not tried (interrupted)");
        } catch (ExecutionException e) {
            return Optional.of("does not answer (" + e.getCause() + ")");
        }
    }
}
