package dev.torchjob.operator.planning;

import java.time.Instant;
import java.util.Collection;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import io.fabric8.kubernetes.api.model.Pod;

/** Everything the planner may know: the job, what exists of it in the cluster, and the time. */
public record Observation(PyTorchTrainingJob job, Collection<Pod> pods, boolean serviceExists, PodGroupState podGroup, Instant now) {

    /** The T9k scheduler's PodGroup of the job (spec §10). */
    public enum PodGroupState {
        /** The job does not use the T9k scheduler. */
        NOT_NEEDED,
        /** The PodGroup API (scheduler.tensorstack.dev/v1beta1) is not installed in the cluster. */
        API_MISSING,
        MISSING,
        EXISTS
    }

    public static Observation of(PyTorchTrainingJob job, Collection<Pod> pods, boolean serviceExists, Instant now) {
        boolean scheduled = job.getSpec() != null && job.getSpec().scheduler != null && job.getSpec().scheduler.t9kScheduler != null;
        return new Observation(job, pods, serviceExists, scheduled ? PodGroupState.MISSING : PodGroupState.NOT_NEEDED, now);
    }
}
