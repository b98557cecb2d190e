package dev.torchjob.operator.cluster.kwok;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.cluster.OnTheSharedOperator;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.t9k.HostileJobs.HostileJob;
import dev.torchjob.operator.t9k.HostileJobs;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.utils.Serialization;

/**
 * One namespace's worth of hostile and careless jobs against the real API server and the operator
 * jar: the operator stays healthy, a canary job keeps running, every job the API server admits
 * ends in a defined state, and a job submitted behind a hundred failing ones still gets its pods.
 */
class HostileJobsIT extends OnTheSharedOperator {
    static final int HOSTILE_JOBS = 120;
    static final int FAILING_JOBS = 300;
    static final int ROUNDS = 3;
    static final int WARM_UP_JOBS = 20;
    static final int ODD_JOBS = 100;
    static final int ODD_ROUNDS = 4;
    static final Duration SETTLE = Duration.ofSeconds(120);
    /**
     * A valid job behind a burst that has no pods after this long is starved: the defect these tests guard
     * against left one without pods for 30 s and more. Not a speed goal (that figure is printed, and kept
     * in docs/testing.md): a wide margin over the 0.1-3 s measured, so a cold JIT, a GC or a busy
     * 2-core machine does not fail the build.
     */
    static final Duration STARVED = Duration.ofSeconds(20);
    static OperatorProcess operator;

    @BeforeAll
    static void cluster() {
        operator = install.operator();
    }

    @Test
    void hostileJobsNeverStopTheOperatorAndEachEndsInADefinedState() throws IOException {
        OperatorHarness cluster = install.harness("hostile");
        cluster.submit(canary("canary"));
        cluster.awaitPodNames("canary-worker-0");
        cluster.kubelet.run("canary-worker-0");
        String canaryUid = cluster.pod("canary-worker-0").getMetadata().getUid();

        Map<String, String> outcomes = new TreeMap<>();
        List<String> admitted = new ArrayList<>();
        for (int seed = 0; seed < HOSTILE_JOBS; seed++) {
            HostileJob hostile = HostileJobs.generate(seed);
            GenericKubernetesResource job = Serialization.unmarshal(hostile.json(), GenericKubernetesResource.class);
            try {
                admin.genericKubernetesResources(ApiServerContractIT.JOBS).inNamespace(cluster.namespace).resource(job).create();
                admitted.add(job.getMetadata().getName());
            } catch (KubernetesClientException e) {
                outcomes.put(hostile.seed() + " " + job.getMetadata().getName(), "refused by the API server (" + e.getCode() + ")");
            }
        }

        // Every admitted job reaches a defined state; no job is left without a status.
        Map<String, String> states = new HashMap<>();
        await().atMost(SETTLE).pollInterval(Duration.ofSeconds(1)).until(() -> {
            List<Pod> pods = cluster.pods();
            for (String name : admitted) {
                states.put(name, stateOf(cluster.job(name), pods));
            }
            return states.values().stream().noneMatch(s -> s.startsWith("undefined"));
        });
        admitted.forEach(name -> outcomes.put(name, states.get(name)));
        Map<String, Long> counts = outcomes.values().stream().collect(Collectors.groupingBy(HostileJobsIT::kind, TreeMap::new,
                Collectors.counting()));
        System.out.printf("outcomes of %d hostile jobs against the API server: %s%n", HOSTILE_JOBS, counts);
        assertTrue(counts.keySet().stream().anyMatch(k -> k.startsWith("refused by the API server")), counts.toString());
        assertTrue(counts.containsKey("InvalidSpec naming the field"), counts.toString());
        assertTrue(counts.keySet().stream().anyMatch(k -> k.startsWith("running")), counts.toString());

        // The operator never stopped, the canary ran throughout, and a job submitted now runs.
        assertTrue(operator.healthy(), "the operator is healthy: " + operator.tail());
        String log = Files.readString(operator.log);
        assertFalse(log.contains("OutOfMemoryError") || log.contains("will stop") || log.contains("Exhausted retries"), operator.tail());
        assertEquals(canaryUid, cluster.pod("canary-worker-0").getMetadata().getUid(), "the canary's pod was never replaced");
        assertEquals(JobPhase.Running, cluster.job("canary").getStatus().phase);
        cluster.submit(canary("after"));
        cluster.awaitJob("after", j -> j.getStatus() != null && j.getStatus().phase == JobPhase.Running);
        admin.namespaces().withName(cluster.namespace).delete();
    }

