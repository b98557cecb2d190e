package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The API server offered on another address or port: bytes relayed both ways (TLS goes through
 * untouched, so clients check the API server's own certificate). The real node's pods reach the API
 * server through one on the bridge's address (the kubernetes Service's EndpointSlice points there).
 *
 * <p>It can also play a server, or a load balancer in front of it, that closed a kept-alive connection
 * just as the client sent its next request on it ({@link #cutStaleConnections}): the request is never
 * passed on, and the client sees its connection end before any answer.
 */
public final class ApiServerRelay implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress apiServer;
    private final AtomicInteger toCut = new AtomicInteger();
    private final AtomicInteger cut = new AtomicInteger();
    private volatile long staleAfterNanos = Long.MAX_VALUE;

    private ApiServerRelay(ServerSocket server, InetSocketAddress apiServer) {
        this.server = server;
        this.apiServer = apiServer;
    }

    /** A relay on {@code address}:{@code port} (0: any free port) to the API server at {@code apiServerUrl}. */
    public static ApiServerRelay start(String address, int port, URI apiServerUrl) throws IOException {
        ServerSocket server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new InetSocketAddress(InetAddress.getByName(address), port), 128);
        ApiServerRelay relay = new ApiServerRelay(server, new InetSocketAddress(apiServerUrl.getHost(), apiServerUrl.getPort()));
        Thread accept = new Thread(relay::accept, "api-server-relay");
        accept.setDaemon(true);
        accept.start();
        return relay;
    }

    /** Where clients reach the API server through this relay. */
    public URI url() {
        return URI.create("https://" + server.getInetAddress().getHostAddress() + ":" + server.getLocalPort());
    }

    /**
     * The next {@code connections} kept-alive connections a client sends on again after they were quiet
     * for {@code idle} (both ways, after an exchange) are closed under that request.
     */
    public void cutStaleConnections(int connections, Duration idle) {
        staleAfterNanos = idle.toNanos();
        toCut.set(connections);
    }

    /** How many requests were cut so far. */
    public int cut() {
        return cut.get();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket();
                try {
                    upstream.connect(apiServer, 5_000);
                } catch (IOException e) {
                    client.close();
                    upstream.close();
                    continue;
                }
                Connection connection = new Connection(client, upstream);
                relay(connection, "to-api-server", connection::fromClient);
                relay(connection, "to-client", connection::fromApiServer);
            } catch (IOException e) {
                // closed, or one connection failed: the next accept goes on
            }
        }
    }

    private interface Direction {
        void run() throws IOException;
    }

    private static void relay(Connection connection, String name, Direction direction) {
        Thread thread = new Thread(() -> {
            try {
                direction.run();
            } catch (IOException e) {
                if (!connection.cut) {
                    closeQuietly(connection.client);
                    closeQuietly(connection.upstream);
                }
            }
        }, "api-server-relay-" + name);
        thread.setDaemon(true);
        thread.start();
    }

    /** One client's connection and its own to the API server. */
    private final class Connection {
        final Socket client;
        final Socket upstream;
        volatile long lastBytesAt = System.nanoTime();
        volatile boolean answered;
        volatile boolean cut;

        Connection(Socket client, Socket upstream) {
            this.client = client;
            this.upstream = upstream;
        }

        void fromClient() throws IOException {
            InputStream in = client.getInputStream();
            OutputStream out = upstream.getOutputStream();
            byte[] buffer = new byte[16 * 1024];
            for (int read; (read = in.read(buffer)) >= 0;) {
                if (answered && System.nanoTime() - lastBytesAt >= staleAfterNanos && toCut.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    cutUnderTheRequest(in);
                    return;
                }
                lastBytesAt = System.nanoTime();
                out.write(buffer, 0, read);
                out.flush();
            }
            ended(client, upstream);
        }

        void fromApiServer() throws IOException {
            InputStream in = upstream.getInputStream();
            OutputStream out = client.getOutputStream();
            byte[] buffer = new byte[16 * 1024];
            for (int read; (read = in.read(buffer)) >= 0;) {
                out.write(buffer, 0, read);
                out.flush();
                lastBytesAt = System.nanoTime();
                answered = true;
            }
            if (!cut) {
                ended(upstream, client);
            }
        }

        /** The request goes nowhere; the client's side ends in order (a FIN, not a reset), then the rest is closed. */
        private void cutUnderTheRequest(InputStream in) throws IOException {
            cut = true;
            ApiServerRelay.this.cut.incrementAndGet();
            closeQuietly(upstream);
            client.shutdownOutput();
            client.setSoTimeout(5_000);
            try {
                in.transferTo(OutputStream.nullOutputStream());
            } finally {
                closeQuietly(client);
            }
        }
    }

    /** One direction ended: the other side's sending ends too; a socket ended both ways is closed. */
    private static void ended(Socket from, Socket to) throws IOException {
        to.shutdownOutput();
        from.shutdownInput();
        for (Socket socket : new Socket[] {from, to}) {
            if (socket.isInputShutdown() && socket.isOutputShutdown()) {
                socket.close();
            }
        }
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            // already closed
        }
    }
}
