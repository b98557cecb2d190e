package dev.torchjob.operator.local;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The last lines a replica's process printed, kept as the kubelet keeps them for a failed container under
 * {@code terminationMessagePolicy: FallbackToLogsOnError}: its termination message is the end of its log, at
 * most {@link #MESSAGE_LINES} lines and {@link #MESSAGE_BYTES} bytes. Written by the output's reader, read
 * once the process has ended.
 */
final class OutputTail {
    static final int MESSAGE_LINES = 80;
    static final int MESSAGE_BYTES = 2048;

    private final Deque<String> lines = new ArrayDeque<>();

    synchronized void add(String line) {
        lines.addLast(line);
        if (lines.size() > MESSAGE_LINES) {
            lines.removeFirst();
        }
    }

    /** The termination message: the last lines, cut to the last {@link #MESSAGE_BYTES} bytes when longer. */
    synchronized String message() {
        String text = String.join("\n", lines);
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return bytes.length <= MESSAGE_BYTES ? text
                : new String(bytes, bytes.length - MESSAGE_BYTES, MESSAGE_BYTES, StandardCharsets.UTF_8);
    }
}
