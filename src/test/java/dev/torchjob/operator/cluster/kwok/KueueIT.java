package dev.torchjob.operator.cluster.kwok;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cluster.AppWrapperController;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.KueueInstall;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.cluster.OperatorWrites;
import dev.torchjob.operator.cluster.OwnOperators;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.testing.KueueStandIn;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Both job kinds queued with the real Kueue (its controller manager, webhooks and CRDs, at the version
 * tools/versions.env names, configured as docs/kueue.md says, see {@link KueueInstall})
 * on the real control plane, the operator under its ServiceAccount: admission on a flavor's nodes,
 * waiting for quota with Kueue's reason, preemption, deactivation, waitForPodsReady, deletion in every
 * order, and operator restarts while queued and admitted.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KueueIT extends OwnOperators {
    static final Duration WAIT = Duration.ofSeconds(60);
    /**
     * Kueue's Workload as kubectl must name it where Kubernetes serves its own Workload API (1.37, GenericWorkload on):
     * there a bare "workload" is scheduling.k8s.io's.
     */
    static final String KUEUE_WORKLOAD = "workloads.kueue.x-k8s.io";
    /** Kueue's message while a Workload waits for quota. */
    static final String NO_QUOTA = "insufficient unused quota";
    /** Installed by the first test (which needs a cluster without it first), or by whichever test runs alone. */
    static KueueInstall kueue;

    static KueueInstall kueue() {
        if (kueue == null) {
            kueue = KueueInstall.start(install.cluster);
        }
        return kueue;
    }

    @AfterAll
    static void kueueGone() {
        if (kueue != null) {
            kueue.close();
        }
    }

    static String t9kJob(String name, String priority, int workers, String cpu) {
        return t9kJobLabelled(name, "{kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/priority-class: " + priority + "}", workers, cpu);
    }

    /** A master and {@code workers} workers, each asking for {@code cpu}, with these labels (a YAML map). */
    static String t9kJobLabelled(String name, String labels, int workers, String cpu) {
        return """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %1$s, labels: %2$s}
                spec:
                  replicaSpecs:
                  - type: master
                    template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: %4$s}}}]}}
                  - type: worker
                    replicas: %3$d
                    template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: %4$s}}}]}}
                """.formatted(name, labels, workers, cpu);
    }

    static String pytorchJob(String name, String priority, int workers, String cpu, String workerNodeSelector) {
        return """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: %1$s, labels: {kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/priority-class: %2$s}}
                spec:
                  pytorchReplicaSpecs:
                    Master:
                      template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: %4$s}}}]}}
                    Worker:
                      replicas: %3$d
                      template: {spec: {nodeSelector: {%5$s}, containers: [{name: pytorch, image: torch, resources: {requests: {cpu: %4$s}}}]}}
                """.formatted(name, priority, workers, cpu, workerNodeSelector);
    }

    static String pytorchJob(String name, String priority, int workers, String cpu) {
        return pytorchJob(name, priority, workers, cpu, "");
    }

    @Test
    @Order(1)
    void withoutKueueAQueuedJobWaitsAndSaysSoThenRunsOnTheFlavorsNodesOnceKueueIsInstalled() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("no-kueue");
            cluster.submit(t9kJob("j", "low", 2, "100m"));
            cluster.awaitJob("j", j -> "KueueUnavailable".equals(reasonOf(j, JobCondition.QUEUED)));
            assertEquals(JobPhase.Pending, cluster.job("j").getStatus().phase);
            assertEquals(List.of(), cluster.pods());
            // What `kubectl torchjob` tells the user meanwhile: the queue, and not admitted.
            Kubectl plugin = install.kubectlWithPlugin();
            List<String> row = Kubectl.columns(plugin.run("torchjob", "get", "j", "-n", cluster.namespace).orFail().out().lines().toList().get(1));
            assertEquals(List.of("j", "PyTorchTrainingJob", "Pending", "3"), row.subList(0, 4));
            assertEquals("user-queue", row.get(5));
            Kubectl.Result notAdmitted = plugin.run("torchjob", "wait", "j", "-n", cluster.namespace, "--for", "Admitted", "--timeout", "1s");
            assertEquals(2, notAdmitted.exitCode(), notAdmitted.err());
            assertEquals("timed out after 1s waiting for job j to be Admitted (it is Pending)", notAdmitted.err().strip());

            kueue();
            Kubectl.Watch admission = plugin.watch("torchjob", "wait", "j", "-n", cluster.namespace, "--for", "Admitted");
            kueue().queues(cluster.namespace, "4");
            // Nothing tells the operator Kueue arrived: a job waiting for it is looked at again every minute.
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() -> cluster.pods().size() == 3);
            assertEquals(0, admission.awaitExit(Duration.ofSeconds(30)), admission.printed());
            assertEquals("job j Admitted", admission.printed().strip());
            cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
            assertEquals("kwok", cluster.pod("j-worker-0").getSpec().getNodeSelector().get("type"), "the flavor's node label");
            assertEquals(cluster.namespace, cluster.pod("j-master-0").getMetadata().getLabels().get("kueue.x-k8s.io/cluster-queue-name"));
            cluster.runAll();
            cluster.awaitPhase("j", JobPhase.Running);
            await().atMost(WAIT).until(() -> "True".equals(condition(workloadOf(cluster, "j"), "PodsReady").get("status")));
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(2)
    void bothKindsWaitWithKueuesReasonAndAPreemptedOrDeactivatedJobGivesItsQuotaBackCountingNothing() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("kueue-quota");
            kueue().queues(cluster.namespace, "1");
            cluster.submitPyTorchJob(pytorchJob("first", "low", 2, "250m"));
            cluster.awaitPodNames("first-master-0", "first-worker-0", "first-worker-1");
            cluster.runAll();
            cluster.awaitState("first", "Running");

            // Both kinds say why they wait, in Kueue's words, within seconds of Kueue writing them.
            cluster.submit(t9kJob("second", "low", 1, "250m"));
            cluster.submitPyTorchJob(pytorchJob("third", "low", 1, "250m"));
            await().atMost(Duration.ofSeconds(15)).until(() -> Objects.toString(messageOf(cluster.job("second"), JobCondition.QUEUED), "")
                    .contains(NO_QUOTA));
            await().atMost(Duration.ofSeconds(15)).until(() -> Objects.toString(queuedMessage(cluster.pytorchJob("third")), "")
                    .contains(NO_QUOTA));
            cluster.awaitState("third", "Queued");

            // A higher WorkloadPriorityClass preempts the running low one: its pods go, its quota is given back, nothing counted.
            cluster.submit(t9kJob("urgent", "high", 1, "250m"));
            await().atMost(WAIT).until(() -> names(cluster, "urgent-").equals(List.of("urgent-master-0", "urgent-worker-0"))
                    && uids(cluster, "first-").isEmpty());
            GenericKubernetesResource first = workloadOf(cluster, "first");
            assertEquals("True", condition(first, "Evicted").get("status"));
            assertEquals("Preempted", condition(first, "Evicted").get("reason"));
            assertEquals("False", condition(first, "QuotaReserved").get("status"));
            assertEquals("False", condition(first, "PodsReady").get("status"), "not admitted, so not running ready pods");
            PyTorchJob preempted = cluster.awaitState("first", "Queued");
            assertTrue(preempted.getStatus().conditions.stream().noneMatch(c -> "Restarting".equals(c.type)), "an eviction is no restart");
            cluster.runAll();
            cluster.awaitPhase("urgent", JobPhase.Running);

            // Deactivating a Workload (spec.active=false) evicts its job the same way; reactivating it lets it queue again.
            String urgent = workloadOf(cluster, "urgent").getMetadata().getName();
            install.cluster.kubectl().run("patch", KUEUE_WORKLOAD, urgent, "-n", cluster.namespace, "--type=merge",
                    "-p", "{\"spec\":{\"active\":false}}").orFail();
            await().atMost(WAIT).until(() -> uids(cluster, "urgent-").isEmpty());
            PyTorchTrainingJob deactivated = cluster.awaitPhase("urgent", JobPhase.Pending);
            assertTrue(Objects.toString(messageOf(deactivated, JobCondition.QUEUED), "").contains("deactivated"),
                    messageOf(deactivated, JobCondition.QUEUED));
            assertEquals(0, Objects.requireNonNullElse(deactivated.getStatus().backoffCount, 0), "nothing counted");
            install.cluster.kubectl().run("patch", KUEUE_WORKLOAD, urgent, "-n", cluster.namespace, "--type=merge",
                    "-p", "{\"spec\":{\"active\":true}}").orFail();
            cluster.awaitJob("urgent", j -> Objects.toString(messageOf(j, JobCondition.QUEUED), "").contains(NO_QUOTA)
                    || j.getStatus().phase == JobPhase.Running || !uids(cluster, "urgent-").isEmpty());
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(3)
    void aJobWhosePodsNeverGetReadyIsEvictedAndRequeuedAsWaitForPodsReadySaysCountingNothing() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("kueue-ready");
            kueue().queues(cluster.namespace, "4");
            // Its workers ask for a node that does not exist: admitted, they never run.
            cluster.submitPyTorchJob(pytorchJob("stuck", "low", 1, "250m", "kubernetes.io/hostname: nowhere"));
            cluster.awaitPodNames("stuck-master-0", "stuck-worker-0");
            String before = cluster.pod("stuck-worker-0").getMetadata().getUid();
            await().atMost(WAIT).until(() -> "False".equals(condition(workloadOf(cluster, "stuck"), "PodsReady").get("status")));

            await().atMost(KueueInstall.PODS_READY_TIMEOUT.plus(WAIT)).until(() -> {
                Map<String, Object> requeued = condition(workloadOf(cluster, "stuck"), "Evicted");
                return "True".equals(requeued.get("status")) && "PodsReadyTimeout".equals(requeued.get("reason"))
                        || requeueCount(workloadOf(cluster, "stuck")) > 0;
            });
            // Requeued and admitted again: new pods, the job never failed, nothing counted as a restart.
            cluster.awaitNewPod("stuck-worker-0", before);
            GenericKubernetesResource workload = workloadOf(cluster, "stuck");
            assertTrue(requeueCount(workload) >= 1, "Kueue counted the requeue: " + KueueStandIn.status(workload));
            PyTorchJob job = cluster.pytorchJob("stuck");
            assertTrue(job.getStatus().conditions.stream().noneMatch(c -> "Failed".equals(c.type) || "Restarting".equals(c.type)),
                    job.getStatus().conditions.toString());
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(4)
    void aDeletedJobNeverLeavesItsWorkloadHeldWhateverTheOrderOfDeletions() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("kueue-delete");
            String ns = cluster.namespace;
            kueue().queues(ns, "1");
            Kubectl kubectl = install.cluster.kubectl();
            for (int round = 0; round < 3; round++) {
                String running = "running-" + round;
                String queued = "queued-" + round;
                cluster.submit(t9kJob(running, "low", 2, "250m"));
                cluster.awaitJob(running, j -> j.getStatus().phase == JobPhase.Running || cluster.pods().size() >= 3);
                cluster.runAll();
                cluster.submitPyTorchJob(pytorchJob(queued, "low", 1, "250m"));
                await().atMost(WAIT).until(() -> workloadOf(cluster, queued) != null);

                // The queued job deleted; then the running one's Workload first and the job a moment later.
                kubectl.run("delete", "pytorchjob", queued, "-n", ns, "--wait=false").orFail();
                String runningWorkload = workloadOf(cluster, running).getMetadata().getName();
                kubectl.run("delete", KUEUE_WORKLOAD, runningWorkload, "-n", ns, "--wait=false").orFail();
                Thread.sleep(200);
                kubectl.run("delete", "pytorchtrainingjob", running, "-n", ns, "--wait=false").orFail();
                await().atMost(Duration.ofSeconds(15)).until(() -> workloads(ns).isEmpty());
                await().atMost(WAIT).until(() -> cluster.pods().isEmpty());
            }
            // An admitted job deleted on its own, and the namespace deleted under a running and a queued job.
            cluster.submit(t9kJob("alone", "low", 2, "250m"));
            cluster.awaitPodNames("alone-master-0", "alone-worker-0", "alone-worker-1");
            kubectl.run("delete", "pytorchtrainingjob", "alone", "-n", ns, "--wait=false").orFail();
            await().atMost(Duration.ofSeconds(15)).until(() -> workloads(ns).isEmpty());
            cluster.submit(t9kJob("last-running", "low", 2, "250m"));
            cluster.awaitPodNames("last-running-master-0", "last-running-worker-0", "last-running-worker-1");
            cluster.runAll();
            cluster.submitPyTorchJob(pytorchJob("last-queued", "low", 1, "250m"));
            await().atMost(WAIT).until(() -> workloads(ns).size() == 2);
            OperatorWrites before = OperatorWrites.read(install.cluster);
            admin.namespaces().withName(ns).delete();
            await().atMost(Duration.ofSeconds(30)).until(() -> admin.namespaces().withName(ns).get() == null);
            // The namespace controller deleting the pods and Workloads is no restart and no eviction: nothing is
            // created or said, and at most one create per job is tried (its refusal says the namespace is going).
            OperatorWrites after = OperatorWrites.read(install.cluster);
            for (String resource : List.of("pods", "services", "events", "workloads")) {
                assertEquals(before.count(ns, "create", resource, 201), after.count(ns, "create", resource, 201),
                        "no " + resource + " created for jobs whose namespace is being deleted");
            }
            long refused = after.count(w -> ns.equals(w.namespace()) && "create".equals(w.verb()) && w.code() == 403);
            assertTrue(refused <= 2, refused + " refused creates for 2 jobs");
        }
    }

    @Test
    @Order(5)
    void aQueuedAndThenAdmittedJobSurvivesOperatorRestartsWithOneWorkloadAndItsPodsKept() throws Exception {
        OperatorHarness cluster = install.harness("kueue-restart");
        String ns = cluster.namespace;
        kueue().queues(ns, "1");
        try (OperatorProcess first = install.newOperator(Map.of(), true)) {
            cluster.submit(t9kJob("blocker", "low", 2, "250m"));
            cluster.awaitPodNames("blocker-master-0", "blocker-worker-0", "blocker-worker-1");
            cluster.submit(t9kJob("j", "low", 1, "250m"));
            cluster.awaitJob("j", j -> Objects.toString(messageOf(j, JobCondition.QUEUED), "").contains(NO_QUOTA));
            first.kill(); // while queued
        }
        try (OperatorProcess second = install.newOperator(Map.of(), true)) {
            Thread.sleep(3000); // a new operator looks at every job once it leads
            assertEquals(2, workloads(ns).size(), "no second Workload");
            assertTrue(uids(cluster, "j-").isEmpty(), "no pod before admission");
            install.cluster.kubectl().run("delete", "pytorchtrainingjob", "blocker", "-n", ns).orFail();
            cluster.awaitPodNames("j-master-0", "j-worker-0");
            cluster.runAll();
            cluster.awaitPhase("j", JobPhase.Running);
            await().atMost(WAIT).until(() -> "True".equals(condition(workloadOf(cluster, "j"), "PodsReady").get("status")));
            second.kill(); // while admitted
        }
        Set<String> running = uids(cluster, "j-");
        try (OperatorProcess third = install.newOperator(Map.of(), true)) {
            Thread.sleep(3000);
            assertEquals(running, uids(cluster, "j-"), "the running pods are kept: the reservation is not lost");
            assertEquals("True", condition(workloadOf(cluster, "j"), "Admitted").get("status"));
            cluster.kubelet.exit("j-master-0", 0);
            cluster.awaitPhase("j", JobPhase.Succeeded);
            await().atMost(WAIT).until(() -> "True".equals(condition(workloadOf(cluster, "j"), "Finished").get("status")));
            await().atMost(WAIT).until(() -> workloadOf(cluster, "j").getMetadata().getFinalizers() == null
                    || workloadOf(cluster, "j").getMetadata().getFinalizers().isEmpty());
        }
        OperatorWrites writes = OperatorWrites.read(install.cluster);
        assertEquals(2, writes.count(ns, "create", "workloads", 201), "one Workload per job, across three operators");
        assertEquals(5, writes.count(ns, "create", "pods", 201), "each job's pods once");
        admin.namespaces().withName(ns).delete();
    }

    /**
     * One rank of an admitted job is killed mid-training: the job restarts as a group (every pod anew,
     * one restart) and its Workload stays admitted through it — no eviction, no requeue, the quota kept —
     * while PodsReady says the pods are recovering, then ready again.
     */
    @Test
    @Order(5)
    void aGroupRestartOfAnAdmittedJobKeepsItsAdmission() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("kueue-group");
            kueue().queues(cluster.namespace, "4");
            cluster.submit(t9kJob("g", "low", 2, "250m"));
            cluster.awaitPodNames("g-master-0", "g-worker-0", "g-worker-1");
            cluster.runAll();
            cluster.awaitPhase("g", JobPhase.Running);
            await().atMost(WAIT).until(() -> "True".equals(condition(workloadOf(cluster, "g"), "PodsReady").get("status")));
            Set<String> before = uids(cluster, "g-");

            java.time.Instant killed = java.time.Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            cluster.kubelet.oomKill("g-worker-1");
            PyTorchTrainingJob restarted = cluster.awaitJob("g", j -> j.getStatus().backoffCount == 1);
            assertEquals(1, restarted.getStatus().backoffCount);
            cluster.awaitEvent("JobRestarting", "pod g-worker-1 (container pytorch) exited with code 137 (OOMKilled)");
            await().atMost(WAIT).until(() -> uids(cluster, "g-").size() == 3 && java.util.Collections.disjoint(before, uids(cluster, "g-")));
            cluster.runAll();
            // Ready again after it fell for the restart: the True seen before the restart does not count.
            await().atMost(WAIT).untilAsserted(() -> {
                Map<String, Object> ready = condition(workloadOf(cluster, "g"), "PodsReady");
                assertTrue("True".equals(ready.get("status")) && !java.time.Instant.parse((String) ready.get("lastTransitionTime")).isBefore(killed),
                        "PodsReady " + ready + "; pods " + cluster.pods().stream().map(p -> p.getMetadata().getName() + " "
                                + p.getStatus().getPhase() + " " + p.getStatus().getConditions()).toList());
            });
            System.out.println("[kueue] PodsReady after the group restart: " + condition(workloadOf(cluster, "g"), "PodsReady"));
            // What the operator told Kueue, in order: it fell once for the restart and rose once as Recovered, as
            // Kueue's own integrations say it, and stayed so (no Started again on a later pass).
            List<String> told = OperatorWrites.read(install.cluster).which(w -> cluster.namespace.equals(w.namespace())
                    && "workloads/status".equals(w.resource()) && w.code() == 200).stream()
                    .map(w -> podsReadyIn(w.body())).filter(Objects::nonNull).toList();
            int fell = told.lastIndexOf("True Started") + 1;
            assertEquals(List.of("False WaitForRecovery", "True Recovered"), told.subList(fell, told.size()),
                    "PodsReady as written since it was first True: " + told);
            assertEquals("Recovered", condition(workloadOf(cluster, "g"), "PodsReady").get("reason"));

            GenericKubernetesResource workload = workloadOf(cluster, "g");
            assertEquals("True", condition(workload, "Admitted").get("status"), KueueStandIn.status(workload).toString());
            assertTrue(condition(workload, "Evicted").isEmpty() || !"True".equals(condition(workload, "Evicted").get("status")),
                    "never evicted: " + KueueStandIn.status(workload));
            assertEquals(0, requeueCount(workload), "never requeued");
            assertEquals(1, cluster.job("g").getStatus().backoffCount, "one fault, one restart");
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    /** The examples under kubernetes/examples/kueue/, applied as their comments say. */
    @Test
    @Order(6)
    void theKueueExamplesApplyAndAQueuedPyTorchJobShowsItsQueueInKubectlAndRuns() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true);
                AppWrapperController appWrappers = kueue().startAppWrapperController()) {
            OperatorHarness cluster = install.harness("kf-kueue");
            Kubectl kubectl = install.cluster.kubectl();
            for (String example : List.of("01-queues.yaml", "02-pytorchtrainingjob.yaml", "03-pytorchjob.yaml", "04-appwrapper.yaml")) {
                Kubectl.Result applied = kubectl.run("apply", "--server-side", "--validate=strict", "-n", cluster.namespace, "-f",
                        "kubernetes/examples/kueue/" + example);
                assertEquals(0, applied.exitCode(), example + ": " + applied.err());
                assertEquals("", applied.err(), "no warnings for " + example);
            }
            String table = kubectl.run("get", "pytorchjob", "queued-pytorchjob", "-n", cluster.namespace, "-o", "wide").orFail().out();
            assertTrue(table.lines().findFirst().orElse("").contains("QUEUE"), table);
            assertTrue(table.contains("team-a-user-queue"), table);
            assertTrue(kubectl.run("get", "pj", "queued-ddp", "-n", cluster.namespace, "-o", "wide").orFail().out()
                    .contains("team-a-user-queue"), "LOCALQUEUE");
            await().atMost(WAIT).until(() -> kubectl.run("get", KUEUE_WORKLOAD, "-n", cluster.namespace).out().contains("queued-pytorchjob"));
            await().atMost(WAIT).until(() -> names(cluster, "queued-pytorchjob-").size() == 3);
            cluster.runAll();
            cluster.awaitState("queued-pytorchjob", "Running");
            // The AppWrapper's job, made by AppWrapper's controller once Kueue admitted it, runs through that admission;
            // its grace periods set, its event has nothing to warn of.
            await().atMost(WAIT).until(() -> names(cluster, "wrapped-pytorchjob-").size() == 2);
            cluster.runAll();
            cluster.awaitState("wrapped-pytorchjob", "Running");
            cluster.awaitEvent("QueuedByOwner", "through its owner AppWrapper wrapped-pytorchjob");
            assertTrue(cluster.events().stream().filter(e -> "QueuedByOwner".equals(e.getReason())).noneMatch(e -> e.getMessage().contains("resets")));
            appWrappersGone(cluster);
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    /**
     * Kueue's topology-aware scheduling: a flavor with a Topology (racks, then hosts) over three nodes, one in
     * rack r1 and two in r2, each with room for one rank. A PyTorchJob whose master and worker ask for one rack
     * together (Kueue's annotations on their templates) gets pods gated until Kueue's ungater gives each its
     * host; both land in r2, the only rack with room for both. The default scheduler alone would put one on r1's
     * node (the least used). A rank deleted mid-run is replaced, gated and placed again.
     */
    @Test
    @Order(7)
    void aJobAskingForOneRackIsPlacedThereByKueuesTopologyAwareScheduling() throws Exception {
        kueue();
        List<String> nodes = List.of("tas-r1-a", "tas-r2-a", "tas-r2-b");
        for (String node : nodes) {
            install.cluster.nodeApart(node, "tas");
            admin.nodes().withName(node).edit(n -> {
                n.getMetadata().getLabels().put("example.com/rack", node.substring(4, 6));
                n.getMetadata().getLabels().put("tas-test", "true");
                return n;
            });
        }
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("tas");
            install.cluster.kubectl().runWithInput("""
                    apiVersion: kueue.x-k8s.io/v1beta2
                    kind: Topology
                    metadata: {name: racks}
                    spec:
                      levels: [{nodeLabel: example.com/rack}, {nodeLabel: kubernetes.io/hostname}]
                    ---
                    apiVersion: kueue.x-k8s.io/v1beta2
                    kind: ResourceFlavor
                    metadata: {name: tas-racks}
                    spec:
                      nodeLabels: {tas-test: "true"}
                      topologyName: racks
                      tolerations: [{key: tas, operator: Exists, effect: NoSchedule}]
                    """, "apply", "--server-side", "-f", "-").orFail();
            kueue().queuesOn(cluster.namespace, "tas-racks", "3000");
            String oneRack = "metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: example.com/rack, "
                    + "kueue.x-k8s.io/podset-group-name: ranks}}";
            String rank = "spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: \"600\"}}}]}";
            cluster.submitPyTorchJob("""
                    apiVersion: kubeflow.org/v1
                    kind: PyTorchJob
                    metadata: {name: racked, labels: {kueue.x-k8s.io/queue-name: user-queue}}
                    spec:
                      pytorchReplicaSpecs:
                        Master:
                          template: {%1$s, %2$s}
                        Worker:
                          replicas: 1
                          template: {%1$s, %2$s}
                    """.formatted(oneRack, rank));

            await().atMost(WAIT).until(() -> names(cluster, "racked-").size() == 2);
            GenericKubernetesResource workload = workloadOf(cluster, "racked");
            assertEquals(Map.of("required", "example.com/rack", "podIndexLabel", "training.kubeflow.org/replica-index",
                    "podSetGroupName", "ranks"), workload.get("spec", "podSets", 0, "topologyRequest"), "asked as Kueue's integration asks");
            assertPlacedInRackR2(cluster, "racked-master-0", "racked-worker-0");
            assertEquals(workload.getMetadata().getName(),
                    cluster.pod("racked-master-0").getMetadata().getAnnotations().get("kueue.x-k8s.io/workload"));
            cluster.runAll();
            cluster.awaitState("racked", "Running");

            String before = cluster.pod("racked-worker-0").getMetadata().getUid();
            cluster.client.pods().inNamespace(cluster.namespace).withName("racked-worker-0").withGracePeriod(0).delete();
            await().atMost(WAIT).until(() -> cluster.pods().stream().map(p -> p.getMetadata().getUid()).noneMatch(before::equals)
                    && names(cluster, "racked-").size() == 2);
            assertPlacedInRackR2(cluster, "racked-master-0", "racked-worker-0");

            // Slices: the two workers in one rack, one per host. A slice bigger than the group is refused as Kueue's webhook refuses it.
            String sliced = """
                    apiVersion: kubeflow.org/v1
                    kind: PyTorchJob
                    metadata: {name: %3$s, labels: {kueue.x-k8s.io/queue-name: user-queue}}
                    spec:
                      pytorchReplicaSpecs:
                        Master:
                          template: {%4$s}
                        Worker:
                          replicas: 2
                          template: {metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: example.com/rack,
                            kueue.x-k8s.io/podset-slice-required-topology: kubernetes.io/hostname, kueue.x-k8s.io/podset-slice-size: "%1$s"}},
                            %2$s}
                    """;
            // The master asks for little: wherever Kueue puts it, each host of r2 still has room for a worker.
            String smallRank = rank.replace("\"600\"", "\"100\"");
            cluster.submitPyTorchJob(sliced.formatted("3", rank, "too-big", smallRank));
            await().atMost(WAIT).until(() -> Objects.toString(queuedMessage(cluster.pytorchJob("too-big")), "").contains(
                    "replica worker: kueue.x-k8s.io/podset-slice-size is 3: more than the 2 replica(s) of worker"));
            assertEquals(1, workloads(cluster.namespace).size(), "none for the refused job");
            install.cluster.kubectl().run("delete", "pytorchjob", "racked", "too-big", "-n", cluster.namespace).orFail();
            await().atMost(WAIT).until(() -> workloads(cluster.namespace).isEmpty() && cluster.pods().isEmpty());
            cluster.submitPyTorchJob(sliced.formatted("1", rank, "sliced", smallRank));
            await().atMost(WAIT).until(() -> names(cluster, "sliced-").size() == 3);
            Map<String, Object> asked = workloadOf(cluster, "sliced").get("spec", "podSets", 1, "topologyRequest");
            assertEquals(List.of("example.com/rack", "kubernetes.io/hostname", 1), List.of(asked.get("required"),
                    asked.get("podSetSliceRequiredTopology"), asked.get("podSetSliceSize")), "as Kueue's API keeps it: " + asked);
            assertPlacedInRackR2(cluster, "sliced-worker-0", "sliced-worker-1");
            admin.namespaces().withName(cluster.namespace).delete();
        } finally {
            nodes.forEach(node -> admin.nodes().withName(node).delete());
        }
    }

    /**
     * Kueue's maximum execution time, from the job's label: a value Kueue's webhook would refuse keeps the
     * job unqueued and says so; the label fixed (a label change alone starts a pass), the job runs, and
     * once it has run that long Kueue deactivates its Workload: the pods go, nothing is counted, and the
     * job waits saying why, with the time it ran added to the Workload as Kueue's integrations add it.
     */
    @Test
    @Order(8)
    void aJobPastItsMaximumExecutionTimeIsStoppedByKueueAndSaysWhyCountingNothing() throws Exception {
        OperatorHarness cluster = install.harness("kueue-max-time");
        kueue().queues(cluster.namespace, "4");
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            cluster.submitPyTorchJob(pytorchJob("limited", "low", 1, "100m")
                    .replace("labels: {", "labels: {kueue.x-k8s.io/max-exec-time-seconds: 5s, "));
            await().atMost(WAIT).until(() -> Objects.toString(queuedMessage(cluster.pytorchJob("limited")), "")
                    .contains("the label kueue.x-k8s.io/max-exec-time-seconds is \"5s\""));
            cluster.awaitEvent("InvalidQueueRequest", "max-exec-time-seconds");
            assertEquals(List.of(), workloads(cluster.namespace), "nothing asked of Kueue");

            install.cluster.kubectl().run("label", "--overwrite", "pytorchjob", "limited", "-n", cluster.namespace,
                    "kueue.x-k8s.io/max-exec-time-seconds=5").orFail();
            await().atMost(WAIT).until(() -> names(cluster, "limited-").size() == 2);
            assertEquals(5, (Integer) workloadOf(cluster, "limited").get("spec", "maximumExecutionTimeSeconds"));
            cluster.runAll();
            cluster.awaitState("limited", "Running");

            await().atMost(WAIT).until(() -> uids(cluster, "limited-").isEmpty()
                    && "False".equals(condition(workloadOf(cluster, "limited"), "QuotaReserved").get("status")));
            GenericKubernetesResource workload = workloadOf(cluster, "limited");
            assertEquals(Boolean.FALSE, workload.get("spec", "active"), "Kueue deactivated it");
            assertEquals("DeactivatedDueToMaximumExecutionTimeExceeded", condition(workload, "Evicted").get("reason"));
            Number ran = workload.get("status", "accumulatedPastExecutionTimeSeconds");
            assertTrue(ran != null && ran.intValue() >= 4, "the time it ran, as the integrations report it: " + ran);
            // Evicted while its pods go, then waiting, saying why.
            await().atMost(WAIT).until(() -> Objects.toString(queuedMessage(cluster.pytorchJob("limited")), "").endsWith(
                    "is deactivated (spec.active is false): The workload is deactivated due to exceeding the maximum execution time"));
            PyTorchJob stopped = cluster.awaitState("limited", "Queued");
            assertTrue(stopped.getStatus().conditions.stream().noneMatch(c -> "Failed".equals(c.type) || "Restarting".equals(c.type)),
                    stopped.getStatus().conditions.toString());
            cluster.awaitEvent("Evicted", "maximum execution time");
        }
        // With Kueue's objectRetentionPolicies.workloads.afterDeactivatedByKueue set alike, the job goes, its Workload with it.
        try (OperatorProcess operator = install.newOperator(Map.of("torchjob.kueue.object-retention.after-deactivated-by-kueue", "1s"),
                true)) {
            await().atMost(WAIT).until(() -> cluster.pytorchJob("limited") == null && workloadOf(cluster, "limited") == null);
            cluster.awaitEvent("Deleted", "deactivated by Kueue and not reactivated by");
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(9)
    void aQueueLabelEditedWithKubectlMovesAWaitingJobTakesOneOutOfTheQueueAndNeverStopsARunningOne() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("kueue-relabel");
            kueue().queues(cluster.namespace, "1");
            install.cluster.kubectl().runWithInput("""
                    apiVersion: kueue.x-k8s.io/v1beta2
                    kind: ClusterQueue
                    metadata: {name: %1$s-spare}
                    spec:
                      namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %1$s}}
                      resourceGroups:
                      - coveredResources: [cpu]
                        flavors: [{name: kwok, resources: [{name: cpu, nominalQuota: "1"}]}]
                    ---
                    apiVersion: kueue.x-k8s.io/v1beta2
                    kind: LocalQueue
                    metadata: {name: spare-queue, namespace: %1$s}
                    spec: {clusterQueue: %1$s-spare}
                    """.formatted(cluster.namespace), "apply", "--server-side", "-f", "-").orFail();
            cluster.submit(t9kJob("holder", "low", 1, "400m"));
            cluster.awaitPodNames("holder-master-0", "holder-worker-0");
            cluster.runAll();
            cluster.awaitPhase("holder", JobPhase.Running);

            // Waiting for quota in user-queue, moved to spare-queue: the same Workload, admitted there.
            cluster.submit(t9kJob("mover", "low", 1, "400m"));
            await().atMost(WAIT).until(() -> Objects.toString(messageOf(cluster.job("mover"), JobCondition.QUEUED), "").contains(NO_QUOTA));
            String mover = workloadOf(cluster, "mover").getMetadata().getName();
            queueLabel(cluster, "mover", "spare-queue");
            await().atMost(WAIT).until(() -> names(cluster, "mover-").size() == 2);
            GenericKubernetesResource moved = workloadOf(cluster, "mover");
            assertEquals(List.of(mover, "spare-queue", cluster.namespace + "-spare"), List.of(moved.getMetadata().getName(),
                    moved.get("spec", "queueName"), moved.get("status", "admission", "clusterQueue")));
            cluster.awaitEvent("QueueChanged", "moves from LocalQueue user-queue to spare-queue");

            // Waiting, then unlabelled: its Workload goes and it runs without a queue.
            cluster.submit(t9kJob("leaver", "low", 1, "400m"));
            // (Kueue may write it no message: v0.19 puts a Workload shaped like one it found inadmissible, mover's, straight
            // into the inadmissible list.)
            await().atMost(WAIT).until(() -> workloadOf(cluster, "leaver") != null
                    && Objects.toString(messageOf(cluster.job("leaver"), JobCondition.QUEUED), "").startsWith("Waiting in LocalQueue user-queue"));
            queueLabel(cluster, "leaver", null);
            await().atMost(WAIT).until(() -> names(cluster, "leaver-").size() == 2 && workloadOf(cluster, "leaver") == null);
            assertNull(cluster.pod("leaver-worker-0").getMetadata().getLabels().get("kueue.x-k8s.io/podset"), "not admitted by Kueue");
            cluster.awaitEvent("QueueLeft", "runs without a queue");

            // Running, then unlabelled or labelled: it runs on, and the quota it holds stays counted until it ends.
            cluster.runAll();
            cluster.awaitPhase("leaver", JobPhase.Running);
            Set<String> running = uids(cluster, "holder-");
            Set<String> free = uids(cluster, "leaver-");
            queueLabel(cluster, "holder", null);
            queueLabel(cluster, "leaver", "user-queue");
            cluster.awaitEvent("QueueChangeDeferred", "was removed while the job holds quota in LocalQueue user-queue");
            cluster.awaitEvent("QueueChangeDeferred", "was set to user-queue while the job runs without a queue");
            await("nothing stopped").during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10))
                    .until(() -> uids(cluster, "holder-").equals(running) && uids(cluster, "leaver-").equals(free));
            assertEquals("True", condition(workloadOf(cluster, "holder"), "QuotaReserved").get("status"));
            assertNull(workloadOf(cluster, "leaver"), "no Workload for a job that runs without a queue");
            assertEquals(List.of(JobPhase.Running, JobPhase.Running), List.of(cluster.job("holder").getStatus().phase,
                    cluster.job("leaver").getStatus().phase));
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(10)
    void aNewJobWithoutAQueueLabelGoesToItsNamespacesDefaultLocalQueueAndOneStartedBeforeItRunsOn() throws Exception {
        OperatorHarness cluster = install.harness("kueue-default");
        Set<String> early = runningWithoutAQueue(cluster);
        defaultLocalQueue(cluster);
        // The LocalQueue made before this operator starts: its informer holds it before the first pass.
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            // As Kueue's webhook labels a batch Job created now: the label on the job, its Workload in that queue.
            cluster.submit(t9kJobLabelled("j", "{}", 1, "100m"));
            await().atMost(WAIT).until(() -> workloadOf(cluster, "j") != null && names(cluster, "j-").size() == 2);
            assertEquals("default", cluster.job("j").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));
            GenericKubernetesResource workload = workloadOf(cluster, "j");
            assertEquals(List.of("default", cluster.namespace), List.of(workload.get("spec", "queueName"),
                    workload.get("status", "admission", "clusterQueue")));
            assertEquals("kwok", cluster.pod("j-worker-0").getSpec().getNodeSelector().get("type"), "placed by the admission");

            cluster.submitPyTorchJob("""
                    apiVersion: kubeflow.org/v1
                    kind: PyTorchJob
                    metadata: {name: p}
                    spec:
                      pytorchReplicaSpecs:
                        Master:
                          template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: 100m}}}]}}
                    """);
            await().atMost(WAIT).until(() -> workloadOf(cluster, "p") != null && names(cluster, "p-").size() == 1);
            assertEquals("default", cluster.pytorchJob("p").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));
            assertEquals("default", workloadOf(cluster, "p").get("spec", "queueName"));

            // Without the right to label a job (an RBAC older than this operator), the job does not run around the queue:
            // it waits, saying the step and the server's refusal, and is put in the queue once the right is back.
            waitsWithoutTheRight(cluster, "refused", "FailedSetQueueLabel", withoutTheRight(role -> role.getRules().stream()
                    .filter(r -> r.getResources().equals(List.of("pytorchtrainingjobs")))
                    .forEach(r -> r.setVerbs(r.getVerbs().stream().filter(v -> !v.equals("patch")).toList())),
                    "patch", "pytorchtrainingjobs.batch.tensorstack.dev", cluster.namespace),
                    () -> cluster.submit(t9kJobLabelled("refused", "{}", 1, "100m")));
            // Retried with back-off (1 s, 2 s, ... since the refusal was first said).
            await().atMost(WAIT).until(() -> workloadOf(cluster, "refused") != null && names(cluster, "refused-").size() == 2);
            assertEquals("default", cluster.job("refused").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));

            // Started before the LocalQueue existed, and seen again by a new operator: it runs on, no label, no Workload.
            assertEquals(early, uids(cluster, "early-"));
            assertNull(cluster.job("early").getMetadata().getLabels() == null ? null
                    : cluster.job("early").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));
            assertNull(workloadOf(cluster, "early"));
            assertEquals(JobPhase.Running, cluster.job("early").getStatus().phase);
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(11)
    void whereKueueManagesEveryJobANewJobWithoutAQueueLabelWaitsUntilItNamesOneAndOneStartedBeforeRunsOn() throws Exception {
        OperatorHarness cluster = install.harness("kueue-every");
        Set<String> early = runningWithoutAQueue(cluster);
        // The platform team turns the setting on (Helm value kueue.manageJobsWithoutQueueName), as in Kueue's configuration.
        try (OperatorProcess operator = install.newOperator(Map.of("torchjob.kueue.manage-jobs-without-queue-name", "true"), true)) {
            cluster.submit(t9kJobLabelled("held", "{}", 1, "100m"));
            cluster.awaitJob("held", job -> "QueueNameMissing".equals(reasonOf(job, JobCondition.QUEUED)));
            cluster.awaitEvent("QueueNameMissing", "kubectl get localqueues -n " + cluster.namespace);
            await("nothing of it runs").during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10))
                    .until(() -> names(cluster, "held-").isEmpty() && workloadOf(cluster, "held") == null);
            assertEquals(JobPhase.Pending, cluster.job("held").getStatus().phase);

            // Named with kubectl: queued there, admitted by Kueue, run.
            queueLabel(cluster, "held", "user-queue");
            await().atMost(WAIT).until(() -> workloadOf(cluster, "held") != null && names(cluster, "held-").size() == 2);
            assertEquals(List.of("user-queue", cluster.namespace), List.of(workloadOf(cluster, "held").get("spec", "queueName"),
                    workloadOf(cluster, "held").get("status", "admission", "clusterQueue")));

            // Held, then its namespace gets a LocalQueue named default: put in it at once.
            cluster.submit(t9kJobLabelled("late", "{}", 1, "100m"));
            cluster.awaitJob("late", job -> "QueueNameMissing".equals(reasonOf(job, JobCondition.QUEUED)));
            defaultLocalQueue(cluster);
            await().atMost(WAIT).until(() -> workloadOf(cluster, "late") != null && names(cluster, "late-").size() == 2);
            assertEquals("default", cluster.job("late").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));

            // Started before the setting, and seen again by the new operator: it runs on, no Workload.
            assertEquals(early, uids(cluster, "early-"));
            assertNull(workloadOf(cluster, "early"));
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    @Order(12)
    void inANamespaceKueueLeavesAloneJobsRunWithoutAQueueEvenNamingOneAsKueueRunsItsOwnThere() throws Exception {
        OperatorHarness optedIn = install.harness("kueue-opted-in");
        OperatorHarness left = install.harness("kueue-left");
        kueue().queues(optedIn.namespace, "4");
        kueue().queues(left.namespace, "4");
        install.cluster.kubectl().run("label", "namespace", optedIn.namespace, "kueue-managed=true").orFail();
        // Without the right to read namespaces (an RBAC older than this setting), taken before the operator starts: it
        // may meet a job of another namespace first, and that would start its watch of the namespaces.
        Runnable giveBack = withoutTheRight(role -> role.setRules(role.getRules().stream()
                .filter(r -> !r.getResources().equals(List.of("namespaces"))).toList()), "list", "namespaces", null);
        // An opt-in selector, as Kueue's configuration writes it (Helm value kueue.managedJobsNamespaceSelector); the
        // operator's ServiceAccount reads the namespaces' labels with the install's ClusterRole.
        try (OperatorProcess operator = install.newOperator(Map.of("torchjob.kueue.manage-jobs-without-queue-name", "true",
                "torchjob.kueue.managed-jobs-namespace-selector", "{matchLabels: {kueue-managed: \"true\"}}"), true)) {
            // The job waits, saying so, and goes on once the right is back; it never runs around the queue.
            waitsWithoutTheRight(optedIn, "queued", "FailedWatchNamespaces", giveBack,
                    () -> optedIn.submit(t9kJobLabelled("queued", "{kueue.x-k8s.io/queue-name: user-queue}", 1, "100m")));
            await().atMost(WAIT).until(() -> workloadOf(optedIn, "queued") != null && names(optedIn, "queued-").size() == 2);

            left.submit(t9kJobLabelled("named", "{kueue.x-k8s.io/queue-name: user-queue}", 1, "100m"));
            left.submit(t9kJobLabelled("unnamed", "{}", 1, "100m"));
            left.awaitPodNames("named-master-0", "named-worker-0", "unnamed-master-0", "unnamed-worker-0");
            left.awaitEvent("QueueIgnored", "Kueue manages no job in namespace " + left.namespace + " (its managedJobsNamespaceSelector, "
                    + "kueue-managed=true, leaves it out)");
            assertNull(workloadOf(left, "named"), "no quota taken: Kueue v0.19 ignores its own jobs there, label or not");
            assertNull(workloadOf(left, "unnamed"));

            // Where Kueue manages jobs, a job without a queue name is held.
            optedIn.submit(t9kJobLabelled("held", "{}", 1, "100m"));
            optedIn.awaitJob("held", job -> "QueueNameMissing".equals(reasonOf(job, JobCondition.QUEUED)));
            assertEquals(List.of(), names(optedIn, "held-"));
            // The namespace left out by a relabel: the held job starts without a change of its own; the queued one stays
            // in its queue (its Workload first).
            install.cluster.kubectl().run("label", "namespace", optedIn.namespace, "kueue-managed-").orFail();
            optedIn.awaitPodNames("held-master-0", "held-worker-0", "queued-master-0", "queued-worker-0");
            assertNull(workloadOf(optedIn, "held"));
            assertNotNull(workloadOf(optedIn, "queued"));
            admin.namespaces().withName(optedIn.namespace).delete();
            admin.namespaces().withName(left.namespace).delete();
        } finally {
            giveBack.run();
        }
    }

    /**
     * AppWrapper's own controller makes the job once Kueue admitted the AppWrapper; the operator runs it through the
     * AppWrapper's admission, restarts it once for a rank's fault while AppWrapper looks at its pods, and AppWrapper sees
     * it succeed. The AppWrapper carries the grace periods docs/kueue.md gives for jobs the operator restarts.
     */
    @Test
    @Order(13)
    void aPyTorchJobAnAppWrapperWrapsIsQueuedThroughItRestartedOnceForARanksFaultAndSucceedsForAppWrapper() throws Exception {
        OperatorHarness cluster = install.harness("kueue-wrapped");
        kueue().queues(cluster.namespace, "4");
        // A default LocalQueue and Kueue managing every job: neither may take the wrapped job, as Kueue leaves both off a
        // job whose owner it manages.
        defaultLocalQueue(cluster);
        try (OperatorProcess operator = install.newOperator(Map.of("torchjob.kueue.manage-jobs-without-queue-name", "true"), true);
                AppWrapperController appWrappers = kueue().startAppWrapperController()) {
            Kubectl kubectl = install.cluster.kubectl();
            kubectl.runWithInput("""
                    apiVersion: workload.codeflare.dev/v1beta2
                    kind: AppWrapper
                    metadata:
                      name: aw
                      namespace: %s
                      labels: {kueue.x-k8s.io/queue-name: user-queue}
                      annotations: %s
                    spec:
                      components:
                      - podSets:
                        - {path: template.spec.pytorchReplicaSpecs.Master.template, replicas: 1}
                        - {path: template.spec.pytorchReplicaSpecs.Worker.template, replicas: 1}
                        template:
                    %s
                    """.formatted(cluster.namespace, AppWrapperController.GRACE_PERIODS, WRAPPED_JOB.indent(8)), "apply", "--server-side", "-f", "-").orFail();
            // Kueue's appwrapper integration admits the AppWrapper; AppWrapper's controller makes the job, owned by it.
            cluster.awaitPodNames("wrapped-master-0", "wrapped-worker-0");
            cluster.runAll();
            PyTorchJob job = cluster.pytorchJob("wrapped");
            assertEquals("AppWrapper", job.getMetadata().getOwnerReferences().get(0).getKind());
            cluster.awaitEvent("QueuedByOwner", "through its owner AppWrapper aw");
            assertTrue(cluster.events().stream().filter(e -> "QueuedByOwner".equals(e.getReason())).noneMatch(e -> e.getMessage().contains("resets")),
                    "its grace periods set as docs/kueue.md says: nothing to warn of");
            assertEquals(1, workloads(cluster.namespace).size(), "the AppWrapper's Workload alone: the quota is taken once");
            assertEquals(java.util.Optional.empty(), dev.torchjob.operator.kueue.KueueWorkload.queueOf(job), "not put in the default LocalQueue");
            for (Pod pod : cluster.pods()) {
                assertEquals("kwok", pod.getSpec().getNodeSelector().get("type"), "the admission's flavor, as AppWrapper gives it to the job");
                assertEquals("aw", pod.getMetadata().getLabels().get("workload.codeflare.dev/appwrapper"), "the label AppWrapper counts pods by");
            }
            await().atMost(WAIT).until(() -> "Running".equals(appWrapper(cluster).get("phase")));

            // One rank's fault mid-run; AppWrapper is made to look at the pods every 100 ms until the new group runs (it
            // looks once a minute by itself): it must see the failed pod or the new group, never reset the job.
            Set<String> before = uids(cluster, "wrapped-");
            cluster.kubelet.oomKill("wrapped-worker-0");
            Set<String> looked = new java.util.HashSet<>();
            await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
                AppWrapperController.lookNow(admin, cluster.namespace, "aw");
                looked.add(String.valueOf(appWrapperCondition(cluster, "Unhealthy").get("reason")));
                Set<String> now = uids(cluster, "wrapped-");
                return now.size() == 2 && java.util.Collections.disjoint(before, now) && cluster.pods().stream()
                        .allMatch(p -> "Running".equals(p.getStatus().getPhase()));
            });
            System.out.println("[kueue] AppWrapper's Unhealthy reasons seen during the restart: " + looked);
            assertTrue(looked.contains("FoundFailedPods"), "AppWrapper looked while the failed rank was there: " + looked);
            cluster.awaitEvent("JobRestarting", "pod wrapped-worker-0 (container pytorch) exited with code 137 (OOMKilled)");
            assertEquals(1, cluster.pytorchJob("wrapped").getStatus().backoffCount, "one fault, one restart");
            assertEquals(job.getMetadata().getUid(), cluster.pytorchJob("wrapped").getMetadata().getUid(), "the same job: AppWrapper never reset it");
            assertEquals(null, appWrapper(cluster).get("retries"), "AppWrapper counted no reset: " + appWrapper(cluster));

            cluster.kubelet.exit("wrapped-worker-0", 0);
            cluster.kubelet.exit("wrapped-master-0", 0);
            cluster.awaitPyTorchJob("wrapped", j -> j.getStatus().conditions.stream().anyMatch(c -> "Succeeded".equals(c.type) && "True".equals(c.status)));
            await().atMost(WAIT).untilAsserted(() -> assertEquals("Succeeded", appWrapper(cluster).get("phase"), appWrapper(cluster).toString()));
            await().atMost(WAIT).until(() -> "True".equals(condition(workloads(cluster.namespace).get(0), "Finished").get("status")));
            appWrappersGone(cluster);
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    /**
     * A PyTorchTrainingJob in an AppWrapper, with the rights kubernetes/appwrapper-rbac.yaml gives AppWrapper's
     * controller: made by it once Kueue admitted the AppWrapper, run through that admission, its success the
     * AppWrapper's; and an AppWrapper Kueue deactivates takes its job and pods away.
     */
    @Test
    @Order(14)
    void aPyTorchTrainingJobAnAppWrapperWrapsRunsWithTheRightsTheDocsGiveAndGoesWhenKueueEvictsIt() throws Exception {
        OperatorHarness cluster = install.harness("kueue-wrapped-t9k");
        kueue().queues(cluster.namespace, "4");
        try (OperatorProcess operator = install.newOperator(Map.of(), true);
                AppWrapperController appWrappers = kueue().startAppWrapperController()) {
            // An ML engineer with Kubernetes' edit in the namespace (the install's users' roles in it) and AppWrapper's
            // user role: AppWrapper's webhook lets whoever may create the wrapped kind wrap it.
            Kubectl engineer = install.kubectlAs(cluster.namespace, "engineer", "ClusterRole/edit", "ClusterRole/appwrapper-user-role");
            Kubectl onlyWrapping = install.kubectlAs(cluster.namespace, "wrapper", "ClusterRole/appwrapper-user-role");
            java.util.function.BiFunction<String, String, String> appWrapper = (name, podSets) -> """
                    apiVersion: workload.codeflare.dev/v1beta2
                    kind: AppWrapper
                    metadata: {name: %s, labels: {kueue.x-k8s.io/queue-name: user-queue}}
                    spec:
                      components:
                      - template:
                    %s    %s
                    """.formatted(name, t9kJobLabelled(name + "-job", "{}", 1, "100m")
                    .replace("spec:\n  replicaSpecs:", "spec:\n  runPolicy: {cleanUpPolicy: " + (name.equals("aw") ? "None" : "Unfinished")
                            + "}\n  replicaSpecs:").indent(8), podSets);
            String podSets = "podSets: [{path: \"template.spec.replicaSpecs[0].template\", replicas: 1}, "
                    + "{path: \"template.spec.replicaSpecs[1].template\", replicas: 1}]";
            Kubectl.Result notAllowed = onlyWrapping.runWithInput(appWrapper.apply("aw", podSets), "create", "-n", cluster.namespace, "-f", "-");
            assertTrue(notAllowed.err().contains("User system:serviceaccount:" + cluster.namespace + ":wrapper is not authorized to create "
                    + "pytorchtrainingjobs in " + cluster.namespace), "AppWrapper's webhook asks whether its user may make the job: " + notAllowed.err());
            Kubectl.Result noPodSets = engineer.runWithInput(appWrapper.apply("aw", ""), "create", "-n", cluster.namespace, "-f", "-");
            assertTrue(noPodSets.err().contains("components contains no podspecs"), "AppWrapper knows no podSets of the T9k kind: " + noPodSets.err());
            for (String name : List.of("aw", "aw-evicted")) {
                engineer.runWithInput(appWrapper.apply(name, podSets), "create", "-n", cluster.namespace, "-f", "-").orFail();
            }
            assertEquals("system_serviceaccount_" + cluster.namespace + "_engineer", admin.genericKubernetesResources(AppWrapperController.API_VERSION,
                    AppWrapperController.KIND).inNamespace(cluster.namespace).withName("aw").get().getMetadata().getLabels()
                    .get("workload.codeflare.dev/user"), "its webhook labelled it with its user");
            cluster.awaitPodNames("aw-evicted-job-master-0", "aw-evicted-job-worker-0", "aw-job-master-0", "aw-job-worker-0");
            cluster.runAll();
            // Its grace periods left to AppWrapper's defaults: the event says what a group restart may meet.
            cluster.awaitEvent("QueuedByOwner", "through its owner AppWrapper aw ");
            cluster.awaitEvent("QueuedByOwner", "AppWrapper aw resets the whole job");
            // A clean-up that deletes pods AppWrapper counts to call the job done: said too.
            cluster.awaitEvent("QueuedByOwner", "runPolicy.cleanUpPolicy Unfinished deletes pods it would count");
            assertTrue(cluster.events().stream().filter(e -> "aw-job".equals(e.getInvolvedObject().getName()))
                    .noneMatch(e -> e.getMessage().contains("cleanUpPolicy")), "cleanUpPolicy None keeps the pods AppWrapper counts");
            assertEquals(2, workloads(cluster.namespace).size(), "the AppWrappers' Workloads alone");

            cluster.kubelet.exit("aw-job-worker-0", 0);
            cluster.kubelet.exit("aw-job-master-0", 0);
            cluster.awaitPhase("aw-job", JobPhase.Succeeded);
            await().atMost(WAIT).untilAsserted(() -> assertEquals("Succeeded", appWrapper(cluster).get("phase"), appWrapper(cluster).toString()));

            GenericKubernetesResource evicted = workloads(cluster.namespace).stream()
                    .filter(w -> w.getMetadata().getOwnerReferences().get(0).getName().equals("aw-evicted")).findFirst().orElseThrow();
            admin.genericKubernetesResources("kueue.x-k8s.io/v1beta2", "Workload").inNamespace(cluster.namespace)
                    .withName(evicted.getMetadata().getName())
                    .patch(io.fabric8.kubernetes.client.dsl.base.PatchContext.of(io.fabric8.kubernetes.client.dsl.base.PatchType.JSON_MERGE),
                            "{\"spec\":{\"active\":false}}");
            await().atMost(WAIT).until(() -> cluster.client.resources(PyTorchTrainingJob.class).inNamespace(cluster.namespace)
                    .withName("aw-evicted-job").get() == null && cluster.pods().stream().noneMatch(p -> p.getMetadata().getName().startsWith("aw-evicted-")));
            assertEquals(JobPhase.Succeeded, cluster.job("aw-job").getStatus().phase, "the other AppWrapper's job is left alone");
            appWrappersGone(cluster);
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    static void appWrappersGone(OperatorHarness cluster) {
        AppWrapperController.deleteAll(admin, cluster.namespace);
    }

    /** The AppWrapper "aw"'s status. */
    static Map<String, Object> appWrapper(OperatorHarness cluster) {
        return AppWrapperController.status(admin, cluster.namespace, "aw");
    }

    static Map<String, Object> appWrapperCondition(OperatorHarness cluster, String type) {
        return AppWrapperController.condition(admin, cluster.namespace, "aw", type);
    }

    /**
     * The PyTorchJob an AppWrapper wraps (its template): no node selector (AppWrapper gives the admission's), a rank
     * OOM-killed restarts the job.
     */
    static final String WRAPPED_JOB = """
            apiVersion: kubeflow.org/v1
            kind: PyTorchJob
            metadata: {name: wrapped}
            spec:
              pytorchReplicaSpecs:
                Master:
                  replicas: 1
                  restartPolicy: ExitCode
                  template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: 100m}}}]}}
                Worker:
                  replicas: 1
                  restartPolicy: ExitCode
                  template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: 100m}}}]}}
            """;

    /**
     * Narrows the operator's ClusterRole and waits until the API server denies the operator's ServiceAccount
     * {@code verb} on {@code resource} (in {@code namespace}, or cluster-wide when null): the server's
     * authorizer learns of the edit a moment later. Returns what gives the rules back (idempotent).
     */
    Runnable withoutTheRight(java.util.function.Consumer<io.fabric8.kubernetes.api.model.rbac.ClusterRole> narrow,
            String verb, String resource, String namespace) {
        var rbac = admin.rbac().clusterRoles().withName("torchjob-operator");
        var granted = rbac.get().getRules();
        Runnable giveBack = () -> rbac.edit(role -> {
            role.setRules(granted);
            return role;
        });
        rbac.edit(role -> {
            narrow.accept(role);
            return role;
        });
        List<String> canI = new java.util.ArrayList<>(List.of("auth", "can-i", verb, resource, "--as",
                "system:serviceaccount:" + OperatorInstall.OPERATOR_NAMESPACE + ":" + OperatorInstall.SERVICE_ACCOUNT));
        if (namespace != null) {
            canI.addAll(List.of("-n", namespace));
        }
        try {
            await("the API server denies " + verb + " " + resource).atMost(WAIT)
                    .until(() -> install.cluster.kubectl().run(canI.toArray(String[]::new)).out().strip().equals("no"));
        } catch (RuntimeException | Error e) {
            giveBack.run();
            throw e;
        }
        return giveBack;
    }

    /**
     * Without a right ({@link #withoutTheRight}), the job {@code submit} makes waits with {@code step}'s
     * ReconcileError (the server's "forbidden"), and nothing of it runs; then the rules are given back.
     */
    void waitsWithoutTheRight(OperatorHarness cluster, String job, String step, Runnable giveBack, Runnable submit) {
        try {
            submit.run();
            cluster.awaitJob(job, j -> step.equals(reasonOf(j, JobCondition.RECONCILE_ERROR)));
            assertTrue(messageOf(cluster.job(job), JobCondition.RECONCILE_ERROR).contains("forbidden"),
                    messageOf(cluster.job(job), JobCondition.RECONCILE_ERROR));
            await("nothing of it runs").during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10))
                    .until(() -> names(cluster, job + "-").isEmpty() && workloadOf(cluster, job) == null);
        } finally {
            giveBack.run();
        }
    }

    /** The namespace's queues, and the job "early" run without a queue label by an operator of default settings; its pods' UIDs. */
    Set<String> runningWithoutAQueue(OperatorHarness cluster) throws Exception {
        kueue().queues(cluster.namespace, "4");
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            cluster.submit(t9kJobLabelled("early", "{}", 1, "100m"));
            cluster.awaitPodNames("early-master-0", "early-worker-0");
            cluster.runAll();
            cluster.awaitPhase("early", JobPhase.Running);
            return uids(cluster, "early-");
        }
    }

    /** A LocalQueue named default in the namespace, onto its ClusterQueue. */
    void defaultLocalQueue(OperatorHarness cluster) {
        install.cluster.kubectl().runWithInput("""
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: LocalQueue
                metadata: {name: default, namespace: %1$s}
                spec: {clusterQueue: %1$s}
                """.formatted(cluster.namespace), "apply", "--server-side", "-f", "-").orFail();
    }

    void queueLabel(OperatorHarness cluster, String job, String queue) {
        install.cluster.kubectl().run("label", "--overwrite", "pytorchtrainingjob", job, "-n", cluster.namespace,
                queue == null ? "kueue.x-k8s.io/queue-name-" : "kueue.x-k8s.io/queue-name=" + queue).orFail();
    }

    /** Both pods ungated by Kueue, on the two hosts of rack r2, as the admission's topology assignment says. */
    static void assertPlacedInRackR2(OperatorHarness cluster, String... pods) {
        await().atMost(WAIT).until(() -> Stream.of(pods).map(cluster::pod).allMatch(p -> p != null
                && p.getSpec().getNodeName() != null && p.getSpec().getSchedulingGates().isEmpty()));
        Set<String> hosts = Stream.of(pods).map(p -> cluster.pod(p).getSpec().getNodeName()).collect(Collectors.toSet());
        assertEquals(Set.of("tas-r2-a", "tas-r2-b"), hosts, "one rank per host, both in the rack with room for the two");
        for (String pod : pods) {
            assertEquals(cluster.pod(pod).getSpec().getNodeName(),
                    cluster.pod(pod).getSpec().getNodeSelector().get("kubernetes.io/hostname"), "the host Kueue assigned");
        }
    }

    /**
     * docs/kueue.md's other configuration, with the real Kueue: its own {@code kubeflow.org/pytorchjob}
     * integration on. Kueue's webhook suspends the new PyTorchJob and Kueue makes its Workload; the
     * operator makes none of its own, says so once (a {@code WorkloadNotOurs} event), creates no pod
     * while the job is suspended, and runs it as Kubeflow's operator would once Kueue admits it and
     * lifts the suspension. Last: Kueue keeps this configuration until the tests end.
     */
    @Test
    @Order(100)
    void withKueuesOwnPyTorchJobIntegrationKueueQueuesThePyTorchJobAndTheOperatorRunsItWhenUnsuspended() throws Exception {
        kueue().restartWithItsOwnPyTorchJobIntegration();
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("kueue-own");
            kueue().queues(cluster.namespace, "4");
            cluster.submitPyTorchJob(pytorchJob("kf", "low", 2, "100m"));
            PyTorchJob submitted = cluster.pytorchJob("kf");
            assertEquals(Boolean.TRUE, submitted.getSpec().runPolicy.suspend, "Kueue's webhook suspends the new job");

            await().atMost(WAIT).until(() -> workloads(cluster.namespace).size() == 1);
            GenericKubernetesResource theirs = workloads(cluster.namespace).get(0);
            assertEquals("kf", theirs.getMetadata().getOwnerReferences().get(0).getName(), "Kueue's Workload for the job");
            cluster.awaitEvent("WorkloadNotOurs", "");
            await().atMost(WAIT).until(() -> names(cluster, "kf-").size() == 3);
            assertEquals(Boolean.FALSE, cluster.pytorchJob("kf").getSpec().runPolicy.suspend, "admitted: Kueue lifted the suspension");
            assertEquals("kwok", cluster.pod("kf-worker-0").getSpec().getNodeSelector().get("type"), "the flavor's node label, set by Kueue");
            cluster.runAll();
            cluster.awaitState("kf", "Running");
            assertEquals(1, workloads(cluster.namespace).size(), "no second Workload");
            assertEquals(1, cluster.events().stream().filter(e -> "WorkloadNotOurs".equals(e.getReason())).count(), "said once");
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    static GenericKubernetesResource workloadOf(OperatorHarness cluster, String job) {
        return new KueueStandIn(admin, cluster.namespace).workloadOf(job);
    }

    static List<GenericKubernetesResource> workloads(String namespace) {
        return new KueueStandIn(admin, namespace).workloads();
    }

    static Map<String, Object> condition(GenericKubernetesResource workload, String type) {
        Map<String, Object> condition = workload == null ? null : KueueStandIn.condition(KueueStandIn.status(workload), type);
        return condition == null ? Map.of() : condition;
    }

    /** "status reason" of the PodsReady condition in a Workload status the operator wrote, or null. */
    @SuppressWarnings("unchecked")
    static String podsReadyIn(Map<String, Object> workload) {
        Object status = workload.get("status");
        Object conditions = status instanceof Map<?, ?> m ? m.get("conditions") : null;
        if (!(conditions instanceof List<?> list)) {
            return null;
        }
        return list.stream().map(c -> (Map<String, Object>) c).filter(c -> "PodsReady".equals(c.get("type")))
                .map(c -> c.get("status") + " " + c.get("reason")).findFirst().orElse(null);
    }

    @SuppressWarnings("unchecked")
    static int requeueCount(GenericKubernetesResource workload) {
        Object state = workload == null ? null : KueueStandIn.status(workload).get("requeueState");
        return state instanceof Map<?, ?> m && m.get("count") instanceof Number n ? n.intValue() : 0;
    }

    static Set<String> uids(OperatorHarness cluster, String prefix) {
        return cluster.pods().stream().filter(p -> p.getMetadata().getName().startsWith(prefix) && p.getMetadata().getDeletionTimestamp() == null)
                .map(p -> p.getMetadata().getUid()).collect(Collectors.toSet());
    }

    static List<String> names(OperatorHarness cluster, String... prefixes) {
        return cluster.pods().stream().map(Pod::getMetadata).map(m -> m.getName())
                .filter(n -> List.of(prefixes).stream().anyMatch(n::startsWith)).sorted().toList();
    }

    static String reasonOf(PyTorchTrainingJob job, String type) {
        return job.getStatus().conditions.stream().filter(c -> type.equals(c.type)).map(c -> c.reason).findFirst().orElse(null);
    }

    static String messageOf(PyTorchTrainingJob job, String type) {
        return job == null || job.getStatus() == null ? null
                : job.getStatus().conditions.stream().filter(c -> type.equals(c.type)).map(c -> c.message).findFirst().orElse(null);
    }

    static String queuedMessage(PyTorchJob job) {
        return job == null || job.getStatus() == null ? null : job.getStatus().conditions.stream().filter(c -> "Queued".equals(c.type))
                .map(c -> c.message).findFirst().orElse(null);
    }
}
