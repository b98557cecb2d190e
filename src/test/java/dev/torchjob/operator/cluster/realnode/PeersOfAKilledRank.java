package dev.torchjob.operator.cluster.realnode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The other ranks' training processes when one rank's is killed under torchrun, watched from the machine. Each
 * should see the closed connection in its collective and end within a second or two (2026-12-03: 120 kills of
 * torch 1.13's gloo over loopback, a veth pair, and a bridge through kube-proxy's conntrack rule, peers ended in
 * 0.25 to 1.1 s). Twice on the loaded real node a peer never did, and as torchrun's agent waits at its exit
 * barrier for the peers, the job then waited for the process group's timeout. This records when each peer ended
 * and, for one still running {@link #MISSED} after the kill, prints what the machine shows of it: its TCP
 * connections (ESTABLISHED: the close never reached its kernel; CLOSE-WAIT: it did, and gloo never read it),
 * where its threads wait, conntrack's counters (its {@code invalid} packets, which kube-proxy drops) and the
 * forwarding rules' counters.
 */
final class PeersOfAKilledRank {
    static final Duration MISSED = Duration.ofSeconds(15);

    private PeersOfAKilledRank() {
    }

    /**
     * Watches the peers (pod name to its torchrun's training process, taken before the kill) in the background from
     * the kill on; each peer's time to end (ms) goes to {@code ended}.
     */
    static void watchFrom(Instant kill, Map<String, ProcessHandle> peers, Consumer<Long> ended) {
        peers.forEach((pod, worker) -> {
            Thread watch = new Thread(() -> {
                boolean reported = false;
                while (worker.isAlive() && !Thread.currentThread().isInterrupted()) {
                    if (!reported && Duration.between(kill, Instant.now()).compareTo(MISSED) > 0) {
                        System.out.printf("real node: %s's worker (pid %d) still running %d s after its peer was killed; what held it:%n%s%n",
                                pod, worker.pid(), MISSED.toSeconds(), evidence(worker.pid()));
                        reported = true;
                    }
                    sleep(Duration.ofMillis(50));
                }
                ended.accept(Duration.between(kill, Instant.now()).toMillis());
            }, "peer-watch-" + pod);
            watch.setDaemon(true);
            watch.start();
        });
    }

    private static String evidence(long pid) {
        StringBuilder out = new StringBuilder();
        out.append(onTheMachine("nsenter", "-t", String.valueOf(pid), "-n", "ss", "-tnoi"));
        try (Stream<Path> tasks = Files.list(Path.of("/proc", String.valueOf(pid), "task"))) {
            for (Path task : tasks.toList()) {
                out.append("thread ").append(task.getFileName()).append(' ').append(readOr(task.resolve("comm"))).append(" waits in ")
                        .append(readOr(task.resolve("wchan"))).append('\n');
            }
        } catch (IOException | UncheckedIOException e) {
            out.append("its threads: ").append(e).append('\n');
        }
        out.append("conntrack's counters, a row per CPU (hex):\n").append(readOr(Path.of("/proc/net/stat/nf_conntrack"))).append('\n');
        out.append(onTheMachine("iptables-save", "-c", "-t", "filter").lines().filter(line -> line.contains("FORWARD"))
                .collect(Collectors.joining("\n", "the forwarding rules, [packets:bytes] each:\n", "\n")));
        return out.toString();
    }

    private static String readOr(Path file) {
        try {
            return Files.readString(file).strip();
        } catch (IOException e) {
            return "(" + e.getMessage() + ")";
        }
    }

    /** A command's output (stderr included), or why it gave none: evidence, never a failure of the test. */
    private static String onTheMachine(String... command) {
        try {
            // Into a file: a pipe nobody reads while it runs would stall a long output.
            Path output = Files.createTempFile("peer-evidence", ".txt");
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
            boolean answered = process.waitFor(10, TimeUnit.SECONDS);
            if (!answered) {
                process.destroyForcibly();
            }
            String text = Files.readString(output);
            Files.delete(output);
            return "$ " + String.join(" ", command) + (answered ? "" : " (no answer in 10 s)") + "\n" + text;
        } catch (IOException e) {
            return "$ " + String.join(" ", command) + ": " + e.getMessage() + "\n";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    private static void sleep(Duration pause) {
        try {
            Thread.sleep(pause.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
