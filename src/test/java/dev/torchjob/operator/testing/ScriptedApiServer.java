package dev.torchjob.operator.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * An API server on loopback, plain HTTP/1.1, that answers each request from a script of path prefixes
 * and can close the connection under a request before any answer: what a client meets when it sends
 * on a kept-alive connection the server has just closed. (fabric8's mock server cannot drop a
 * connection.) One request per connection, then it closes.
 */
public final class ScriptedApiServer implements AutoCloseable {
    private record Answer(int code, Supplier<String> json) {
    }

    private final ServerSocket listening;
    private final List<Map.Entry<String, Answer>> script = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> toDrop = new ConcurrentHashMap<>();
    private final List<String> requested = new CopyOnWriteArrayList<>();
    private final List<String> answered = new CopyOnWriteArrayList<>();

    public ScriptedApiServer() throws IOException {
        listening = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread accepting = new Thread(this::serve, "scripted-api-server");
        accepting.setDaemon(true);
        accepting.start();
    }

    /** Requests whose path starts with the prefix get this answer; the first prefix that matches wins. */
    public ScriptedApiServer answer(String pathPrefix, int code, Supplier<String> json) {
        script.add(Map.entry(pathPrefix, new Answer(code, json)));
        return this;
    }

    public ScriptedApiServer answer(String pathPrefix, int code, String json) {
        return answer(pathPrefix, code, () -> json);
    }

    /** The next {@code times} requests whose path starts with the prefix are read and their connection closed unanswered. */
    public ScriptedApiServer dropNext(String pathPrefix, int times) {
        toDrop.put(pathPrefix, new AtomicInteger(times));
        return this;
    }

    /** The paths asked for, in order, dropped ones included. */
    public List<String> requested() {
        return List.copyOf(requested);
    }

    /** The paths answered, in order. */
    public List<String> answered() {
        return List.copyOf(answered);
    }

    /** A kubeconfig for this server (namespace team-a), written into the folder. */
    public String url() {
        return "http://127.0.0.1:" + listening.getLocalPort();
    }

    public Path kubeconfig(Path folder) throws IOException {
        return Kubeconfigs.write(folder.resolve("config"), url(), "team-a");
    }

    private void serve() {
        while (!listening.isClosed()) {
            try (Socket connection = listening.accept()) {
                String path = requestPath(connection.getInputStream());
                requested.add(path);
                if (toDrop.entrySet().stream().anyMatch(d -> path.startsWith(d.getKey()) && d.getValue().getAndDecrement() > 0)) {
                    continue; // closed with no answer
                }
                Answer answer = script.stream().filter(e -> path.startsWith(e.getKey())).map(Map.Entry::getValue).findFirst()
                        .orElse(new Answer(404, () -> "{\"kind\": \"Status\", \"apiVersion\": \"v1\", \"status\": \"Failure\", \"code\": 404, "
                                + "\"reason\": \"NotFound\"}"));
                byte[] body = answer.json().get().getBytes(StandardCharsets.UTF_8);
                OutputStream out = connection.getOutputStream();
                out.write(("HTTP/1.1 " + answer.code() + " Scripted\r\nContent-Type: application/json\r\nContent-Length: " + body.length
                        + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
                answered.add(path);
            } catch (IOException e) {
                return; // closed: the test is over
            }
        }
    }

    /** The request's path (and query), its head read to the blank line. */
    private static String requestPath(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        int c;
        while (!head.toString().endsWith("\r\n\r\n") && (c = in.read()) != -1) {
            head.append((char) c);
        }
        String[] requestLine = head.toString().lines().findFirst().orElse("").split(" ");
        return requestLine.length > 1 ? requestLine[1] : "";
    }

    @Override
    public void close() throws IOException {
        listening.close();
    }
}
