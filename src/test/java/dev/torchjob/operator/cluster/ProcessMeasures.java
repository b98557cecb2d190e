package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What the benchmarks read about the operator's process from the host's /proc and the JDK's jcmd,
 * whether it runs as a plain process ({@link OperatorProcess}) or in its image ({@link OperatorContainer}).
 */
final class ProcessMeasures {
    private ProcessMeasures() {
    }

    /** CPU time (user + system) the process has used so far. */
    static double cpuSeconds(long pid) throws IOException {
        String[] stat = Files.readString(Path.of("/proc", String.valueOf(pid), "stat")).split("\\) ", 2)[1].split(" ");
        long ticks = Long.parseLong(stat[11]) + Long.parseLong(stat[12]); // utime, stime (fields 14 and 15)
        return ticks / 100.0; // USER_HZ is 100 on Linux
    }

    /** Resident memory now and its peak so far (VmRSS, VmHWM), in MiB. */
    static String residentMemory(long pid) throws IOException {
        String status = Files.readString(Path.of("/proc", String.valueOf(pid), "status"));
        return String.format("RSS %.1f MiB, peak %.1f MiB", statusKiB(status, "VmRSS") / 1024.0, statusKiB(status, "VmHWM") / 1024.0);
    }

    private static long statusKiB(String status, String field) {
        return status.lines().filter(l -> l.startsWith(field + ":")).findFirst()
                .map(l -> Long.parseLong(l.replaceAll("[^0-9]", ""))).orElse(-1L);
    }

    /**
     * The heap in use right after a full GC, as jcmd reports it (a JVM in a container too: jcmd
     * attaches through /proc); the native executable has no attach mechanism, so there its heap
     * pools' use is read from the metrics instead (no GC forced).
     */
    static String heapAfterGc(long pid, boolean nativeExecutable, String metrics) throws IOException, InterruptedException {
        if (nativeExecutable) {
            double used = metrics.lines().filter(l -> l.startsWith("jvm_memory_used_bytes{area=\"heap\""))
                    .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
            return String.format("native: heap pools in use %.1f MiB (no GC forced)", used / (1024 * 1024));
        }
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        new ProcessBuilder(jcmd.toString(), String.valueOf(pid), "GC.run").redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
        Process info = new ProcessBuilder(jcmd.toString(), String.valueOf(pid), "GC.heap_info").redirectErrorStream(true).start();
        String out = new String(info.getInputStream().readAllBytes());
        info.waitFor();
        // Every generation's line (young, old, Metaspace), not only the first.
        return String.join("; ", out.lines().filter(l -> l.contains("used")).map(String::strip).toList());
    }
}
