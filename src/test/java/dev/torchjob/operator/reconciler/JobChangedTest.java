package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/** Which updates of a job start a pass. */
class JobChangedTest {
    static final KubernetesSerialization JSON = new KubernetesSerialization();
    final JobChanged filter = new JobChanged();

    static PyTorchTrainingJob job() {
        PyTorchTrainingJob job = new PyTorchTrainingJob();
        job.getMetadata().setName("j");
        job.getMetadata().setGeneration(3L);
        job.getMetadata().setLabels(Map.of("kueue.x-k8s.io/queue-name", "q"));
        job.getMetadata().setResourceVersion("10");
        return job;
    }

    static PyTorchTrainingJob changed(PyTorchTrainingJob job, java.util.function.Consumer<PyTorchTrainingJob> change) {
        PyTorchTrainingJob copy = JSON.clone(job);
        copy.getMetadata().setResourceVersion("11");
        change.accept(copy);
        return copy;
    }

    @Test
    void aStatusWriteAloneStartsNoPass() {
        PyTorchTrainingJob before = job();
        assertFalse(filter.accept(changed(before, j -> j.setStatus(new PyTorchTrainingJobStatus())), before));
    }

    @Test
    void aNewSpecNewLabelsNewAnnotationsOrTheDeletionStartAPass() {
        PyTorchTrainingJob before = job();
        assertTrue(filter.accept(changed(before, j -> j.getMetadata().setGeneration(4L)), before), "the spec");
        assertTrue(filter.accept(changed(before, j -> j.getMetadata().setLabels(Map.of("kueue.x-k8s.io/queue-name", "q",
                "kueue.x-k8s.io/max-exec-time-seconds", "600"))), before), "a Kueue label");
        assertTrue(filter.accept(changed(before, j -> j.getMetadata().setAnnotations(Map.of("torchjob.dev/restart-scope", "replica"))),
                before), "an annotation");
        assertTrue(filter.accept(changed(before, j -> j.getMetadata().setDeletionTimestamp("2026-11-30T12:00:00Z")), before), "the deletion");
        assertTrue(filter.accept(changed(before, j -> j.getMetadata().setGeneration(null)), before), "a server that keeps no generation");
    }
}