    /** The outcome classes that are defined; anything else is "undefined" and keeps the test waiting. */
    static String stateOf(PyTorchTrainingJob job, List<Pod> pods) {
        if (job == null || job.getStatus() == null || job.getStatus().phase == null) {
            return "undefined: no status";
        }
        JobCondition failed = find(job, JobCondition.FAILED);
        JobCondition error = find(job, JobCondition.RECONCILE_ERROR);
        if (job.getStatus().phase == JobPhase.Failed) {
            if (failed != null && "InvalidSpec".equals(failed.reason) && failed.message.matches("(?s).*(spec\\.|metadata\\.name|pod name).*")) {
                return "InvalidSpec naming the field";
            }
            return "undefined: failed " + (failed == null ? "without a condition" : failed.reason + ": " + failed.message);
        }
        if (error != null && error.isTrue()) {
            return "pods refused by the API server, said in ReconcileError (" + error.reason + ")";
        }
        if (job.getStatus().phase == JobPhase.Paused) {
            return "paused";
        }
        long replicas = job.getStatus().tasks.stream().mapToLong(t -> t.replicas.size()).sum();
        long running = pods.stream().filter(p -> job.getMetadata().getName().equals(p.getMetadata().getLabels().get("tensorstack.dev/owner-name")))
                .filter(p -> p.getStatus() != null && "Running".equals(p.getStatus().getPhase())).count();
        return replicas > 0 && running == replicas ? "running (" + job.getStatus().phase + ")" : "undefined: " + running + " of "
                + replicas + " pods running";
    }

    static String kind(String outcome) {
        return outcome.replaceAll(" \\(\\d+\\)$", "");
    }

    static JobCondition find(PyTorchTrainingJob job, String type) {
        return job.getStatus().conditions.stream().filter(c -> type.equals(c.type)).findFirst().orElse(null);
    }

    /**
     * Hundreds of jobs whose pods the API server refuses (422, a container name the open template
     * admits), submitted at once: each shows the refusal once (condition, one event, one log line), is
     * retried with back-off and never given up, and a valid job submitted behind them is never starved:
     * it gets its pods in every round while they keep retrying ({@link #STARVED}).
     */
    @Test
    void aJobBehindHundredsOfRefusedOnesGetsItsPodsWithinSecondsEveryRound() throws Exception {
        OperatorHarness cluster = install.harness("fairness");
        // The first jobs of an operator pay for its JIT warm-up, on the valid path and on the refused one.
        timeToPods(cluster, "warm-up");
        for (int i = 0; i < WARM_UP_JOBS; i++) {
            cluster.submit(OperatorHarness.job("failing-" + (FAILING_JOBS + i), "OnFailure", "{backoffLimit: 3}").replace("name: pytorch", "name: pytörch"));
        }
        await().atMost(SETTLE).until(() -> cluster.events().stream().filter(e -> "FailedCreatePod".equals(e.getReason())).count() == WARM_UP_JOBS);
        Duration idle = timeToPods(cluster, "idle");
        long logLinesBefore = Files.readAllLines(operator.log).size();
        long burstStart = System.nanoTime();
        java.util.concurrent.ExecutorService submitters = java.util.concurrent.Executors.newFixedThreadPool(16);
        try {
            List<java.util.concurrent.Future<?>> submitted = new ArrayList<>();
            for (int i = 0; i < FAILING_JOBS; i++) {
                String name = "failing-" + i;
                submitted.add(submitters.submit(() -> cluster.submit(OperatorHarness.job(name, "OnFailure", "{backoffLimit: 3}")
                        .replace("name: pytorch", "name: pytörch"))));
            }
            for (java.util.concurrent.Future<?> f : submitted) {
                f.get();
            }
        } finally {
            submitters.shutdown();
        }
        long burst = Duration.ofNanos(System.nanoTime() - burstStart).toMillis();
        List<Long> behind = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            behind.add(timeToPods(cluster, "behind-" + round).toMillis());
            Thread.sleep(4000); // the refused jobs keep retrying meanwhile
        }
        System.out.printf("time to pods of a 3-replica job: idle operator %d ms, behind %d refused jobs (submitted in %d ms) %s ms%n",
                idle.toMillis(), FAILING_JOBS, burst, behind);
        // Right behind the burst, the refused jobs' first passes are still queued ahead of it (measured 1.8-2.9 s on the
        // JVM as it ships, on this machine's two cores shared with the API server, etcd and this test); once they are
        // retrying, about 0.1 s.
        assertTrue(behind.stream().allMatch(ms -> ms < STARVED.toMillis()), "a valid job is not starved, every round: " + behind);

