package dev.torchjob.operator.cluster.kwok;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.cluster.OnTheSharedOperator;
import dev.torchjob.operator.cluster.OperatorWrites;
import dev.torchjob.operator.cluster.RefusingPolicy;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.reconciler.PyTorchJobTestJobs;
import io.fabric8.kubernetes.api.model.DeletionPropagation;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;

/**
 * The job lifecycle end to end on the real control plane: the real scheduler binds the pods to
 * kwok nodes, kwok runs and ends them, the real garbage collector removes what a deleted job owned.
 */
class JobLifecycleIT extends OnTheSharedOperator {
    static final Duration WAIT = Duration.ofSeconds(60);

    /** A master and two workers, all Running on kwok nodes. */
    static OperatorHarness running(String prefix, String policy, String runPolicy) {
        return install.harness(prefix).runJob(policy, runPolicy);
    }

    @Test
    void aJobIsScheduledRunsAndSucceeds() {
        OperatorHarness cluster = running("success", "OnFailure", "{backoffLimit: 3}");
        Set<String> nodes = cluster.pods().stream().map(p -> p.getSpec().getNodeName()).collect(Collectors.toSet());
        assertTrue(nodes.stream().allMatch(n -> n != null && n.startsWith("kwok-node-")), "bound by kube-scheduler: " + nodes);
        assertNotNull(admin.services().inNamespace(cluster.namespace).withName("j").get(), "the headless Service");

        cluster.kubelet.exit("j-worker-0", 0);
        cluster.kubelet.exit("j-worker-1", 0);
        cluster.kubelet.exit("j-master-0", 0);
        PyTorchTrainingJob done = cluster.awaitPhase("j", JobPhase.Succeeded);
        assertNotNull(done.getStatus().completionTime);
        assertEquals(0, done.getStatus().backoffCount);
        cluster.awaitEvent("Succeeded", "");
    }

    /**
     * The API server refuses a pod (the namespace's ResourceQuota is used up): the job says so in a
     * ReconcileError condition and one FailedCreatePod event with the server's words, however often
     * the operator retries; once the quota allows it, the pod is created and the condition clears.
     */
    @Test
    void aPodRefusedByTheApiServerIsReportedOnceAndCreatedWhenAllowed() {
        OperatorHarness cluster = install.harness("quota");
        admin.resource(new ResourceQuotaBuilder().withNewMetadata().withName("pods").withNamespace(cluster.namespace).endMetadata()
                .withNewSpec().addToHard("pods", new Quantity("2")).endSpec().build()).create();
        await().atMost(WAIT).until(() -> {
            var quota = admin.resourceQuotas().inNamespace(cluster.namespace).withName("pods").get();
            return quota.getStatus() != null && quota.getStatus().getHard() != null; // the quota controller has seen it
        });
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{}"));
        JobCondition error = cluster.awaitJob("j", j -> isTrue(j, JobCondition.RECONCILE_ERROR)).getStatus()
                .conditions.stream().filter(c -> JobCondition.RECONCILE_ERROR.equals(c.type)).findFirst().orElseThrow();
        assertEquals("FailedCreatePod", error.reason);
        assertTrue(error.message.contains("exceeded quota"), error.message);
        // Retries at 1, 2, 4 s... say nothing new.
        await().pollDelay(Duration.ofSeconds(7)).atMost(WAIT).until(() -> true);
        assertEquals(1, cluster.events().stream().filter(e -> "FailedCreatePod".equals(e.getReason())).count(),
                "one event per distinct error");
        assertEquals(2, cluster.pods().size());

        admin.resourceQuotas().inNamespace(cluster.namespace).withName("pods").edit(q -> {
            q.getSpec().getHard().put("pods", new Quantity("3"));
            return q;
        });
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        cluster.runAll();
        PyTorchTrainingJob running = cluster.awaitJob("j", j -> j.getStatus().phase == JobPhase.Running
                && !isTrue(j, JobCondition.RECONCILE_ERROR));
        assertEquals("Recovered", running.getStatus().conditions.stream()
                .filter(c -> JobCondition.RECONCILE_ERROR.equals(c.type)).findFirst().orElseThrow().reason);
        cluster.awaitEvent("PodsCreated", "");
        admin.namespaces().withName(cluster.namespace).delete();
    }

