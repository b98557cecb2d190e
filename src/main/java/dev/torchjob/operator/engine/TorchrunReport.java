package dev.torchjob.operator.engine;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What torchrun (PyTorch's elastic agent) says at its end. Its container exits with code 1 whatever ended its workers,
 * so the exit code no longer tells a rank killed from outside (the OOM killer, a {@code kill -9} from the node) from a
 * bug. Its last output does: the failure report names the first worker that failed and how ({@code Root Cause (first
 * observed failure): … exitcode  : -9 (pid: 412)} for a worker killed by SIGKILL, {@code exitcode  : 1} for one whose
 * code raised), and an agent that was itself signalled ends with {@code SignalException: Process 17 got signal: 15}.
 * Either is judged as the container's own exit code would have been without torchrun: 128 + the signal, or the
 * worker's code. Above torchrun's own traceback and report is what its workers printed last: their own traceback.
 *
 * @param exitCode      the exit code the restart rules judge: the worker's, or 128 + the signal
 * @param said          what happened, in words: "torchrun's worker (rank 1) was killed by signal 9 (SIGKILL)"
 * @param workersOutput what the workers printed before torchrun's own end, when that end is in the output; else null
 */
record TorchrunReport(int exitCode, String said, String workersOutput) {
    private static final String ROOT_CAUSE = "Root Cause (first observed failure):";
    // At most 9 digits: a number no int holds is no exit code or signal (and must not throw).
    private static final Pattern WORKER_EXIT = Pattern.compile("exitcode\\s*:\\s*(-?\\d{1,9})(?!\\d)");
    private static final Pattern WORKER_RANK = Pattern.compile("rank\\s*:\\s*(\\d+)");
    private static final Pattern AGENT_SIGNALLED = Pattern.compile("SignalException: Process \\d+ got signal: (\\d{1,9})(?!\\d)");
    /** The agent's log line as its workers' group fails (1.13 and current PyTorch alike); its own traceback follows. */
    private static final Pattern GROUP_FAILED = Pattern.compile("(?m)^.*failed \\(exitcode: -?\\d+\\) local_rank: \\d+ \\(pid: \\d+\\) of binary");
    private static final String TRACEBACK = "Traceback (most recent call last):";
    /** The names Linux gives the signals that end a process (signal(7)); others are said by number. */
    private static final Map<Integer, String> NAMES = Map.ofEntries(Map.entry(1, "SIGHUP"), Map.entry(2, "SIGINT"),
            Map.entry(3, "SIGQUIT"), Map.entry(4, "SIGILL"), Map.entry(6, "SIGABRT"), Map.entry(7, "SIGBUS"), Map.entry(8, "SIGFPE"),
            Map.entry(9, "SIGKILL"), Map.entry(10, "SIGUSR1"), Map.entry(11, "SIGSEGV"), Map.entry(12, "SIGUSR2"),
            Map.entry(13, "SIGPIPE"), Map.entry(14, "SIGALRM"), Map.entry(15, "SIGTERM"));

    /** How torchrun's last output says it ended, if it says so: its first failed worker's end, or a signal to itself. */
    static Optional<TorchrunReport> of(String output) {
        if (output == null) {
            return Optional.empty();
        }
        int report = output.lastIndexOf(ROOT_CAUSE);
        Matcher agent = AGENT_SIGNALLED.matcher(output);
        int agentAt = -1;
        int agentSignal = 0;
        while (agent.find()) {
            agentAt = agent.start();
            agentSignal = Integer.parseInt(agent.group(1));
        }
        // Whichever torchrun said last is how it ended.
        if (agentAt > report && agentSignal >= 1 && agentSignal <= 64) {
            int traceback = output.lastIndexOf(TRACEBACK, agentAt);
            return Optional.of(new TorchrunReport(128 + agentSignal, "torchrun got signal " + named(agentSignal),
                    traceback < 0 ? null : output.substring(0, traceback)));
        }
        if (report < 0) {
            return Optional.empty();
        }
        String rootCause = output.substring(report + ROOT_CAUSE.length());
        Matcher exit = WORKER_EXIT.matcher(rootCause);
        if (!exit.find()) {
            return Optional.empty();
        }
        int code = Integer.parseInt(exit.group(1));
        if (code == 0 || code < -64 || code > 255) {
            return Optional.empty();
        }
        Matcher rank = WORKER_RANK.matcher(rootCause);
        String worker = rank.find() && rank.start() < exit.start() ? "torchrun's worker (rank " + rank.group(1) + ")" : "torchrun's worker";
        String workersOutput = workersOutput(output.substring(0, report));
        if (code > 0) {
            return Optional.of(new TorchrunReport(code, worker + " exited with code " + code, workersOutput));
        }
        int signal = -code;
        return Optional.of(new TorchrunReport(128 + signal, worker + " was killed by signal " + named(signal), workersOutput));
    }

    /** What came before the agent's last "failed (exitcode: …)" line: its workers' words; null when that line was not kept. */
    private static String workersOutput(String beforeReport) {
        Matcher failed = GROUP_FAILED.matcher(beforeReport);
        int at = -1;
        while (failed.find()) {
            at = failed.start();
        }
        return at < 0 ? null : beforeReport.substring(0, at);
    }

    private static String named(int signal) {
        String name = NAMES.get(signal);
        return name == null ? Integer.toString(signal) : signal + " (" + name + ")";
    }
}
