package dev.torchjob.operator.local;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Optional;

/**
 * The health and metrics port, checked before anything starts (the operator's, the local mode's): a
 * port already taken is one line that says which and how to move it, not a stack trace after start.
 */
public final class HealthPort {
    private HealthPort() {
    }

    /** The port cannot be bound: says which and how to move it ({@code howToMove}); empty when free or 0. */
    public static Optional<String> taken(String configured, String host, String howToMove) {
        int port;
        try {
            port = Integer.parseInt(configured.strip());
        } catch (NumberFormatException e) {
            return Optional.of("error: the health and metrics port " + configured + " is not a number. " + howToMove);
        }
        if (port == 0) {
            return Optional.empty();
        }
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(host, port));
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of("error: port " + port + " (health and metrics) is in use on " + host + ". " + howToMove);
        }
    }
}