    /**
     * Pods that the scheduler does not place though nodes fit them. The master's binding is refused (a policy of the
     * team's on pods/binding, as a webhook there can): the real kube-scheduler fails on it and retries; the workers carry a
     * scheduling gate of the template's that nobody lifts, so the scheduler never looks at them. The job says both in
     * Kubernetes' words (SchedulerError at once, SchedulingGated once held a minute: through the operator's pod cache and
     * its own look again), one event per pod and cause, counts nothing, and runs once the gates and the policy are gone.
     */
    @Test
    void podsTheSchedulerFailsOnOrThatGatesHoldAreSaidAndStartOnceFreed() {
        OperatorHarness cluster = install.harness("bind-refused");
        String ns = cluster.namespace;
        try (RefusingPolicy refusing = RefusingPolicy.apply(kubectl, ns, "{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], "
                + "resources: [pods/binding]}", "bindings are refused by the team's policy")) {
            // The policy is in force once a pod of the namespace is refused its binding (the API server loads it in a moment).
            java.util.concurrent.atomic.AtomicInteger probes = new java.util.concurrent.atomic.AtomicInteger();
            await().atMost(WAIT).until(() -> {
                String probe = "probe-" + probes.incrementAndGet();
                admin.pods().inNamespace(ns).resource(new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata().withName(probe)
                        .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("pause").endContainer().endSpec().build()).create();
                Pod placed = await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> cluster.pod(probe),
                        pod -> pod.getSpec().getNodeName() != null || schedulerError(pod).isPresent());
                admin.pods().inNamespace(ns).withName(probe).withGracePeriod(0).delete();
                return placed.getSpec().getNodeName() == null;
            });
            String job = OperatorHarness.job("j", "OnFailure", "{backoffLimit: 0}").replace(
                    "replicas: 2\n    template: {spec: {containers:", "replicas: 2\n    template: {spec: {schedulingGates: [{name: example.com/quota}], containers:");
            assertTrue(job.contains("schedulingGates"), job);
            cluster.submit(job);
            cluster.awaitEvent("ReplicaCannotStart", "bindings are refused by the team's policy");
            // Said a minute after the pods were made: the harness's own wait is shorter.
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() -> {
                JobCondition condition = cluster.condition("j", JobCondition.RUNNING);
                return condition != null && condition.message != null && condition.message.contains("scheduling gates");
            });
            JobCondition running = cluster.condition("j", JobCondition.RUNNING);
            System.out.printf("pods the scheduler does not place: %s (after %d probe pods)%n", running.message, probes.get());
            assertEquals("False", running.status);
            assertTrue(running.message.startsWith("pod j-master-0 cannot be scheduled (the scheduler's error, which it retries): "
                    + "running Bind plugin \"DefaultBinder\": pods \"j-master-0\" is forbidden: "), running.message);
            assertTrue(running.message.contains("bindings are refused by the team's policy"), running.message);
            for (String worker : List.of("j-worker-0", "j-worker-1")) {
                assertTrue(running.message.contains("pod " + worker + " is held back by its scheduling gates (example.com/quota) since "
                        + cluster.pod(worker).getMetadata().getCreationTimestamp()), running.message);
            }
            assertEquals(3, cluster.events().stream().filter(e -> "ReplicaCannotStart".equals(e.getReason())).count(), "one per pod and cause");
            for (String worker : List.of("j-worker-0", "j-worker-1")) {
                kubectl.run("patch", "pod", worker, "-n", ns, "--type=json", "-p", "[{\"op\": \"remove\", \"path\": \"/spec/schedulingGates\"}]")
                        .orFail();
            }
        }
        await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> cluster.pods().stream()
                .allMatch(p -> p.getSpec().getNodeName() != null));
        cluster.runAll();
        PyTorchTrainingJob started = cluster.awaitPhase("j", JobPhase.Running);
        assertEquals(0, started.getStatus().backoffCount, "nothing counted under backoffLimit 0");
        assertTrue(cluster.condition("j", JobCondition.RUNNING).isTrue());
        admin.namespaces().withName(ns).delete();
    }

    static java.util.Optional<String> schedulerError(Pod pod) {
        return pod == null || pod.getStatus() == null || pod.getStatus().getConditions() == null ? java.util.Optional.empty()
                : pod.getStatus().getConditions().stream().filter(c -> "PodScheduled".equals(c.getType()) && "SchedulerError".equals(c.getReason()))
                        .map(c -> c.getMessage()).findFirst();
    }

    /**
     * A replica dies with a long traceback: its end (1024 characters) reaches the Warning event, the
     * Failed condition and the replica's lastFailure.
     */
    @Test
    void aFailedReplicasLastOutputIsInTheEventTheConditionAndTheStatus() {
        OperatorHarness cluster = running("crash", "Never", "{backoffLimit: 3}");
        String traceback = "Traceback (most recent call last):\n" + "  File \"train.py\", line 1, in step\n".repeat(100)
                + "ValueError: the line that matters";
        cluster.kubelet.fail("j-worker-1", 1, traceback);
        PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
        assertTrue(cluster.condition("j", "Failed").message.endsWith("ValueError: the line that matters"));
        String lastFailure = failed.getStatus().tasks.get(1).replicas.get(1).lastFailure;
        assertTrue(lastFailure.startsWith("pod j-worker-1 (container pytorch) exited with code 1 (Error)")
                && lastFailure.endsWith("ValueError: the line that matters"), lastFailure);
        cluster.awaitEvent("ReplicaFailed", "ValueError: the line that matters");
        String event = cluster.events().stream().filter(e -> "ReplicaFailed".equals(e.getReason())).findFirst().orElseThrow().getMessage();
        assertTrue(event.startsWith("pod j-worker-1") && event.endsWith("ValueError: the line that matters"), event);
        admin.namespaces().withName(cluster.namespace).delete();
    }

    /** One replica ending per restart policy, as docs/when-things-fail.md's table says. */
    @ParameterizedTest(name = "{0}: worker {1} -> {2}")
    @CsvSource({
            "OnFailure, exit 1, restart",
            "ExitCode, oom, restart",
            "ExitCode, exit 1, ReplicaFailedPermanently",
            "Never, exit 1, ReplicaFailedPermanently",
            "Always, exit 0, restart",
            "OnFailure, evicted, restart",
    })
    void eachRestartPolicyDecidesAsDocumented(String policy, String ending, String outcome) {
        OperatorHarness cluster = running("policy", policy, "{backoffLimit: 3}");
        String oldUid = cluster.pod("j-worker-1").getMetadata().getUid();
        switch (ending) {
            case "exit 1" -> cluster.kubelet.exit("j-worker-1", 1);
            case "exit 0" -> cluster.kubelet.exit("j-worker-1", 0);
            case "oom" -> cluster.kubelet.oomKill("j-worker-1");
            case "evicted" -> cluster.kubelet.evict("j-worker-1");
            default -> throw new IllegalArgumentException(ending);
        }
        if (outcome.equals("restart")) {
            cluster.awaitNewPod("j-worker-1", oldUid);
            PyTorchTrainingJob restarted = cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
            assertEquals(1, restarted.getStatus().tasks.get(1).restartCount);
            cluster.kubelet.run("j-worker-1");
            cluster.kubelet.exit("j-master-0", 0);
            assertEquals(1, cluster.awaitPhase("j", JobPhase.Succeeded).getStatus().backoffCount);
        } else {
            PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
            assertEquals(outcome, cluster.condition("j", "Failed").reason);
            assertNotNull(failed.getStatus().completionTime);
            cluster.awaitEvent("Failed", "j-worker-1");
        }
        admin.namespaces().withName(cluster.namespace).delete();
    }

    @Test
    void theBudgetIsSharedByAllReplicasAndSpentExactly() {
        OperatorHarness cluster = running("budget", "OnFailure", "{backoffLimit: 1}");
        String workerUid = cluster.pod("j-worker-0").getMetadata().getUid();
        cluster.kubelet.exit("j-worker-0", 1);
        cluster.awaitNewPod("j-worker-0", workerUid);
        cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        cluster.kubelet.exit("j-master-0", 2);
        PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals("BackoffLimitExceeded", cluster.condition("j", "Failed").reason);
        assertEquals(1, failed.getStatus().backoffCount);
        admin.namespaces().withName(cluster.namespace).delete();
    }

    @Test
    void theDeadlineFailsTheJobWithoutAnyPodEvent() {
        OperatorHarness cluster = running("deadline", "OnFailure", "{activeDeadlineSeconds: 3}");
        Instant started = Instant.parse(cluster.job("j").getStatus().startTime);
        PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals("DeadlineExceeded", cluster.condition("j", "Failed").reason);
        Duration after = Duration.between(started, Instant.parse(failed.getStatus().completionTime));
        // Not before the deadline, and by a re-check the operator asked for: without one nothing would look again for hours.
        assertTrue(after.compareTo(Duration.ofSeconds(3)) >= 0 && after.compareTo(Duration.ofSeconds(30)) < 0, "failed after " + after);
        await().atMost(WAIT).until(() -> cluster.pods().isEmpty()); // unfinished pods are deleted
        admin.namespaces().withName(cluster.namespace).delete();
    }

    @ParameterizedTest(name = "cleanUpPolicy {0} leaves {1}")
    @CsvSource(delimiter = ';', value = {
            "None; j-master-0 j-worker-0 j-worker-1",
            "Unfinished; j-master-0 j-worker-0",
            "All; ''",
    })
    void eachCleanUpPolicyLeavesWhatItSays(String policy, String left) {
        OperatorHarness cluster = running("cleanup", "OnFailure", "{cleanUpPolicy: " + policy + "}");
        cluster.kubelet.exit("j-worker-0", 0);
        cluster.awaitJob("j", j -> "Succeeded".equals(phaseOf(cluster.pod("j-worker-0"))));
        cluster.kubelet.exit("j-master-0", 0);
        cluster.awaitPhase("j", JobPhase.Succeeded);
        List<String> expected = left.isBlank() ? List.of() : List.of(left.split(" "));
        await().atMost(WAIT).until(() -> names(cluster.pods()).equals(expected));
        admin.namespaces().withName(cluster.namespace).delete();
    }

    @ParameterizedTest
    @CsvSource({"Background", "Foreground"})
    void deletingAJobRemovesItsPodsAndServiceThroughTheGarbageCollector(String policy) {
        DeletionPropagation propagation = DeletionPropagation.valueOf(policy.toUpperCase());
        OperatorHarness cluster = running("gc", "OnFailure", "{backoffLimit: 3}");
        admin.resources(PyTorchTrainingJob.class).inNamespace(cluster.namespace).withName("j")
                .withPropagationPolicy(propagation).delete();
        if (propagation == DeletionPropagation.FOREGROUND) {
            // Foreground: the job stays, marked, until the collector has removed what blocks its deletion.
            PyTorchTrainingJob deleting = cluster.job("j");
            assertTrue(deleting == null || deleting.getMetadata().getFinalizers().contains("foregroundDeletion"));
        }
        await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> cluster.pods().isEmpty()
                && admin.services().inNamespace(cluster.namespace).list().getItems().isEmpty()
                && cluster.job("j") == null);
        assertFalse(cluster.events().stream().anyMatch(e -> "FailedCreatePod".equals(e.getReason())),
                "the operator did not recreate pods of a job being deleted");
        admin.namespaces().withName(cluster.namespace).delete();
    }

    /**
     * A namespace deleted while jobs of both kinds run in it: the namespace controller deleting their pods
     * is no failure. Nothing is counted, created or said; at most one create per job is even tried and
     * refused (the refusal is how the operator learns the namespace is going away), and the namespace goes.
     */
    @Test
    void aNamespaceBeingDeletedTakesItsJobsWithNothingCountedCreatedOrSaid() throws Exception {
        OperatorHarness cluster = running("ns-deleted", "OnFailure", "{backoffLimit: 3}");
        cluster.submitPyTorchJob(PyTorchJobTestJobs.job("k", "OnFailure", "{backoffLimit: 3}"));
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1", "k-master-0", "k-worker-0", "k-worker-1");
        cluster.runAll();
        cluster.awaitState("k", "Running");
        boolean audited = java.nio.file.Files.exists(install.cluster.auditLog());
        OperatorWrites before = audited ? OperatorWrites.read(install.cluster) : null;
        double restartsBefore = restartsCounted(cluster.namespace);

        admin.namespaces().withName(cluster.namespace).delete();
        await().atMost(WAIT.multipliedBy(2)).pollInterval(Duration.ofMillis(500))
                .until(() -> admin.namespaces().withName(cluster.namespace).get() == null);

        assertEquals(restartsBefore, restartsCounted(cluster.namespace), "no restart counted");
        if (!audited) {
            return; // a cluster the tests did not start: no audit log of the operator's writes
        }
        OperatorWrites after = OperatorWrites.read(install.cluster);
        for (String resource : List.of("events", "pods", "services")) {
            assertEquals(before.count(cluster.namespace, "create", resource, 201), after.count(cluster.namespace, "create", resource, 201),
                    "no " + resource + " created once the namespace was being deleted");
        }
        long refused = after.count(w -> cluster.namespace.equals(w.namespace()) && "create".equals(w.verb()) && w.code() == 403);
        assertTrue(refused <= 2, refused + " refused creates for 2 jobs");
    }

    /** The operator's count of restarts in a namespace, as Prometheus would scrape it. */
    static double restartsCounted(String namespace) throws Exception {
        return install.operator().metrics().lines()
                .filter(l -> l.startsWith("training_operator_jobs_restarted_total{") && l.contains("namespace=\"" + namespace + "\""))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }

    /**
     * A rank's node is lost (kwok stops playing its kubelet) and another rank's fault restarts the group: the lost
     * rank's pod is never gone, so its replica's new pod cannot be created. A minute after its grace period the job
     * says so, naming the node and what to do (Running condition, the replica's cannotStart, one event), and counts
     * nothing more; the pod force-deleted with the real kubectl as it says, the group starts anew and succeeds.
     */
    @Test
    void aRankOnALostNodeHoldsItsGroupsRestartAndTheJobSaysWhatToDo() {
        install.cluster.nodeApart("kwok-lost-0", "test.torchjob.dev/lost");
        OperatorHarness cluster = install.harness("lost-node");
        cluster.submit("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: j}
                spec:
                  runPolicy: {backoffLimit: 2}
                  replicaSpecs:
                  - type: master
                    restartPolicy: OnFailure
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                  - type: worker
                    restartPolicy: OnFailure
                    template:
                      spec:
                        nodeSelector: {kubernetes.io/hostname: kwok-lost-0}
                        tolerations: [{key: test.torchjob.dev/lost, operator: Exists, effect: NoSchedule}]
                        containers: [{name: pytorch, image: torch, command: [python, train.py]}]
                """);
        cluster.awaitPodNames("j-master-0", "j-worker-0");
        cluster.runAll();
        cluster.awaitPhase("j", JobPhase.Running);
        String lostUid = cluster.pod("j-worker-0").getMetadata().getUid();
        try {
            install.cluster.kubeletGone("kwok-lost-0");
            cluster.kubelet.oomKill("j-master-0");
            cluster.awaitEvent("JobRestarting", "pod j-master-0 (container pytorch) exited with code 137 (OOMKilled)");
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
                    .until(() -> "Terminating".equals(cluster.condition("j", JobCondition.RUNNING).reason));
            JobCondition running = cluster.condition("j", JobCondition.RUNNING);
            assertEquals("False", running.status);
            assertTrue(running.message.startsWith("pod j-worker-0 is still terminating, its grace period ended at "), running.message);
            assertTrue(running.message.contains("node kwok-lost-0 has not confirmed that it stopped")
                    && running.message.contains("`kubectl delete pod j-worker-0 --force --grace-period=0`"), running.message);
            PyTorchTrainingJob held = cluster.job("j");
            assertEquals("Terminating", held.getStatus().tasks.get(1).replicas.get(0).cannotStart.reason);
            assertEquals(1, held.getStatus().backoffCount, "nothing counted for the wait");
            assertEquals(List.of(lostUid), cluster.pods().stream().map(p -> p.getMetadata().getUid()).toList(),
                    "the new group waits for the old one to be gone");
            cluster.awaitEvent("ReplicaCannotStart", "pod j-worker-0 is still terminating");

            kubectl.run("delete", "pod", "j-worker-0", "-n", cluster.namespace, "--force", "--grace-period=0").orFail();
            install.cluster.kubeletBack("kwok-lost-0");
            cluster.awaitNewPod("j-worker-0", lostUid);
            cluster.awaitPodNames("j-master-0", "j-worker-0");
            cluster.runAll();
            PyTorchTrainingJob again = cluster.awaitJob("j", j -> j.getStatus().phase == JobPhase.Running
                    && !"Terminating".equals(cluster.condition("j", JobCondition.RUNNING).reason));
            assertEquals(null, again.getStatus().tasks.get(1).replicas.get(0).cannotStart);
            cluster.kubelet.exit("j-master-0", 0);
            PyTorchTrainingJob done = cluster.awaitPhase("j", JobPhase.Succeeded);
            assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
            assertEquals(1, cluster.events().stream().filter(e -> "ReplicaCannotStart".equals(e.getReason())).count(), "said once");
        } finally {
            install.cluster.kubeletBack("kwok-lost-0");
        }
        admin.namespaces().withName(cluster.namespace).delete();
    }

    static boolean isTrue(PyTorchTrainingJob job, String type) {
        return job.getStatus() != null && job.getStatus().conditions.stream().anyMatch(c -> type.equals(c.type) && c.isTrue());
    }

    static String phaseOf(Pod pod) {
        return pod == null || pod.getStatus() == null ? null : pod.getStatus().getPhase();
    }

    static List<String> names(List<Pod> pods) {
        return pods.stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                .map(p -> p.getMetadata().getName()).sorted().toList();
    }
}
