package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.fabric8.kubernetes.api.model.admissionregistration.v1.WebhookClientConfig;

/**
 * What a controller's webhooks need to be served on loopback: a CA and serving certificate as the controllers'
 * certificate rotator (open-policy-agent's cert-controller) makes them — the CA named as the rotator names it, the
 * certificate for the webhook Service's DNS name — also valid for 127.0.0.1. Put in the Secret the rotator reads,
 * the pair is found valid and kept, and the rotator injects the CA into the webhook configurations itself.
 */
final class WebhookCertificate {
    /**
     * Where controller-runtime's webhook server reads its pair unless its main says otherwise (Kubeflow's and
     * AppWrapper's do not): one folder on the machine, so one such controller at a time.
     */
    static final Path CONTROLLER_RUNTIME_CERTS = Path.of("/tmp/k8s-webhook-server/serving-certs");

    private WebhookCertificate() {
    }

    /** Removes {@link #CONTROLLER_RUNTIME_CERTS}: the next controller finds no pair of another. */
    static void removeControllerRuntimeCerts() throws IOException {
        if (!Files.isDirectory(CONTROLLER_RUNTIME_CERTS)) {
            return;
        }
        try (var files = Files.list(CONTROLLER_RUNTIME_CERTS)) {
            for (Path file : files.toList()) {
                Files.delete(file);
            }
        }
        Files.delete(CONTROLLER_RUNTIME_CERTS);
    }

    /**
     * Makes the pair in {@code work/pki}, writes the serving pair where the webhook server reads it
     * ({@code certs}), and returns the Secret's data (ca.crt, ca.key, tls.crt, tls.key).
     */
    static Map<String, String> make(Path work, String organization, String caName, String serviceHost, Path certs) throws IOException {
        Path dir = Files.createDirectories(work.resolve("pki"));
        openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.pkcs8", "-out", "ca.crt", "-days", "3650",
                "-subj", "/O=" + organization + "/CN=" + caName, "-addext", "subjectAltName=DNS:" + caName,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign");
        openssl(dir, "rsa", "-in", "ca.pkcs8", "-traditional", "-out", "ca.key");
        openssl(dir, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.pkcs8", "-out", "tls.csr", "-subj", "/CN=" + serviceHost);
        openssl(dir, "rsa", "-in", "tls.pkcs8", "-traditional", "-out", "tls.key");
        Files.writeString(dir.resolve("tls.ext"), "subjectAltName=DNS:" + serviceHost + ",IP:127.0.0.1\n"
                + "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n");
        openssl(dir, "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "tls.crt",
                "-days", "3650", "-extfile", "tls.ext");
        Map<String, String> data = new LinkedHashMap<>();
        for (String name : List.of("ca.crt", "ca.key", "tls.crt", "tls.key")) {
            data.put(name, Files.readString(dir.resolve(name)));
        }
        // Where the Deployment mounts the Secret: the webhook server serves the pair from there.
        Files.createDirectories(certs);
        Files.writeString(certs.resolve("tls.crt"), data.get("tls.crt"));
        Files.writeString(certs.resolve("tls.key"), data.get("tls.key"));
        return data;
    }

    /** A webhook the manifests address through its Service, addressed on loopback instead ({@code base}: https://127.0.0.1:PORT). */
    static void atLoopback(WebhookClientConfig config, String base) {
        config.setUrl(base + config.getService().getPath());
        config.setService(null);
    }

    private static void openssl(Path dir, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        try {
            Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                throw new IOException("openssl " + String.join(" ", args) + ": " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}
