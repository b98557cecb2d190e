package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;

/** An event's name says which fact of which job it reports, and is a name the API server takes. */
class JobEventRecorderTest {
    static PyTorchTrainingJob job(String name, String uid) {
        PyTorchTrainingJob job = new PyTorchTrainingJob();
        job.setMetadata(new ObjectMetaBuilder().withName(name).withNamespace("team").withUid(uid).build());
        return job;
    }

    @Test
    void theSameFactOfTheSameJobHasTheSameNameAndAnyOtherAnother() {
        String name = JobEventRecorder.name(job("j", "uid-1"), "from state\nReplicaRestarted\npod-uid");
        assertTrue(name.matches("j\\.[0-9a-f]{16}"), name);
        assertEquals(name, JobEventRecorder.name(job("j", "uid-1"), "from state\nReplicaRestarted\npod-uid"));
        assertNotEquals(name, JobEventRecorder.name(job("j", "uid-1"), "from state\nReplicaRestarted\nother-pod-uid"));
        assertNotEquals(name, JobEventRecorder.name(job("j", "uid-2"), "from state\nReplicaRestarted\npod-uid"),
                "a job made anew under the same name says its facts anew");
    }

    @Test
    void aLongJobNameIsCutToAValidEventName() {
        String longName = "a".repeat(235) + "." + "b".repeat(17); // cut right after the dot
        String name = JobEventRecorder.name(job(longName, "uid-1"), "fact");
        assertTrue(name.length() <= 253, name.length() + " characters");
        assertTrue(name.matches("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"), "a DNS subdomain: " + name);
    }
}
