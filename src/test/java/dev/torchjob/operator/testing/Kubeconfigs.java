package dev.torchjob.operator.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A kubeconfig as a user's: one cluster by its URL, a token, the context current; for tests that reach a server without the control plane's certificates. */
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
}
