package dev.torchjob.operator.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * A stored job whose values the Java types cannot hold is read all the same (the informer reads
 * every job through this), with the field that could not be read named; nothing else is lost.
 */
class UnreadableTest {
    /** The client's serialization, as the operator configures it (UnreadableJobsMapper). */
    static final KubernetesSerialization INFORMER = new KubernetesSerialization(
            new com.fasterxml.jackson.databind.ObjectMapper().registerModule(Unreadable.module()), true);

    static PyTorchTrainingJob read(String specAndStatus) {
        return INFORMER.unmarshal("""
                {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "PyTorchTrainingJob",
                 "metadata": {"name": "j", "namespace": "team", "labels": {"team": "vision"}},
                 %s}
                """.formatted(specAndStatus), PyTorchTrainingJob.class);
    }

    @Test
    void aValueOfTheWrongTypeNamesItsFieldAndTheRestOfTheJobIsRead() {
        PyTorchTrainingJob job = read("""
                "spec": {"runPolicy": {"backoffLimit": "three"}, "replicaSpecs": [{"type": "worker", "template": {}}]},
                "status": {"phase": "Running", "backoffCount": 2}
                """);
        assertTrue(job.getSpec().unreadable.startsWith("spec.runPolicy.backoffLimit cannot be read: "), job.getSpec().unreadable);
        assertTrue(job.getSpec().unreadable.contains("\"three\""), job.getSpec().unreadable);
        assertEquals("vision", job.getMetadata().getLabels().get("team"));
        assertEquals(JobPhase.Running, job.getStatus().phase);
        assertEquals(2, job.getStatus().backoffCount);
        assertNull(job.getStatus().unreadable);
    }

    @Test
    void aFieldInsideAListIsNamedWithItsIndex() {
        PyTorchTrainingJob job = read("""
                "spec": {"replicaSpecs": [{"type": "master"}, {"type": "worker", "restartPolicy": "Sometimes"}]}
                """);
        assertTrue(job.getSpec().unreadable.startsWith("spec.replicaSpecs[1].restartPolicy cannot be read: "), job.getSpec().unreadable);
        assertTrue(job.getSpec().replicaSpecs.isEmpty(), "nothing of an unreadable spec is acted on");
    }

    @Test
    void anUnreadableStatusIsMarkedNotDropped() {
        PyTorchTrainingJob job = read("""
                "spec": {"replicaSpecs": [{"type": "worker"}]},
                "status": {"phase": "Running", "backoffCount": {"not": "a number"}}
                """);
        assertTrue(job.getStatus().unreadable.startsWith("status.backoffCount cannot be read: "), job.getStatus().unreadable);
        assertNull(job.getSpec().unreadable);
        assertEquals("worker", job.getSpec().replicaSpecs.get(0).type);
    }

    @Test
    void numbersBeyondJavasIntSaturateInsteadOfFailing() {
        PyTorchTrainingJob job = read("""
                "spec": {"replicaSpecs": [{"type": "worker", "replicas": 99999999999999999999999}]}
                """);
        assertNull(job.getSpec().unreadable);
        assertEquals(Integer.MAX_VALUE, job.getSpec().replicaSpecs.get(0).replicas);
    }

    @Test
    void aCopyReadsTheSameAndWritesWhatWasStored() {
        PyTorchTrainingJob job = read("""
                "spec": {"runPolicy": {"backoffLimit": "three"}}
                """);
        // JOSDK hands the reconciler a copy made through JSON: the problem must survive it.
        PyTorchTrainingJob copy = INFORMER.clone(job);
        assertEquals(job.getSpec().unreadable, copy.getSpec().unreadable);
        String written = INFORMER.asJson(copy);
        assertTrue(written.contains("\"backoffLimit\":\"three\"") && !written.contains("unreadable"), written);
    }

    @Test
    void aReadablePartIsWrittenAsUsual() {
        PyTorchTrainingJob job = read("""
                "spec": {"replicaSpecs": [{"type": "worker"}]}, "status": {"phase": "Running"}
                """);
        assertEquals(job.getSpec().replicaSpecs.get(0).type, INFORMER.clone(job).getSpec().replicaSpecs.get(0).type);
        assertTrue(INFORMER.asJson(job).contains("\"phase\":\"Running\""));
    }
}
