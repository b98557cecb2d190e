package dev.torchjob.operator.cluster;

import java.io.IOException;

/** The operator under a benchmark, as a process or in its image: what it cost. */
public interface BenchmarkedOperator extends AutoCloseable {
    double cpuSeconds() throws IOException;

    /** Resident memory now and its peak so far. */
    String residentMemory() throws IOException;

    String heapAfterGc() throws IOException, InterruptedException;
}
