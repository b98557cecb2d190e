package dev.torchjob.operator.kubeflow;

import java.util.Optional;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;

/**
 * What a pass knows of a job's gang scheduling: the operator's gang scheduler, if one is set, whether
 * its PodGroup API is installed, and the job's PodGroup as observed.
 */
public record GangObservation(Optional<GangScheduler> scheduler, boolean apiInstalled, Optional<GenericKubernetesResource> podGroup) {
    public static final GangObservation NONE = new GangObservation(Optional.empty(), false, Optional.empty());
}
