package dev.torchjob.operator.engine;

import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.engine.TrainingJob.SuccessRule;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Whether a job has succeeded by its success rule, and what made it: its master's pod succeeded (T9k,
 * Kubeflow with a master), any replica's (elastic), or all of them (Kubeflow's workers alone). A success
 * already counted as a restart (a replica under {@code Always}) makes none.
 */
final class JobSuccess {
    private JobSuccess() {
    }

    /** What made the job succeed, in words; empty while it has not. */
    static Optional<String> of(SuccessRule rule, JobTopology topology, Map<String, Pod> pods, RestartLedger ledger) {
        return switch (rule) {
            case MASTER -> succeeded(topology.master(), pods, ledger).map(pod -> "master pod " + pod + " succeeded");
            case ANY_REPLICA -> topology.slots().stream().map(slot -> succeeded(slot, pods, ledger)).flatMap(Optional::stream)
                    .findFirst().map(pod -> "pod " + pod + " succeeded");
            case ALL_REPLICAS -> topology.slots().stream().allMatch(slot -> succeeded(slot, pods, ledger).isPresent())
                    ? Optional.of("all " + topology.worldSize() + " replicas succeeded") : Optional.empty();
        };
    }

    /** The replica's pod, if it succeeded (and that success is not a restart already counted). */
    private static Optional<String> succeeded(ReplicaSlot slot, Map<String, Pod> pods, RestartLedger ledger) {
        Pod pod = pods.get(slot.podName());
        return pod != null && "Succeeded".equals(Pods.phase(pod)) && !ledger.isCounted(pod) ? Optional.of(slot.podName())
                : Optional.empty();
    }
}
