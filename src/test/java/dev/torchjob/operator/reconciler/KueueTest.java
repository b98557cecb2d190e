package dev.torchjob.operator.reconciler;

import dev.torchjob.operator.testing.UserEdits;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.testing.KueueStandIn;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.TolerationBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.junit.QuarkusTest;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/**
 * Queueing with Kueue against the mock API server: the test plays Kueue's controllers
 * ({@link KueueStandIn}); the operator must speak the rest of the Workload protocol itself.
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KueueTest {
    static final String QUEUE = "team-a-user-queue";

    @Inject
    KubernetesClient client;

    @Inject
    MeterRegistry registry;

    static String t9kJob(String name, String extraSpec) {
        return """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %s, labels: {kueue.x-k8s.io/queue-name: %s}}
                spec:
                  %s
                  replicaSpecs:
                  - type: master
                    template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "1"}}}]}}
                  - type: worker
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "1"}}}]}}
                """.formatted(name, QUEUE, extraSpec);
    }

    static Toleration toleration(String key) {
        return new TolerationBuilder().withKey(key).withOperator("Exists").withEffect("NoSchedule").build();
    }

    KueueStandIn kueue(String namespace) {
        return kueue(client, namespace);
    }

    /** Kueue installed, with the two flavors {@link #admitWhole} admits on. */
    static KueueStandIn kueue(KubernetesClient client, String namespace) {
        KueueStandIn.installNamesOnly(client);
        KueueStandIn kueue = new KueueStandIn(client, namespace);
        kueue.flavor("a100", Map.of("gpu", "a100"), List.of(KueueStandIn.toleration("gpu")));
        kueue.flavor("spot", Map.of("lifecycle", "spot"), List.of(KueueStandIn.toleration("spot")));
        return kueue;
    }

    /** Admits the whole job: its master on the spot flavor, its workers on the a100 one. */
    static void admitWhole(KueueStandIn kueue, String workload) {
        kueue.admit(workload, "gpu-cq", Map.of("master", 1, "worker", 2), Map.of("master", "spot", "worker", "a100"), List.of());
    }

    /** Submits the T9k job "j" to the queue and returns its Workload's name, once the operator made it. */
    static String queued(OperatorHarness cluster, KueueStandIn kueue, String extraSpec) {
        cluster.submit(t9kJob("j", extraSpec));
        return kueue.awaitWorkloadOf("j").getMetadata().getName();
    }

    /** The reason of the job's Queued condition, or null. */
    static String queuedReason(dev.torchjob.operator.api.PyTorchTrainingJob job) {
        return job.getStatus().conditions.stream().filter(c -> JobCondition.QUEUED.equals(c.type)).map(c -> c.reason).findFirst().orElse(null);
    }

    void setRunMode(String namespace, String runModeYaml) {
        UserEdits.edit(client.resources(dev.torchjob.operator.api.PyTorchTrainingJob.class).inNamespace(namespace).withName("j"), j -> {
            j.getSpec().runMode = runModeYaml == null ? null
                    : client.getKubernetesSerialization().unmarshal(runModeYaml, dev.torchjob.operator.api.RunMode.class);
            return j;
        });
    }

    /** Runs before Kueue's API is installed into the mock server. */
    @Test
    @Order(1)
    void withoutKueueAQueuedJobWaitsAndSaysWhy() {
        OperatorHarness cluster = new OperatorHarness(client, "no-kueue");
        cluster.submit(t9kJob("j", ""));
        cluster.awaitJob("j", j -> "KueueUnavailable".equals(queuedReason(j)));
        assertEquals(JobPhase.Pending, cluster.job("j").getStatus().phase);
        assertTrue(cluster.condition("j", JobCondition.QUEUED).message.contains("kueue.x-k8s.io/v1beta2"));
        cluster.awaitEvent("KueueUnavailable", "not installed");
        assertEquals(List.of(), cluster.pods());
    }

    @Test
    @Order(2)
    void aQueuedJobRunsOnlyOnceAdmittedWhereTheAdmissionSays() {
        OperatorHarness cluster = new OperatorHarness(client, "admit");
        KueueStandIn kueue = kueue("admit");
        cluster.submit(t9kJob("j", ""));
        GenericKubernetesResource workload = kueue.awaitWorkloadOf("j");
        String name = workload.getMetadata().getName();
        assertTrue(name.matches("pytorchtrainingjob-j-[0-9a-f]{5}"), name);
        assertEquals(QUEUE, workload.get("spec", "queueName"));
        assertEquals(List.of("master", "worker"), List.of(workload.get("spec", "podSets", 0, "name"), workload.get("spec", "podSets", 1, "name")));
        assertEquals(2, (Integer) workload.get("spec", "podSets", 1, "count"));
        assertEquals(Map.of("podIndexLabel", "tensorstack.dev/replica-index"), workload.get("spec", "podSets", 1, "topologyRequest"),
                "the ranks' order, for a flavor with a topology");
        assertEquals(List.of("kueue.x-k8s.io/resource-in-use"), workload.getMetadata().getFinalizers());
        assertEquals(cluster.job("j").getMetadata().getUid(), workload.getMetadata().getLabels().get("kueue.x-k8s.io/job-uid"));

        cluster.awaitJob("j", j -> j.getStatus().conditions.stream().anyMatch(c -> JobCondition.QUEUED.equals(c.type) && c.isTrue()));
        assertEquals(JobPhase.Pending, cluster.job("j").getStatus().phase);
        assertTrue(cluster.condition("j", JobCondition.QUEUED).message.contains(QUEUE));
        assertEquals(List.of(), cluster.pods(), "no pod before admission");

        kueue.admit(name, "gpu-cq", Map.of("master", 1, "worker", 2), Map.of("master", "spot", "worker", "a100"),
                List.of(Map.of("name", "provisioning", "podSetUpdates", List.of(Map.of("name", "worker", "labels", Map.of("provisioned", "yes"),
                        "nodeSelector", Map.of("zone", "b"), "tolerations", List.of(KueueStandIn.toleration("provisioned")))))));
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        Pod worker = cluster.pod("j-worker-1");
        assertEquals(Map.of("gpu", "a100", "zone", "b"), worker.getSpec().getNodeSelector());
        assertEquals(List.of(toleration("gpu"), toleration("provisioned")), worker.getSpec().getTolerations());
        assertEquals("worker", worker.getMetadata().getLabels().get("kueue.x-k8s.io/podset"));
        assertEquals("yes", worker.getMetadata().getLabels().get("provisioned"));
        assertFalse(worker.getMetadata().getLabels().containsKey("kueue.x-k8s.io/queue-name"),
                "the queue label stays off the pods: Kueue's pod integration would gate them");
        Pod master = cluster.pod("j-master-0");
        assertEquals(Map.of("lifecycle", "spot"), master.getSpec().getNodeSelector());
        assertEquals(List.of(toleration("spot")), master.getSpec().getTolerations());
        cluster.awaitEvent("Admitted", "Admitted by ClusterQueue gpu-cq");

        cluster.runAll();
        cluster.awaitPhase("j", JobPhase.Running);
        assertEquals("Admitted", cluster.condition("j", JobCondition.QUEUED).reason);
    }

    @Test
    @Order(3)
    void anEvictedJobLosesItsPodsCountsNothingReleasesTheQuotaAndResumesWhenReadmitted() {
        OperatorHarness cluster = new OperatorHarness(client, "evict");
        KueueStandIn kueue = kueue("evict");
        String name = queued(cluster, kueue, "runPolicy: {backoffLimit: 0}");
        admitWhole(kueue, name);
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        cluster.runAll();
        cluster.awaitPhase("j", JobPhase.Running);

        kueue.evict(name, "Preempted", "Preempted to accommodate a higher priority Workload");
        await().atMost(OperatorHarness.WAIT).until(() -> cluster.pods().isEmpty());
        await().atMost(OperatorHarness.WAIT).until(() -> "False".equals(
                KueueStandIn.condition(KueueStandIn.status(kueue.workload(name)), "QuotaReserved").get("status")));
        Map<String, Object> released = KueueStandIn.status(kueue.workload(name));
        assertNull(released.get("admission"), "the reservation is released once the pods are gone");
        assertEquals("True", KueueStandIn.condition(released, "Requeued").get("status"));
        assertEquals("False", KueueStandIn.condition(released, "Admitted").get("status"));
        var evicted = cluster.awaitJob("j", j -> "Requeued".equals(queuedReason(j)));
        assertEquals(JobPhase.Pending, evicted.getStatus().phase);
        assertEquals(0, evicted.getStatus().backoffCount, "an eviction is not a failure, even with backoffLimit 0");
        cluster.awaitEvent("Evicted", "Preempted to accommodate");

        admitWhole(kueue, name);
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        cluster.awaitEvent("Admitted", "the job resumes after its eviction");
        cluster.runAll();
        assertEquals(0, cluster.awaitPhase("j", JobPhase.Running).getStatus().backoffCount);
        assertEquals(1.0, registry.get("pytorchtrainingjob_queue_evictions").tag("job_namespace", "evict").tag("reason", "Preempted")
                .counter().count());
        assertEquals(2, registry.get("pytorchtrainingjob_queue_wait").tag("job_namespace", "evict").timer().count(),
                "the first admission and the readmission");
    }

    @Test
    @Order(4)
    void pausingDeactivatesTheWorkloadAndResumingActivatesItAgain() {
        OperatorHarness cluster = new OperatorHarness(client, "pause");
        KueueStandIn kueue = kueue("pause");
        String name = queued(cluster, kueue, "");
        admitWhole(kueue, name);
        cluster.awaitPods(3);

        setRunMode("pause", "pause:\n  enabled: true\n");
        await().atMost(OperatorHarness.WAIT).until(() -> Boolean.FALSE.equals(kueue.workload(name).get("spec", "active")));
        kueue.evict(name, "InactiveWorkload", "The workload is deactivated");
        await().atMost(OperatorHarness.WAIT).until(() -> cluster.pods().isEmpty() && "False".equals(
                KueueStandIn.condition(KueueStandIn.status(kueue.workload(name)), "QuotaReserved").get("status")));
        cluster.awaitPhase("j", JobPhase.Paused);

        setRunMode("pause", null);
        await().atMost(OperatorHarness.WAIT).until(() -> Boolean.TRUE.equals(kueue.workload(name).get("spec", "active")));
        assertEquals(List.of(), cluster.pods(), "resumed, but not admitted again yet");
        admitWhole(kueue, name);
        cluster.awaitPods(3);
    }

    @Test
    @Order(5)
    void anElasticJobAsksForItsMaximumAndRunsWhatIsAdmitted() {
        OperatorHarness cluster = new OperatorHarness(client, "elastic");
        KueueStandIn kueue = kueue("elastic");
        cluster.submit(OperatorHarness.elasticJob(2, 6, 2).replace("metadata: {name: el}",
                "metadata: {name: el, labels: {kueue.x-k8s.io/queue-name: " + QUEUE + "}}"));
        GenericKubernetesResource workload = kueue.awaitWorkloadOf("el");
        assertEquals(6, (Integer) workload.get("spec", "podSets", 0, "count"));
        assertEquals(2, (Integer) workload.get("spec", "podSets", 0, "minCount"));
        kueue.admit(workload.getMetadata().getName(), "gpu-cq", Map.of("node", 4), Map.of("node", "a100"), List.of());
        cluster.awaitPodNames("el-node-0", "el-node-1", "el-node-2", "el-node-3");
    }

    @Test
    @Order(6)
    void aFinishedJobFinishesItsWorkloadAndADeletedJobLeavesNoWorkloadStuck() {
        OperatorHarness cluster = new OperatorHarness(client, "finish");
        KueueStandIn kueue = kueue("finish");
        String name = queued(cluster, kueue, "");
        admitWhole(kueue, name);
        cluster.awaitPods(3);
        cluster.runAll();
        cluster.kubelet.exit("j-master-0", 0);
        cluster.awaitPhase("j", JobPhase.Succeeded);
        await().atMost(OperatorHarness.WAIT).until(() -> kueue.workload(name).getMetadata().getFinalizers() == null
                || kueue.workload(name).getMetadata().getFinalizers().isEmpty());
        Map<String, Object> finished = KueueStandIn.condition(KueueStandIn.status(kueue.workload(name)), "Finished");
        assertEquals(List.of("True", "Succeeded"), List.of(finished.get("status"), finished.get("reason")));

        cluster.submit(t9kJob("gone", ""));
        String queued = kueue.awaitWorkloadOf("gone").getMetadata().getName();
        client.resources(dev.torchjob.operator.api.PyTorchTrainingJob.class).inNamespace("finish").withName("gone").delete();
        // What the garbage collector does next (the mock runs none): delete the dependent Workload.
        client.genericKubernetesResources(KueueStandIn.WORKLOADS).inNamespace("finish").withName(queued).delete();
        await().atMost(OperatorHarness.WAIT).until(() -> kueue.workload(queued) == null);
    }

    @Test
    @Order(6)
    void anAdmissionThatContradictsTheTemplateFailsTheJobAndTheWorkloadAsKueueExpects() {
        OperatorHarness cluster = new OperatorHarness(client, "conflict");
        KueueStandIn kueue = kueue("conflict");
        cluster.submit(t9kJob("j", "").replace("template: {spec: {containers", "template: {spec: {nodeSelector: {gpu: h100}, containers"));
        String name = kueue.awaitWorkloadOf("j").getMetadata().getName();
        kueue.admit(name, "gpu-cq", Map.of("master", 1, "worker", 2), Map.of("master", "a100", "worker", "a100"), List.of());
        var failed = cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals("FailedToStart", cluster.condition("j", JobCondition.FAILED).reason);
        assertTrue(cluster.condition("j", JobCondition.FAILED).message.contains("nodeSelector gpu is h100 and the admission asks for a100"),
                cluster.condition("j", JobCondition.FAILED).message);
        assertEquals(0, failed.getStatus().backoffCount);
        assertEquals(List.of(), cluster.pods(), "no pod was created");
        await().atMost(OperatorHarness.WAIT).until(() -> "FailedToStart".equals(
                KueueStandIn.condition(KueueStandIn.status(kueue.workload(name)), "Finished").get("reason")));
    }

    @Test
    @Order(6)
    void aWorkloadPriorityClassGivesTheWorkloadItsPriorityAndAMissingOneIsSaid() {
        OperatorHarness cluster = new OperatorHarness(client, "priority");
        KueueStandIn kueue = kueue("priority");
        GenericKubernetesResource high = new GenericKubernetesResource();
        high.setApiVersion("kueue.x-k8s.io/v1beta2");
        high.setKind("WorkloadPriorityClass");
        high.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder().withName("high").build());
        high.setAdditionalProperty("value", 1000);
        client.genericKubernetesResources(KueueStandIn.WORKLOAD_PRIORITY_CLASSES).resource(high).createOr(existing -> existing.update());
        cluster.submit(t9kJob("j", "").replace("labels: {", "labels: {kueue.x-k8s.io/priority-class: high, "));
        GenericKubernetesResource workload = kueue.awaitWorkloadOf("j");
        assertEquals(1000, (Integer) workload.get("spec", "priority"));
        assertEquals(Map.of("group", "kueue.x-k8s.io", "kind", "WorkloadPriorityClass", "name", "high"), workload.get("spec", "priorityClassRef"));

        cluster.submit(t9kJob("k", "").replace("labels: {", "labels: {kueue.x-k8s.io/priority-class: urgent, "));
        cluster.awaitJob("k", j -> j.getStatus().conditions.stream().anyMatch(c -> JobCondition.RECONCILE_ERROR.equals(c.type) && c.isTrue()));
        assertTrue(cluster.condition("k", JobCondition.RECONCILE_ERROR).message.contains("WorkloadPriorityClass urgent"),
                cluster.condition("k", JobCondition.RECONCILE_ERROR).message);
        assertNull(kueue.workloadOf("k"));
    }

    @Test
    @Order(7)
    void aJobWithoutTheLabelGetsNoWorkload() {
        OperatorHarness cluster = new OperatorHarness(client, "free");
        kueue("free");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{}"));
        cluster.awaitPods(3);
        assertEquals(List.of(), new KueueStandIn(client, "free").workloads());
    }

    @Test
    @Order(8)
    void aPyTorchJobIsQueuedTheSameWay() {
        OperatorHarness cluster = new OperatorHarness(client, "kf-queue");
        KueueStandIn kueue = kueue("kf-queue");
        PyTorchJob job = cluster.client.getKubernetesSerialization().unmarshal(PyTorchJobTestJobs.job("p", "OnFailure", "{}"), PyTorchJob.class);
        job.getMetadata().setLabels(Map.of("kueue.x-k8s.io/queue-name", QUEUE));
        client.resources(PyTorchJob.class).inNamespace("kf-queue").resource(job).create();
        GenericKubernetesResource workload = kueue.awaitWorkloadOf("p");
        assertTrue(workload.getMetadata().getName().startsWith("pytorchjob-p-"), workload.getMetadata().getName());
        assertEquals(List.of("master", "worker"), List.of(workload.get("spec", "podSets", 0, "name"), workload.get("spec", "podSets", 1, "name")));
        assertEquals(Map.of("podIndexLabel", "training.kubeflow.org/replica-index"), workload.get("spec", "podSets", 0, "topologyRequest"));
        cluster.awaitState("p", "Queued");
        assertEquals(List.of(), cluster.pods());
        kueue.admit(workload.getMetadata().getName(), "gpu-cq", Map.of("master", 1, "worker", 2),
                Map.of("master", "spot", "worker", "a100"), List.of());
        cluster.awaitPodNames("p-master-0", "p-worker-0", "p-worker-1");
        assertEquals(Map.of("gpu", "a100"), cluster.pod("p-worker-0").getSpec().getNodeSelector());
        cluster.runAll();
        cluster.awaitState("p", "Running");
    }

    @Test
    @Order(9)
    void aPyTorchJobWhoseWorkloadKueuesOwnIntegrationMadeIsLeftToThatIntegration() {
        OperatorHarness cluster = new OperatorHarness(client, "kf-own");
        KueueStandIn kueue = kueue("kf-own");
        PyTorchJob job = cluster.client.getKubernetesSerialization().unmarshal(PyTorchJobTestJobs.job("p", "OnFailure",
                "{suspend: true}"), PyTorchJob.class);
        job.getMetadata().setLabels(Map.of("kueue.x-k8s.io/queue-name", QUEUE));
        PyTorchJob created = client.resources(PyTorchJob.class).inNamespace("kf-own").resource(job).create();
        // Kueue's own kubeflow.org/pytorchjob integration: same Workload name, owned by the job, none of our labels.
        GenericKubernetesResource own = new GenericKubernetesResource();
        own.setApiVersion("kueue.x-k8s.io/v1beta2");
        own.setKind("Workload");
        own.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder()
                .withName(dev.torchjob.operator.kueue.KueueWorkload.nameOf(created)).withNamespace("kf-own")
                .withOwnerReferences(new OwnerReferenceBuilder().withApiVersion("kubeflow.org/v1").withKind("PyTorchJob").withName("p")
                        .withUid(created.getMetadata().getUid()).withController(true).build()).build());
        own.setAdditionalProperty("spec", Map.of("queueName", QUEUE, "podSets", List.of()));
        client.genericKubernetesResources(KueueStandIn.WORKLOADS).inNamespace("kf-own").resource(own).create();
        cluster.awaitState("p", "Suspended");
        // Kueue admits and unsuspends the job itself.
        UserEdits.edit(client.resources(PyTorchJob.class).inNamespace("kf-own").withName("p"), p -> {
            p.getSpec().runPolicy.suspend = false;
            return p;
        });
        cluster.awaitPodNames("p-master-0", "p-worker-0", "p-worker-1");
        cluster.awaitEvent("WorkloadNotOurs", "was made by Kueue's own integration");
        assertEquals(1, kueue.workloads().size(), "no second Workload");
        var nodeSelector = cluster.pod("p-master-0").getSpec().getNodeSelector();
        assertTrue(nodeSelector == null || nodeSelector.isEmpty(), "no admission of ours applied: " + nodeSelector);
    }

    @Test
    @Order(10)
    void aMaximumExecutionTimeThatKueueWouldRefuseKeepsTheJobUnqueuedUntilItIsFixedAndTheLimitFollowsTheLabelWhileWaiting() {
        OperatorHarness cluster = new OperatorHarness(client, "max-time");
        KueueStandIn kueue = kueue("max-time");
        cluster.submit(t9kJob("j", "").replace("labels: {", "labels: {kueue.x-k8s.io/max-exec-time-seconds: 1h, "));
        cluster.awaitJob("j", j -> "InvalidQueueRequest".equals(queuedReason(j)));
        assertEquals("Not queued in LocalQueue " + QUEUE + ": the label kueue.x-k8s.io/max-exec-time-seconds is \"1h\": Kueue takes a "
                + "whole number of seconds greater than 0 (at most 2147483647). Fix it to queue the job.",
                cluster.condition("j", JobCondition.QUEUED).message);
        cluster.awaitEvent("InvalidQueueRequest", "max-exec-time-seconds");
        assertEquals(JobPhase.Pending, cluster.job("j").getStatus().phase);
        assertNull(kueue.workloadOf("j"), "nothing asked of Kueue");
        assertEquals(List.of(), cluster.pods());

        setLabel("max-time", "j", "kueue.x-k8s.io/max-exec-time-seconds", "3600");
        GenericKubernetesResource workload = kueue.awaitWorkloadOf("j");
        assertEquals(3600, (Integer) workload.get("spec", "maximumExecutionTimeSeconds"));
        setLabel("max-time", "j", "kueue.x-k8s.io/max-exec-time-seconds", "7200");
        await().atMost(OperatorHarness.WAIT).until(() -> Integer.valueOf(7200).equals(kueue.workloadOf("j").get("spec",
                "maximumExecutionTimeSeconds")));
        setLabel("max-time", "j", "kueue.x-k8s.io/max-exec-time-seconds", "soon");
        cluster.awaitJob("j", j -> "InvalidQueueRequest".equals(queuedReason(j)));
        assertEquals(7200, (Integer) kueue.workloadOf("j").get("spec", "maximumExecutionTimeSeconds"), "a bad value changes nothing");

        setLabel("max-time", "j", "kueue.x-k8s.io/max-exec-time-seconds", "7200");
        admitWhole(kueue, workload.getMetadata().getName());
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        setLabel("max-time", "j", "kueue.x-k8s.io/max-exec-time-seconds", "60");
        cluster.runAll();
        cluster.awaitPhase("j", JobPhase.Running);
        assertEquals(7200, (Integer) kueue.workloadOf("j").get("spec", "maximumExecutionTimeSeconds"), "fixed while quota is held");
    }

    @Test
    @Order(11)
    void aQueueLabelEditIsFollowedWhileTheJobWaitsAndKeptForItsNextWaitWhileItRuns() {
        OperatorHarness cluster = new OperatorHarness(client, "relabel");
        KueueStandIn kueue = kueue("relabel");
        String workload = queued(cluster, kueue, "");
        setLabel("relabel", "j", "kueue.x-k8s.io/queue-name", "team-b-queue");
        await().atMost(OperatorHarness.WAIT).until(() -> "team-b-queue".equals(kueue.workloadOf("j").get("spec", "queueName")));
        assertEquals(workload, kueue.workloadOf("j").getMetadata().getName(), "the same Workload, moved");
        cluster.awaitEvent("QueueChanged", "moves from LocalQueue " + QUEUE + " to team-b-queue");
        cluster.awaitJob("j", j -> cluster.condition("j", JobCondition.QUEUED).message.startsWith("Waiting in LocalQueue team-b-queue"));

        admitWhole(kueue, workload);
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        cluster.runAll();
        cluster.awaitPhase("j", JobPhase.Running);
        List<String> running = cluster.pods().stream().map(p -> p.getMetadata().getUid()).sorted().toList();
        setLabel("relabel", "j", "kueue.x-k8s.io/queue-name", null);
        cluster.awaitEvent("QueueChangeDeferred", "was removed while the job holds quota in LocalQueue team-b-queue");
        assertEquals(running, cluster.pods().stream().map(p -> p.getMetadata().getUid()).sorted().toList(), "it runs on");
        assertEquals(workload, kueue.workloadOf("j").getMetadata().getName(), "its Workload, and the quota, stay until it ends");

        // Waiting, then unlabelled: it leaves the queue and runs without one.
        cluster.submit(t9kJob("k", ""));
        kueue.awaitWorkloadOf("k");
        setLabel("relabel", "k", "kueue.x-k8s.io/queue-name", null);
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1", "k-master-0", "k-worker-0", "k-worker-1");
        assertNull(kueue.workloadOf("k"), "its Workload is gone");
        assertNull(cluster.pod("k-worker-0").getMetadata().getLabels().get("kueue.x-k8s.io/podset"), "no admission");
        cluster.awaitEvent("QueueLeft", "runs without a queue");

        // Running without a queue, then labelled: it runs on.
        cluster.runAll();
        cluster.awaitPhase("k", JobPhase.Running);
        List<String> free = cluster.pods().stream().filter(p -> p.getMetadata().getName().startsWith("k-"))
                .map(p -> p.getMetadata().getUid()).sorted().toList();
        setLabel("relabel", "k", "kueue.x-k8s.io/queue-name", QUEUE);
        cluster.awaitEvent("QueueChangeDeferred", "was set to " + QUEUE + " while the job runs without a queue");
        assertEquals(free, cluster.pods().stream().filter(p -> p.getMetadata().getName().startsWith("k-"))
                .map(p -> p.getMetadata().getUid()).sorted().toList(), "its pods are not stopped");
        assertNull(kueue.workloadOf("k"), "nothing asked of Kueue while it runs");
        assertEquals(JobPhase.Running, cluster.job("k").getStatus().phase);
    }

    @Test
    @Order(12)
    void aNewJobWithoutAQueueIsPutInItsNamespacesDefaultLocalQueueAndAStartedOneRunsOn() {
        OperatorHarness cluster = new OperatorHarness(client, "defaulted");
        KueueStandIn kueue = kueue("defaulted");
        cluster.submit(OperatorHarness.job("early", "OnFailure", "{}"));
        cluster.awaitPodNames("early-master-0", "early-worker-0", "early-worker-1");
        List<String> early = cluster.pods().stream().map(p -> p.getMetadata().getUid()).sorted().toList();

        kueue.localQueue("default", "gpu-cq");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{}"));
        GenericKubernetesResource workload = kueue.awaitWorkloadOf("j");
        assertEquals("default", cluster.job("j").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"), "labelled as Kueue's webhook would");
        assertEquals("default", workload.get("spec", "queueName"));
        cluster.awaitJob("j", j -> j.getStatus().conditions.stream().anyMatch(c -> JobCondition.QUEUED.equals(c.type)
                && c.message.startsWith("Waiting in LocalQueue default")));
        assertEquals(3, cluster.pods().size(), "nothing of it runs until admitted");
        admitWhole(kueue, workload.getMetadata().getName());
        cluster.awaitPodNames("early-master-0", "early-worker-0", "early-worker-1", "j-master-0", "j-worker-0", "j-worker-1");
        assertEquals("gpu-cq", cluster.pod("j-worker-0").getMetadata().getLabels().get("kueue.x-k8s.io/cluster-queue-name"));

        // The job started before the LocalQueue existed: no label, no Workload, its pods untouched.
        assertNull(cluster.job("early").getMetadata().getLabels() == null ? null
                : cluster.job("early").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));
        assertNull(kueue.workloadOf("early"));
        assertEquals(early, cluster.pods().stream().filter(p -> p.getMetadata().getName().startsWith("early-"))
                .map(p -> p.getMetadata().getUid()).sorted().toList());

        // A job that names its queue keeps it; a PyTorchJob is put in the default one the same way.
        cluster.submit(t9kJob("named", ""));
        assertEquals(QUEUE, kueue.awaitWorkloadOf("named").get("spec", "queueName"));
        PyTorchJob job = cluster.client.getKubernetesSerialization().unmarshal(PyTorchJobTestJobs.job("p", "OnFailure", "{}"), PyTorchJob.class);
        client.resources(PyTorchJob.class).inNamespace("defaulted").resource(job).create();
        assertEquals("default", kueue.awaitWorkloadOf("p").get("spec", "queueName"));
        assertEquals("default", cluster.pytorchJob("p").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));

        // Kueue's own namespace is not one it manages: its jobs are never put in a queue.
        OperatorHarness system = new OperatorHarness(client, "kueue-system");
        new KueueStandIn(client, "kueue-system").localQueue("default", "gpu-cq");
        system.submit(OperatorHarness.job("s", "OnFailure", "{}"));
        system.awaitPods(3);
        assertNull(system.job("s").getMetadata().getLabels() == null ? null
                : system.job("s").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));
        assertEquals(List.of(), new KueueStandIn(client, "kueue-system").workloads());
    }

    /** Sets a label of the T9k job {@code job} as `kubectl label` would; null removes it. */
    void setLabel(String namespace, String job, String key, String value) {
        UserEdits.edit(client.resources(dev.torchjob.operator.api.PyTorchTrainingJob.class).inNamespace(namespace).withName(job), j -> {
            if (value == null) {
                j.getMetadata().getLabels().remove(key);
            } else {
                j.getMetadata().getLabels().put(key, value);
            }
            return j;
        });
    }
}
