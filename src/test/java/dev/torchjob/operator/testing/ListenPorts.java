package dev.torchjob.operator.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for the processes the tests start to listen on. Taken below the kernel's ephemeral range: a port
 * that {@code bind(0)} hands out comes from the range every outgoing connection takes its local port from,
 * and in the seconds before the process binds it (the real node's kube-proxy: a minute and more) a
 * connection to the API server may hold it — kube-proxy then never served its health check (CI, once).
 * Below that range only a listener can hold a port, and each one handed out here is not handed out again.
 */
public final class ListenPorts {
    /** Above Kubernetes' fixed ports (10248-10259), below its NodePorts (30000-32767). */
    private static final int LOWEST = 20000;
    private static final int HIGHEST = 29999;
    private static final Set<Integer> HANDED_OUT = new HashSet<>();

    private ListenPorts() {
    }

    /** A port free on every address now, and not handed out before in this JVM. */
    public static synchronized int free() {
        int highest = Math.min(HIGHEST, ephemeralRangeStart() - 1);
        for (int tries = 0; tries < 1000; tries++) {
            int port = ThreadLocalRandom.current().nextInt(LOWEST, highest + 1);
            if (!HANDED_OUT.contains(port) && bindable(port)) {
                HANDED_OUT.add(port);
                return port;
            }
        }
        throw new IllegalStateException("no free port between " + LOWEST + " and " + highest);
    }

    private static boolean bindable(int port) {
        for (InetAddress address : new InetAddress[] {null, InetAddress.getLoopbackAddress()}) {
            try (ServerSocket socket = new ServerSocket()) {
                socket.setReuseAddress(false);
                socket.bind(address == null ? new InetSocketAddress(port) : new InetSocketAddress(address, port));
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }

    /** The first port of Linux's ephemeral range (32768 by default); a machine that lowered it gets fewer ports. */
    private static int ephemeralRangeStart() {
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).strip();
            return Math.max(LOWEST + 1000, Integer.parseInt(range.split("\\s+")[0]));
        } catch (IOException | RuntimeException e) {
            return 49152;
        }
    }
}