        await().atMost(SETTLE).pollInterval(Duration.ofSeconds(1)).until(() -> admin.resources(PyTorchTrainingJob.class)
                .inNamespace(cluster.namespace).list().getItems().stream().filter(j -> j.getMetadata().getName().startsWith("failing-"))
                .allMatch(j -> j.getStatus() != null && find(j, JobCondition.RECONCILE_ERROR) != null && find(j, JobCondition.RECONCILE_ERROR).isTrue()));
        JobCondition error = find(cluster.job("failing-7"), JobCondition.RECONCILE_ERROR);
        assertEquals("FailedCreatePod", error.reason);
        assertTrue(error.message.startsWith("pod failing-7-master-0: ") && error.message.contains("spec.containers[0].name"), error.message);
        Map<String, Long> eventsPerJob = cluster.events().stream().filter(e -> "FailedCreatePod".equals(e.getReason()))
                .collect(Collectors.groupingBy(e -> e.getInvolvedObject().getName(), Collectors.counting()));
        assertEquals(FAILING_JOBS + WARM_UP_JOBS, eventsPerJob.size(), "every failing job says why");
        assertTrue(eventsPerJob.values().stream().allMatch(n -> n == 1), "one event per job: " + eventsPerJob);
        assertTrue(cluster.pods().stream().noneMatch(p -> p.getMetadata().getName().startsWith("failing-")));
        // The log: one line per refused job, however often it was retried; no stack trace per retry.
        List<String> log = Files.readAllLines(operator.log);
        List<String> since = log.subList((int) Math.min(logLinesBefore, log.size()), log.size());
        long aboutFailing = since.stream().filter(l -> l.contains(cluster.namespace + "/failing-")).count();
        assertTrue(aboutFailing <= FAILING_JOBS, aboutFailing + " log lines about " + FAILING_JOBS + " refused jobs");
        assertTrue(since.stream().noneMatch(l -> l.contains("Uncaught error") || l.startsWith("\tat ")), "no stack traces");
        admin.namespaces().withName(cluster.namespace).delete();
    }

    /**
     * Bursts of odd jobs the API server admits (unknown replica types in debug mode, swapped groups, ports
     * at the edge, unicode in env values, duplicate container names, env names pods refuse...), each
     * submitted at once, and a valid job right behind each burst: never starved, in every round ({@link #STARVED}).
     */
    @Test
    void aJobBehindABurstOfOddSpecsGetsItsPodsWithinSecondsEveryRound() throws Exception {
        OperatorHarness cluster = install.harness("odd-burst");
        timeToPods(cluster, "warm-up");
        List<Long> behind = new ArrayList<>();
        List<Integer> admittedPerRound = new ArrayList<>();
        java.util.concurrent.ExecutorService submitters = java.util.concurrent.Executors.newFixedThreadPool(16);
        try {
            for (int round = 0; round < ODD_ROUNDS; round++) {
                List<java.util.concurrent.Future<Boolean>> submitted = new ArrayList<>();
                for (int i = 0; i < ODD_JOBS; i++) {
                    long seed = 10_000L * (round + 1) + i;
                    submitted.add(submitters.submit(() -> {
                        HostileJob hostile = HostileJobs.generate(seed);
                        GenericKubernetesResource job = Serialization.unmarshal(hostile.json(), GenericKubernetesResource.class);
                        try {
                            admin.genericKubernetesResources(ApiServerContractIT.JOBS).inNamespace(cluster.namespace).resource(job).create();
                            return true;
                        } catch (KubernetesClientException e) {
                            return false;
                        }
                    }));
                }
                int admitted = 0;
                for (java.util.concurrent.Future<Boolean> f : submitted) {
                    admitted += f.get() ? 1 : 0;
                }
                admittedPerRound.add(admitted);
                behind.add(timeToPods(cluster, "valid-" + round).toMillis());
            }
        } finally {
            submitters.shutdown();
        }
        System.out.printf("time to pods of a 3-replica job behind %d odd jobs (admitted per round %s): %s ms%n", ODD_JOBS,
                admittedPerRound, behind);
        assertTrue(admittedPerRound.stream().allMatch(n -> n >= ODD_JOBS / 3), "a third or more of the odd jobs are admitted: " + admittedPerRound);
        assertTrue(behind.stream().allMatch(ms -> ms < STARVED.toMillis()), "a valid job is not starved, every round: " + behind);
        assertTrue(operator.healthy(), "the operator is healthy: " + operator.tail());
        admin.namespaces().withName(cluster.namespace).delete();
    }

    private static Duration timeToPods(OperatorHarness cluster, String name) {
        long start = System.nanoTime();
        cluster.submit(OperatorHarness.job(name, "OnFailure", "{backoffLimit: 3}"));
        await().atMost(SETTLE).pollInterval(Duration.ofMillis(50)).until(() -> cluster.pods().stream()
                .filter(p -> p.getMetadata().getName().startsWith(name + "-")).count() == 3);
        return Duration.ofNanos(System.nanoTime() - start);
    }

    static String canary(String name) {
        return ApiServerContractIT.job(name, "runPolicy: {backoffLimit: 3}");
    }
}
