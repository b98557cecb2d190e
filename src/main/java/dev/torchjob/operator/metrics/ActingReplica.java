package dev.torchjob.operator.metrics;

/**
 * Whether this process is the replica that acts on jobs: it leads, or runs without leader election.
 * Every replica watches the jobs (a replica that takes over starts with its cache warm), so what the
 * cluster does to a job reaches all of them; only the acting one counts it, and a sum over replicas
 * counts it once.
 */
@FunctionalInterface
public interface ActingReplica {
    boolean acting();
}
