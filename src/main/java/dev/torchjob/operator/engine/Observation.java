package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * Everything a pass may know: the job (in its API's shape), what exists of it in the cluster, the
 * time, and the pods this operator created whose UIDs the job's status may not hold yet (by name):
 * a pod deleted before any status named it is still known to have existed; where the job stands
 * with its queue; for pods stuck creating their containers, their Warning events; and the pods that
 * left the cluster since, as they were last seen.
 */
public record Observation<J>(J job, Collection<Pod> pods, boolean serviceExists, PodGroupState podGroup, Instant now,
        Map<String, String> createdPods, QueueAdmission queue,
        /** Warning events of the pods whose status does not say why they are not starting, by pod UID: only pods looked up. */
        Map<String, List<StartBlocker.PodWarning>> podWarnings,
        /** The gang scheduler that places the job's pods, if one does, and its hold on them. */
        Gang gang,
        /**
         * The job's pods removed from the cluster lately, by name, as last seen: a rank stopped and removed
         * between two passes (an eviction whose pod ends at once) still says who stopped it and when.
         */
        Map<String, Pod> gonePods) {

    public Observation(J job, Collection<Pod> pods, boolean serviceExists, PodGroupState podGroup, Instant now,
            Map<String, String> createdPods, QueueAdmission queue, Map<String, List<StartBlocker.PodWarning>> podWarnings) {
        this(job, pods, serviceExists, podGroup, now, createdPods, queue, podWarnings, Gang.NONE, Map.of());
    }

    public Observation(J job, Collection<Pod> pods, boolean serviceExists, PodGroupState podGroup, Instant now,
            Map<String, String> createdPods, QueueAdmission queue) {
        this(job, pods, serviceExists, podGroup, now, createdPods, queue, Map.of());
    }

    public Observation(J job, Collection<Pod> pods, boolean serviceExists, PodGroupState podGroup, Instant now) {
        this(job, pods, serviceExists, podGroup, now, Map.of());
    }

    public Observation(J job, Collection<Pod> pods, boolean serviceExists, PodGroupState podGroup, Instant now,
            Map<String, String> createdPods) {
        this(job, pods, serviceExists, podGroup, now, createdPods, QueueAdmission.NOT_QUEUED);
    }

    /** The same observation, with the job's pods that were removed lately (see {@link #gonePods()}). */
    public Observation<J> withGonePods(Map<String, Pod> gone) {
        return new Observation<>(job, pods, serviceExists, podGroup, now, createdPods, queue, podWarnings, gang, gone);
    }

    /** The gang scheduler's PodGroup of the job (the T9k scheduler's; Kubeflow's kind with a gang scheduler only says API_MISSING). */
    public enum PodGroupState {
        /** The job does not use a gang scheduler. */
        NOT_NEEDED,
        /** The PodGroup API is not installed in the cluster: the job cannot be admitted. */
        API_MISSING,
        MISSING,
        EXISTS
    }
}
