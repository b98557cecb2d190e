package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;

/**
 * The API server, which listens on loopback only, offered on the real node's bridge address: bytes
 * relayed both ways (TLS goes through untouched, so clients check the API server's own certificate,
 * which names 10.96.0.1). The kubernetes Service's EndpointSlice points here.
 */
final class ApiServerRelay implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress apiServer;

    private ApiServerRelay(ServerSocket server, InetSocketAddress apiServer) {
        this.server = server;
        this.apiServer = apiServer;
    }

    static ApiServerRelay start(String address, int port, URI apiServerUrl) throws IOException {
        ServerSocket server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new InetSocketAddress(InetAddress.getByName(address), port), 128);
        ApiServerRelay relay = new ApiServerRelay(server, new InetSocketAddress(apiServerUrl.getHost(), apiServerUrl.getPort()));
        Thread accept = new Thread(relay::accept, "api-server-relay");
        accept.setDaemon(true);
        accept.start();
        return relay;
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
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                // closed, or one connection failed: the next accept goes on
            }
        }
    }

    /** Copies one direction until it ends, then ends the other side's sending; a socket both ways ended is closed. */
    private static void pump(Socket from, Socket to) {
        Thread thread = new Thread(() -> {
            try {
                from.getInputStream().transferTo(to.getOutputStream());
                to.shutdownOutput();
                from.shutdownInput();
                for (Socket socket : new Socket[] {from, to}) {
                    if (socket.isInputShutdown() && socket.isOutputShutdown()) {
                        socket.close();
                    }
                }
            } catch (IOException e) {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "api-server-relay-connection");
        thread.setDaemon(true);
        thread.start();
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
