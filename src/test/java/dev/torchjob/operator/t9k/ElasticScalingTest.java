package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.Plan;

/** Spec §8 in the planner: expectedReplicas pods, scale up with the next indices, down from the highest. */
class ElasticScalingTest {

    static InMemoryCluster elastic(int expected) {
        return new InMemoryCluster("""
                metadata: {name: el}
                spec:
                  torchrunConfig: {enabled: true}
                  elastic: {enabled: true, minReplicas: 1, maxReplicas: 8, expectedReplicas: %d}
                  replicaSpecs:
                  - type: node
                    template: {spec: {containers: [{name: python, image: torch, command: [python], args: [train.py]}]}}
                """.formatted(expected));
    }

    static void expect(InMemoryCluster cluster, int replicas) {
        cluster.job.getSpec().elastic.expectedReplicas = replicas;
        cluster.settle();
    }

    @Test
    void scalingCreatesAndDeletesTheHighestIndicesWithoutCountingRestarts() {
        InMemoryCluster cluster = elastic(3);
        cluster.settle();
        cluster.runAll();
        cluster.settle();
        assertEquals(3, cluster.job.getStatus().elastic.currentReplicas);
        String firstUid = cluster.pod("el-node-0").getMetadata().getUid();

        expect(cluster, 5);
        assertEquals(List.of("el-node-0", "el-node-1", "el-node-2", "el-node-3", "el-node-4"), List.copyOf(cluster.pods.keySet()));
        assertEquals(5, cluster.job.getStatus().elastic.currentReplicas);

        expect(cluster, 2);
        assertEquals(List.of("el-node-0", "el-node-1"), List.copyOf(cluster.pods.keySet()));
        assertEquals(firstUid, cluster.pod("el-node-0").getMetadata().getUid(), "index 0 is never removed");
        assertEquals(2, cluster.job.getStatus().elastic.currentReplicas);
        assertEquals(0, cluster.job.getStatus().backoffCount, "scaling is not a restart");
        assertEquals(2, cluster.job.getStatus().tasks.get(0).replicas.size());
        assertTrue(cluster.plans.stream().flatMap(p -> p.podsToDelete().stream())
                .allMatch(d -> d.reason() == Plan.DeletionReason.SCALE_DOWN));
    }
}
