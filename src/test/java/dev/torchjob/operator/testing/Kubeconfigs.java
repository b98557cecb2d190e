package dev.torchjob.operator.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;

import io.fabric8.kubernetes.client.Config;

/**
 * A kubeconfig as a user's: one cluster by its URL, a token, the context current; for tests that reach a
 * server without the control plane's certificates, and that read it as the command line does.
 */
public final class Kubeconfigs {
    private Kubeconfigs() {
    }

    /** Writes it to {@code file}; the context's namespace is {@code namespace}, or none when it is null. */
    public static Path write(Path file, String server, String namespace) throws IOException {
        Files.writeString(file, """
                apiVersion: v1
                kind: Config
                clusters: [{name: test, cluster: {server: "%s"}}]
                users: [{name: someone, user: {token: t}}]
                contexts: [{name: test, context: {cluster: test, user: someone%s}}]
                current-context: test
                """.formatted(server, namespace == null ? "" : ", namespace: " + namespace));
        return file;
    }

    /**
     * Runs {@code use} with none of fabric8's {@code kubernetes.*} system properties, as in a user's
     * shell, and puts them back after. The Quarkus mock server's test resource leaves them set in the
     * test JVM (its master, namespace {@code test}, {@code tryKubeConfig=false}), and fabric8 prefers them
     * to any kubeconfig; what {@code use} sets (the command line's {@code --kubeconfig}) is removed.
     */
    public static <T> T readAsAUserWould(Callable<T> use) throws Exception {
        Properties saved = new Properties();
        saved.putAll(System.getProperties());
        clearFabric8Properties();
        try {
            return use.call();
        } finally {
            clearFabric8Properties();
            for (Map.Entry<Object, Object> property : saved.entrySet()) {
                if (property.getKey() instanceof String name && isFabric8s(name)) {
                    System.setProperty(name, (String) property.getValue());
                }
            }
        }
    }

    private static void clearFabric8Properties() {
        System.getProperties().stringPropertyNames().stream().filter(Kubeconfigs::isFabric8s).forEach(System::clearProperty);
    }

    private static boolean isFabric8s(String name) {
        return name.startsWith("kubernetes.") || name.equals(Config.KUBERNETES_KUBECONFIG_FILE);
    }
}
