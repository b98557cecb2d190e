package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.List;

/**
 * What the engine knows of a job between passes, in no API's shape: each adapter reads it from its
 * status before a pass and writes the next one back. The restart ledger ({@code backoffCount} and
 * {@code countedRestarts}) and the last pod UID of every replica are what make restarts count
 * exactly once across passes and operator restarts.
 */
public record JobState(
        /** A pass has written a status for this job before. */
        boolean planned,
        /** Null before the first pass. */
        JobPhase phase,
        Instant startTime,
        Instant completionTime,
        int backoffCount,
        List<CountedRestart> countedRestarts,
        List<ReplicaGroupState> replicaGroups,
        /** Replicas that have a pod, for elastic jobs (the scale subresource); null when not reported. */
        Integer elasticReplicas,
        /** The Service and every pod have been created (once true, stays true). */
        boolean initialized,
        /** Every replica has run (once true, stays true while the job is active). */
        boolean running,
        Pause pause,
        /** An admission gate kept the job waiting at the last pass (said once, not at every pass). */
        boolean awaitingAdmission,
        /** The job waited in its queue at the last pass: its admission is said once. */
        boolean queued,
        /** How the job ended; null while it has not. */
        Outcome outcome) {

    public static final JobState NEW = new JobState(false, null, null, null, 0, List.of(), List.of(), null, false, false,
            Pause.NEVER, false, false, null);

    /** How a job ended; the names are the reasons the status and events show. */
    public enum Outcome {
        Succeeded,
        InvalidSpec,
        BackoffLimitExceeded,
        ReplicaFailedPermanently,
        DeadlineExceeded,
        /** The queue's admission could not be applied to the pods (Kueue's FailedToStart). */
        FailedToStart;

        public boolean isFailure() {
            return this != Succeeded;
        }
    }

    /** Where the job stands with pausing. */
    public enum Pause {
        /** Never paused. */
        NEVER,
        /** Paused: every pod is gone. */
        PAUSED,
        /** Paused before, or being paused now: not paused at this moment (resumed pods use the resume settings). */
        NOT_PAUSED,
        /** A pause was asked for after the job had finished, and ignored (said once). */
        IGNORED,
        /** Evicted by its queue after it had started: readmission resumes it as a resumed job. */
        EVICTED
    }

    /**
     * A restart already added to backoffCount, kept until a pod with another UID is seen under that
     * name; {@code restartAt}: the new pod is not created before then (back-off), null for at once.
     */
    public record CountedRestart(String pod, String uid, Instant restartAt) {
    }

    /** The replicas of one group as last seen, and how often the group restarted. */
    public record ReplicaGroupState(String type, int restartCount, List<ReplicaState> replicas) {
    }

    /**
     * One replica: its pod's name and UID (the last one seen, when the pod is gone), phase and
     * containers, how its last pod that failed ended (kept across restarts, with its last output), how
     * many times it failed in a row without running long enough in between (the back-off grows with
     * it), the in-place container restarts of pod {@code uid} already counted against the budget, and
     * why pod {@code uid} cannot start, while it cannot (said once per pod and cause), and how many of its pods in a row
     * their kubelets refused (the wait before the next one grows with it).
     */
    public record ReplicaState(String name, String uid, ReplicaPhase phase, List<ContainerState> containers, String lastFailure,
            int failuresInARow, int restartsInPlace, StartBlocker cannotStart, int refusalsInARow) {
        public ReplicaState(String name, String uid, ReplicaPhase phase, List<ContainerState> containers, String lastFailure,
                int failuresInARow, int restartsInPlace, StartBlocker cannotStart) {
            this(name, uid, phase, containers, lastFailure, failuresInARow, restartsInPlace, cannotStart, 0);
        }

        public ReplicaState(String name, String uid, ReplicaPhase phase, List<ContainerState> containers, String lastFailure,
                int failuresInARow) {
            this(name, uid, phase, containers, lastFailure, failuresInARow, 0, null);
        }

        public ReplicaState(String name, String uid, ReplicaPhase phase, List<ContainerState> containers, String lastFailure,
                int failuresInARow, int restartsInPlace) {
            this(name, uid, phase, containers, lastFailure, failuresInARow, restartsInPlace, null);
        }
    }

    public record ContainerState(String name, String state, Integer exitCode, String reason) {
    }

    public ReplicaState replica(String podName) {
        for (ReplicaGroupState group : replicaGroups) {
            for (ReplicaState replica : group.replicas()) {
                if (podName.equals(replica.name())) {
                    return replica;
                }
            }
        }
        return null;
    }

    public ReplicaGroupState group(String type) {
        return replicaGroups.stream().filter(g -> type.equals(g.type())).findFirst().orElse(null);
    }
}
