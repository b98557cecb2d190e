package dev.torchjob.operator.cluster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.JobPhase;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.testing.KueueStandIn;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * Kueue's Workload protocol on a real API server, with Kueue's own CRDs (their schemas and CEL rules
 * check every Workload and status the operator writes), the operator under its ServiceAccount (so a
 * missing RBAC verb fails), the real garbage collector, and operator restarts while a job is queued,
 * admitted, and being evicted. The test plays Kueue's controllers.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KueueIT {
    static final Duration WAIT = Duration.ofSeconds(60);
    static OperatorInstall install;
    static KubernetesClient admin;

    @BeforeAll
    static void cluster() throws InterruptedException {
        install = OperatorInstall.get();
        admin = install.cluster.admin();
        install.stopSharedOperator(); // each test runs (and restarts) its own
    }

    @AfterAll
    static void backToTheSharedOperator() {
        install.operator();
    }

    static String job(String name) {
        return """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %s, labels: {kueue.x-k8s.io/queue-name: team-a-user-queue}}
                spec:
                  replicaSpecs:
                  - type: master
                    template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: 100m}}}]}}
                  - type: worker
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: 100m}}}]}}
                """.formatted(name);
    }

    static KueueStandIn kueue(String namespace) {
        KueueStandIn kueue = new KueueStandIn(admin, namespace);
        kueue.flavor("kwok", Map.of("type", "kwok"), List.of());
        kueue.flavor("kwok-tainted", Map.of("type", "kwok"), List.of(KueueStandIn.toleration("dedicated")));
        return kueue;
    }

    static void admit(KueueStandIn kueue, String workload) {
        kueue.admit(workload, "cluster-queue", Map.of("master", 1, "worker", 2), Map.of("master", "kwok", "worker", "kwok-tainted"),
                List.of());
    }

    static Set<String> podUids(OperatorHarness cluster) {
        return cluster.pods().stream().map(p -> p.getMetadata().getUid()).collect(Collectors.toSet());
    }

    @Test
    @Order(1)
    void withoutKueueAQueuedJobWaitsAndSaysSoThenRunsOnceKueueIsInstalled() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("no-kueue");
            cluster.submit(job("j"));
            cluster.awaitJob("j", j -> "KueueUnavailable".equals(reasonOf(j, JobCondition.QUEUED)));
            assertEquals(JobPhase.Pending, cluster.job("j").getStatus().phase);
            assertEquals(List.of(), cluster.pods());

            KueueStandIn.installKueuesApi(admin);
            KueueStandIn kueue = kueue(cluster.namespace);
            // Nothing tells the operator Kueue arrived: a job waiting for it is looked at again every minute.
            String workload = kueue.awaitWorkloadOf("j", Duration.ofSeconds(90)).getMetadata().getName();
            admit(kueue, workload);
            cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(2)
    void queuedAdmittedEvictedAndReadmittedAcrossOperatorRestarts() throws Exception {
        KueueStandIn.installKueuesApi(admin);
        OperatorHarness cluster = install.harness("kueue");
        String ns = cluster.namespace;
        KueueStandIn kueue = kueue(ns);
        String workload;
        try (OperatorProcess first = install.newOperator(Map.of(), true)) {
            cluster.submit(job("j"));
            workload = kueue.awaitWorkloadOf("j").getMetadata().getName();
            cluster.awaitJob("j", j -> "WaitingForAdmission".equals(reasonOf(j, JobCondition.QUEUED)));
            first.kill(); // while queued
        }
        try (OperatorProcess second = install.newOperator(Map.of(), true)) {
            Thread.sleep(3000); // a new operator looks at every job once it leads
            assertEquals(1, kueue.workloads().size(), "no second Workload");
            assertEquals(List.of(), cluster.pods(), "no pod before admission");

            admit(kueue, workload);
            cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
            Pod worker = cluster.pod("j-worker-0");
            assertEquals(Map.of("type", "kwok"), worker.getSpec().getNodeSelector());
            assertTrue(worker.getSpec().getTolerations().stream().anyMatch(t -> "dedicated".equals(t.getKey())));
            cluster.runAll();
            cluster.awaitPhase("j", JobPhase.Running);
            await().atMost(WAIT).until(() -> "True".equals(condition(kueue, workload, "PodsReady").get("status")));
            second.kill(); // while admitted
        }
        Set<String> running = podUids(cluster);
        try (OperatorProcess third = install.newOperator(Map.of(), true)) {
            Thread.sleep(3000); // a new operator looks at every job once it leads
            assertEquals(running, podUids(cluster), "the running pods are kept: the reservation is not lost");
            kueue.evict(workload, "Preempted", "Preempted to accommodate a higher priority Workload");
            await().atMost(WAIT).until(() -> cluster.pods().stream().allMatch(p -> p.getMetadata().getDeletionTimestamp() != null)
                    || cluster.pods().isEmpty());
            third.kill(); // mid-eviction
        }
        try (OperatorProcess fourth = install.newOperator(Map.of(), true)) {
            await().atMost(WAIT).until(() -> "False".equals(condition(kueue, workload, "QuotaReserved").get("status")));
            assertEquals(List.of(), cluster.pods());
            Map<String, Object> status = KueueStandIn.status(kueue.workload(workload));
            assertNull(status.get("admission"), "the reservation is released");
            assertEquals("True", condition(kueue, workload, "Requeued").get("status"));
            assertEquals(0, cluster.job("j").getStatus().backoffCount, "an eviction is not a failure");

            admit(kueue, workload);
            cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
            cluster.runAll();
            cluster.awaitPhase("j", JobPhase.Running);
            cluster.kubelet.exit("j-master-0", 0);
            cluster.awaitPhase("j", JobPhase.Succeeded);
            await().atMost(WAIT).until(() -> "True".equals(condition(kueue, workload, "Finished").get("status")));
            await().atMost(WAIT).until(() -> kueue.workload(workload).getMetadata().getFinalizers() == null
                    || kueue.workload(workload).getMetadata().getFinalizers().isEmpty());

            // A job deleted while queued: the garbage collector deletes its Workload, which the operator lets go.
            cluster.submit(job("gone"));
            String queued = kueue.awaitWorkloadOf("gone").getMetadata().getName();
            install.cluster.kubectl().run("delete", "pytorchtrainingjob", "gone", "-n", ns, "--wait=false").orFail();
            await().atMost(WAIT).until(() -> kueue.workload(queued) == null);
            cluster.submit(job("gone-while-down"));
            kueue.awaitWorkloadOf("gone-while-down");
        }
        // Deleted while no operator runs: the next one, starting, lets its Workload go.
        String orphan = kueue.workloadOf("gone-while-down").getMetadata().getName();
        install.cluster.kubectl().run("delete", "pytorchtrainingjob", "gone-while-down", "-n", ns, "--wait=false").orFail();
        await().atMost(WAIT).until(() -> kueue.workload(orphan).getMetadata().getDeletionTimestamp() != null);
        try (OperatorProcess fifth = install.newOperator(Map.of(), true)) {
            await().atMost(WAIT).until(() -> kueue.workload(orphan) == null);
        }
        OperatorWrites writes = OperatorWrites.read(install.cluster);
        assertEquals(3, writes.count(ns, "create", "workloads", 201), "one Workload per job, across five operators");
        assertEquals(6, writes.count(ns, "create", "pods", 201), "pods for two admissions, none before either");
        admin.namespaces().withName(ns).delete();
    }

    /** The examples under kubernetes/examples/kueue/, applied as their comments say, against Kueue's own schemas. */
    @Test
    @Order(3)
    void theKueueExamplesApplyAndAQueuedPyTorchJobShowsItsQueueInKubectl() throws Exception {
        KueueStandIn.installKueuesApi(admin);
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("kf-kueue");
            KueueStandIn kueue = kueue(cluster.namespace);
            Kubectl kubectl = install.cluster.kubectl();
            for (String example : List.of("01-queues.yaml", "02-pytorchtrainingjob.yaml", "03-pytorchjob.yaml")) {
                Kubectl.Result applied = kubectl.run("apply", "--server-side", "--validate=strict", "-n", cluster.namespace, "-f",
                        "kubernetes/examples/kueue/" + example);
                assertEquals(0, applied.exitCode(), example + ": " + applied.err());
                assertEquals("", applied.err(), "no warnings for " + example);
            }
            String workload = kueue.awaitWorkloadOf("queued-pytorchjob").getMetadata().getName();
            kueue.awaitWorkloadOf("queued-ddp");
            cluster.awaitState("queued-pytorchjob", "Queued");
            String table = kubectl.run("get", "pytorchjob", "queued-pytorchjob", "-n", cluster.namespace, "-o", "wide").orFail().out();
            assertTrue(table.lines().findFirst().orElse("").contains("QUEUE"), table);
            assertTrue(table.contains("team-a-user-queue") && table.contains("Queued"), table);
            assertTrue(kubectl.run("get", "pj", "queued-ddp", "-n", cluster.namespace, "-o", "wide").orFail().out()
                    .contains("team-a-user-queue"), "LOCALQUEUE");
            assertTrue(kubectl.run("get", "workloads", "-n", cluster.namespace).orFail().out().contains(workload));
            kueue.admit(workload, "cluster-queue", Map.of("master", 1, "worker", 2), Map.of("master", "kwok", "worker", "kwok"), List.of());
            cluster.awaitPodNames("queued-pytorchjob-master-0", "queued-pytorchjob-worker-0", "queued-pytorchjob-worker-1");
            cluster.runAll();
            cluster.awaitState("queued-pytorchjob", "Running");
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    private static Map<String, Object> condition(KueueStandIn kueue, String workload, String type) {
        Map<String, Object> condition = KueueStandIn.condition(KueueStandIn.status(kueue.workload(workload)), type);
        return condition == null ? Map.of() : condition;
    }

    private static String reasonOf(PyTorchTrainingJob job, String type) {
        return job.getStatus().conditions.stream().filter(c -> type.equals(c.type)).map(c -> c.reason).findFirst().orElse(null);
    }
}
