package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;

/** Edits of a job under way: an edit the operator must refuse leaves the job running on the spec it had. */
class SpecEditsTest {

    @Test
    void anEditThatEmptiesTheContainersIsRefusedAndTheJobGoesOnWithItsLastValidSpec() {
        InMemoryCluster cluster = FailureScenariosTest.running("{backoffLimit: 3}", "OnFailure");
        assertEquals(List.of("master", "worker"), ((List<?>) cluster.job.getStatus().lastValidSpec.get("replicaSpecs")).stream()
                .map(g -> ((Map<?, ?>) g).get("type")).toList(), "the spec in force is in the status");
        cluster.job.getSpec().replicaSpecs.get(1).template = Map.of("spec", Map.of("containers", List.of()));

        Plan<PyTorchTrainingJobStatus> refused = cluster.reconcile();
        assertEquals(JobPhase.Running, refused.status().phase, "the job goes on");
        assertTrue(refused.podsToDelete().isEmpty() && refused.podsToCreate().isEmpty());
        JobCondition rejected = FailureScenariosTest.condition(cluster, JobCondition.SPEC_REJECTED);
        assertTrue(rejected.isTrue() && rejected.message.startsWith("spec.replicaSpecs[1].template.spec.containers must list"),
                rejected.message);
        assertEquals(1, refused.events().stream().filter(e -> e.reason().equals("SpecRejected")).count());
        assertTrue(cluster.reconcile().events().isEmpty(), "said once");

        // A replica failing now is restarted from the spec in force.
        String oldUid = cluster.pod("f-worker-1").getMetadata().getUid();
        cluster.exit("f-worker-1", 1);
        cluster.settle();
        assertNotEquals(oldUid, cluster.pod("f-worker-1").getMetadata().getUid());
        assertEquals("pytorch", cluster.pod("f-worker-1").getSpec().getContainers().get(0).getName());
        assertEquals(1, cluster.job.getStatus().backoffCount);

        // Fixing the edit clears the condition, and the fixed spec is the one in force.
        cluster.job.getSpec().replicaSpecs.get(1).template = Map.of("spec", Map.of("containers",
                List.of(Map.of("name", "pytorch", "image", "torch:2"))));
        cluster.settle();
        assertFalse(FailureScenariosTest.condition(cluster, JobCondition.SPEC_REJECTED).isTrue());
        assertEquals("SpecAccepted", FailureScenariosTest.condition(cluster, JobCondition.SPEC_REJECTED).reason);
        assertTrue(cluster.job.getStatus().lastValidSpec.toString().contains("torch:2"));
        assertFalse(cluster.reconcile().statusChanged(), "an unchanged spec is no status write");
    }

    @Test
    void aNewJobWithAnInvalidSpecStillFailsInvalidSpec() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: bad}
                spec:
                  replicaSpecs:
                  - {type: worker, template: {spec: {containers: []}}}
                """);
        cluster.settle();
        assertEquals(JobPhase.Failed, cluster.job.getStatus().phase);
        assertEquals("InvalidSpec", FailureScenariosTest.condition(cluster, JobCondition.FAILED).reason);
        assertNull(cluster.job.getStatus().lastValidSpec);
    }

    @Test
    void aFinishedJobKeepsNoSpecCopy() {
        InMemoryCluster cluster = FailureScenariosTest.running("{backoffLimit: 3}", "OnFailure");
        cluster.exit("f-master-0", 0);
        cluster.settle();
        assertEquals(JobPhase.Succeeded, cluster.job.getStatus().phase);
        assertNull(cluster.job.getStatus().lastValidSpec);
    }
}
