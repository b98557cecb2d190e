package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.ElasticConfig;
import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.ReplicaSpec;
import dev.torchjob.operator.api.RestartPolicy;
import dev.torchjob.operator.api.RunMode;
import dev.torchjob.operator.api.RunPolicy;
import dev.torchjob.operator.api.TorchrunConfig;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.RestartBackoff;

/**
 * Random specs, random edits between passes and random pod fates: no pass may throw, and every
 * status is consistent (a phase; a budget never overspent; no more replicas than the bound; an
 * InvalidSpec that names the field). Seeded, so a failure is reproducible from its seed.
 */
class PlannerPropertyTest {
    static final int JOBS = 400;
    static final int[] INTEGER_EDGES = {-1, 0, 1, 2, 3, 7, 999, 1000, 1001, Integer.MAX_VALUE, Integer.MIN_VALUE};

    @Test
    void noSpecEditOrPodStateMakesAPassThrow() {
        Map<String, Integer> outcomes = new TreeMap<>();
        for (int seed = 0; seed < JOBS; seed++) {
            Random random = new Random(seed);
            InMemoryCluster cluster = new InMemoryCluster("""
                    metadata: {name: p}
                    spec:
                      replicaSpecs:
                      - {type: master, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                      - {type: worker, replicas: 2, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                    """);
            if (random.nextBoolean()) {
                mutate(cluster.job.getSpec(), random);
            }
            cluster.backoff = random.nextBoolean() ? RestartBackoff.NONE
                    : new RestartBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofMinutes(10));
            try {
                for (int pass = 0; pass < 12; pass++) {
                    Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
                    assertConsistent(plan.status(), cluster, seed);
                    actOnPods(cluster, random);
                    cluster.now = cluster.now.plusSeconds(random.nextInt(30)); // back-offs and deadlines come due
                    if (random.nextInt(4) == 0) {
                        mutate(cluster.job.getSpec(), random); // an edit while the job runs
                        cluster.job.getMetadata().setGeneration(cluster.job.getMetadata().getGeneration() + 1);
                    }
                }
            } catch (RuntimeException | AssertionError e) {
                fail("seed " + seed + ": " + e, e);
            }
            PyTorchTrainingJobStatus status = cluster.job.getStatus();
            JobCondition failed = Conditions.find(status.conditions, JobCondition.FAILED);
            String outcome = status.phase + (status.phase == JobPhase.Failed && failed != null ? " " + failed.reason : "");
            outcomes.merge(outcome, 1, Integer::sum);
        }
        System.out.println("outcomes of " + JOBS + " random jobs: " + outcomes);
        assertTrue(outcomes.keySet().stream().anyMatch(o -> o.contains("InvalidSpec")), "the generator makes invalid jobs");
        assertTrue(outcomes.keySet().stream().anyMatch(o -> o.startsWith("Running") || o.startsWith("Succeeded")),
                "the generator makes valid jobs");
    }

    static void assertConsistent(PyTorchTrainingJobStatus status, InMemoryCluster cluster, int seed) {
        assertNotNull(status.phase, "phase");
        assertTrue(status.backoffCount >= 0);
        int replicas = status.tasks.stream().mapToInt(t -> t.replicas.size()).sum();
        assertTrue(replicas <= JobTopology.MAX_REPLICAS, replicas + " replicas in the status");
        assertTrue(cluster.pods.size() <= JobTopology.MAX_REPLICAS);
        JobCondition failed = Conditions.find(status.conditions, JobCondition.FAILED);
        if (status.phase == JobPhase.Failed && failed != null && "InvalidSpec".equals(failed.reason)) {
            assertTrue(failed.message.contains("spec.") || failed.message.contains("metadata.name")
                    || failed.message.startsWith("pod name"), "names the field: " + failed.message);
        }
        if (status.phase == JobPhase.Failed && failed != null && "BackoffLimitExceeded".equals(failed.reason)) {
            assertTrue(failed.message.contains("pod p-"), failed.message);
        }
    }

    /** One random change to the spec, of the kinds users make and the API server admits (the template is open). */
    static void mutate(PyTorchTrainingJobSpec spec, Random random) {
        List<ReplicaSpec> groups = spec.replicaSpecs;
        ReplicaSpec group = groups.isEmpty() ? null : groups.get(random.nextInt(groups.size()));
        switch (random.nextInt(14)) {
            case 0 -> { if (group != null) { group.replicas = edge(random); } }
            case 1 -> { if (group != null) { group.type = pick(random, "master", "worker", "ps", "Worker", "wörker", "a".repeat(70), ""); } }
            case 2 -> { if (group != null) { group.template = template(random); } }
            case 3 -> { if (group != null) { group.restartPolicy = RestartPolicy.values()[random.nextInt(4)]; } }
            case 4 -> {
                spec.runPolicy = spec.runPolicy == null ? new RunPolicy() : spec.runPolicy;
                spec.runPolicy.backoffLimit = edge(random);
            }
            case 5 -> {
                spec.runPolicy = spec.runPolicy == null ? new RunPolicy() : spec.runPolicy;
                spec.runPolicy.activeDeadlineSeconds = (long) pick(random, -5, 0, 1, 60, Integer.MAX_VALUE);
            }
            case 6 -> groups.add(copyOf(groups.isEmpty() ? null : groups.get(0), random));
            case 7 -> { if (!groups.isEmpty()) { groups.remove(random.nextInt(groups.size())); } }
            case 8 -> {
                spec.elastic = new ElasticConfig();
                spec.elastic.enabled = random.nextBoolean();
                spec.elastic.minReplicas = edge(random);
                spec.elastic.maxReplicas = edge(random);
                spec.elastic.expectedReplicas = random.nextBoolean() ? null : edge(random);
            }
            case 9 -> {
                spec.torchrunConfig = new TorchrunConfig();
                spec.torchrunConfig.enabled = random.nextBoolean();
                spec.torchrunConfig.maxRestarts = edge(random);
                spec.torchrunConfig.procPerNode = pick(random, "1", "8", "gpu", "0", "-1", "x".repeat(1000));
            }
            case 10 -> {
                spec.runMode = new RunMode();
                spec.runMode.pause = new RunMode.Pause();
                spec.runMode.pause.enabled = random.nextBoolean();
            }
            case 11 -> {
                spec.runMode = new RunMode();
                spec.runMode.debug = new RunMode.Debug();
                spec.runMode.debug.enabled = random.nextBoolean();
            }
            case 12 -> spec.replicaSpecs = new ArrayList<>();
            default -> {
                if (group != null) {
                    group.replicas = random.nextInt(5);
                }
            }
        }
    }

    static ReplicaSpec copyOf(ReplicaSpec source, Random random) {
        ReplicaSpec copy = new ReplicaSpec();
        copy.type = pick(random, "worker", "ps", "node", "master");
        copy.replicas = random.nextInt(4);
        copy.template = source == null ? template(random) : source.template;
        return copy;
    }

    /** Templates as a careless user writes them: fine, empty, wrong types, huge values. */
    static Map<String, Object> template(Random random) {
        Map<String, Object> container = new LinkedHashMap<>();
        container.put("name", pick(random, "pytorch", "python", "", "pytörch"));
        container.put("image", pick(random, "torch", "", "x".repeat(100_000)));
        if (random.nextBoolean()) {
            container.put("ports", List.of(Map.of("name", "pytorchjob-port", "containerPort", pick(random, 23456, -1, Long.MAX_VALUE, "x"))));
        }
        Map<String, Object> podSpec = new LinkedHashMap<>();
        podSpec.put("containers", switch (random.nextInt(5)) {
            case 0 -> List.of();
            case 1 -> "not a list";
            case 2 -> List.of("not an object");
            default -> List.of(container);
        });
        Map<String, Object> template = new LinkedHashMap<>();
        if (random.nextInt(6) != 0) {
            template.put("spec", random.nextInt(8) == 0 ? 42 : podSpec);
        }
        return template;
    }

    static int edge(Random random) {
        return INTEGER_EDGES[random.nextInt(INTEGER_EDGES.length)];
    }

    @SafeVarargs
    static <T> T pick(Random random, T... values) {
        return values[random.nextInt(values.length)];
    }

    /** The kubelet and the rest of the cluster: pods run, exit with any code, are evicted, vanish. */
    static void actOnPods(InMemoryCluster cluster, Random random) {
        for (String name : new ArrayList<>(cluster.pods.keySet())) {
            switch (random.nextInt(8)) {
                case 0, 1, 2 -> cluster.run(name);
                case 3 -> cluster.exit(name, pick(random, 0, 1, 2, 137, 143, 255));
                case 4 -> cluster.evict(name);
                case 5 -> cluster.vanish(name);
                default -> {
                }
            }
        }
    }
}
