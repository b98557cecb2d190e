package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * What the steps of one pass read (the job, the state its status recorded, its pods and those gone lately, the time) and what
 * they share as they decide (the restart ledger, the replica view, the output). Built once by
 * {@link Engine} for a pass; never outlives it.
 */
record PassContext(TrainingJob job, JobState previous, Map<String, Pod> pods, Map<String, String> createdPods,
        Map<String, Pod> gonePods, RestartLedger ledger, ReplicaView view, RestartBackoff backoff, Instant now, PassOutput out) {
}
