package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** A failed replica's termination message locally is what the kubelet keeps of its log: the end, 80 lines, 2048 bytes. */
class OutputTailTest {
    @Test
    void aShortOutputIsTheWholeMessage() {
        OutputTail tail = new OutputTail();
        tail.add("epoch 1");
        tail.add("RuntimeError: boom");
        assertEquals("epoch 1\nRuntimeError: boom", tail.message());
        assertEquals("", new OutputTail().message(), "a process that printed nothing");
    }

    @Test
    void onlyTheLast80LinesAreKept() {
        OutputTail tail = new OutputTail();
        for (int i = 1; i <= 100; i++) {
            tail.add("line " + i);
        }
        String message = tail.message();
        assertTrue(message.startsWith("line 21\n"), message);
        assertTrue(message.endsWith("\nline 100"), message);
        assertEquals(OutputTail.MESSAGE_LINES, message.lines().count());
    }

    @Test
    void longLinesAreCutToTheLast2048BytesSoTheErrorAtTheEndSurvives() {
        OutputTail tail = new OutputTail();
        tail.add("x".repeat(5000));
        tail.add("RuntimeError: NCCL communicator was aborted");
        String message = tail.message();
        assertEquals(OutputTail.MESSAGE_BYTES, message.getBytes(StandardCharsets.UTF_8).length);
        assertTrue(message.endsWith("\nRuntimeError: NCCL communicator was aborted"), message);
    }
}
