package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.testing.KueueStandIn;
import dev.torchjob.operator.testing.UserEdits;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/**
 * A cluster whose platform team configured Kueue beyond its defaults and set the operator alike: Kueue
 * manages every job (manageJobsWithoutQueueName; here TORCHJOB_KUEUE_MANAGE_JOBS_WITHOUT_QUEUE_NAME=true),
 * so a new job that names no queue does not start, and a cost-center label goes to the Workloads
 * (labelKeysToCopy; TORCHJOB_KUEUE_LABEL_KEYS_TO_COPY), and a namespace labelled
 * {@code kueue-managed: "false"} is one Kueue leaves alone (managedJobsNamespaceSelector;
 * TORCHJOB_KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR).
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
@TestProfile(KueueConfiguredAlikeTest.SetAlike.class)
class KueueConfiguredAlikeTest {
    public static class SetAlike implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("torchjob.kueue.manage-jobs-without-queue-name", "true",
                    "torchjob.kueue.label-keys-to-copy", "example.com/cost-center,example.com/project",
                    "torchjob.kueue.object-retention.after-deactivated-by-kueue", "2s",
                    "torchjob.kueue.managed-jobs-namespace-selector", OPT_OUT);
        }
    }

    /** Every namespace but those labelled kueue-managed=false, kube-system and Kueue's own. */
    static final String OPT_OUT = """
            matchExpressions:
            - {key: kueue-managed, operator: NotIn, values: ["false"]}
            - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}
            """;

    @Inject
    KubernetesClient client;

    @Test
    void aNewJobWithoutAQueueWaitsUntilItNamesOneOrItsNamespaceGetsADefaultLocalQueueAndItsWorkloadGetsTheLabelsNamed() {
        KueueStandIn kueue = KueueTest.kueue(client, "every");
        OperatorHarness cluster = new OperatorHarness(client, "every");
        cluster.submit(OperatorHarness.job("held", "OnFailure", "{}"));
        awaitHeld(cluster, "held");
        cluster.awaitEvent("QueueNameMissing", "names no LocalQueue");
        assertTrue(cluster.condition("held", JobCondition.QUEUED).message.contains("Label it kueue.x-k8s.io/queue-name=<LocalQueue>"));
        assertEquals(JobPhase.Pending, cluster.job("held").getStatus().phase);
        assertEquals(List.of(), cluster.pods(), "nothing of it runs");
        assertEquals(List.of(), kueue.workloads());

        // Paused and resumed before it ever ran: still held (a pause is no way around the queue).
        pause(cluster, "held", true);
        cluster.awaitPhase("held", JobPhase.Paused);
        pause(cluster, "held", false);
        cluster.awaitJob("held", j -> j.getStatus().phase == JobPhase.Pending && "QueueNameMissing".equals(KueueTest.queuedReason(j)));
        assertEquals(List.of(), cluster.pods());

        // Its user names a queue: queued there, and it runs once admitted.
        UserEdits.edit(client.resources(PyTorchTrainingJob.class).inNamespace("every").withName("held"), j -> {
            j.getMetadata().getLabels().putAll(Map.of("kueue.x-k8s.io/queue-name", KueueTest.QUEUE, "example.com/cost-center", "42",
                    "app", "mnist"));
            return j;
        });
        GenericKubernetesResource workload = kueue.awaitWorkloadOf("held");
        assertEquals(KueueTest.QUEUE, workload.get("spec", "queueName"));
        assertEquals("42", workload.getMetadata().getLabels().get("example.com/cost-center"), "copied, as Kueue's labelKeysToCopy says");
        assertNull(workload.getMetadata().getLabels().get("app"), "a label not named is not copied");
        KueueTest.admitWhole(kueue, workload.getMetadata().getName());
        cluster.awaitPodNames("held-master-0", "held-worker-0", "held-worker-1");

        // Held, then the namespace gets a LocalQueue named default: put in it at once, as a new job would be.
        cluster.submit(OperatorHarness.job("late", "OnFailure", "{}"));
        awaitHeld(cluster, "late");
        kueue.localQueue("default", "gpu-cq");
        assertEquals("default", kueue.awaitWorkloadOf("late").get("spec", "queueName"));
        assertEquals("default", cluster.job("late").getMetadata().getLabels().get("kueue.x-k8s.io/queue-name"));
        assertEquals(3, cluster.pods().size(), "waiting for its admission");

        // A PyTorchJob is held the same way.
        OperatorHarness kubeflow = new OperatorHarness(client, "every-kubeflow");
        kubeflow.submitPyTorchJob(PyTorchJobTestJobs.job("p", "OnFailure", "{}"));
        PyTorchJob held = kubeflow.awaitPyTorchJob("p", j -> j.getStatus() != null && j.getStatus().conditions.stream()
                .anyMatch(c -> "Queued".equals(c.type) && "True".equals(c.status) && "QueueNameMissing".equals(c.reason)));
        assertNull(held.getStatus().startTime);
        assertEquals(List.of(), kubeflow.pods());

        // Kueue's own namespace and kube-system are not managed: a job there runs as it is.
        OperatorHarness system = new OperatorHarness(client, "kube-system");
        system.submit(OperatorHarness.job("s", "OnFailure", "{}"));
        system.awaitPods(3);
        assertNull(KueueTest.queuedReason(system.job("s")));
    }

    @Test
    void aJobKueueDeactivatedIsDeletedOnceTheRetentionIsOver() {
        KueueStandIn kueue = KueueTest.kueue(client, "retention");
        OperatorHarness cluster = new OperatorHarness(client, "retention");
        cluster.submit(KueueTest.t9kJob("j", ""));
        String workload = kueue.awaitWorkloadOf("j").getMetadata().getName();
        KueueTest.admitWhole(kueue, workload);
        cluster.awaitPods(3);

        kueue.deactivate(workload, "MaximumExecutionTimeExceeded", "The workload is deactivated due to exceeding the maximum execution time");
        cluster.awaitEvent("Deleted", "deactivated by Kueue and not reactivated by");
        awaitGone(() -> cluster.job("j"));
        assertEquals(List.of(), cluster.pods().stream().filter(p -> p.getMetadata().getName().startsWith("j-")).toList());
    }

    @Test
    void inANamespaceKueueDoesNotManageJobsRunWithoutAQueueAsKueueRunsItsOwnThere() {
        KueueStandIn kueue = KueueTest.kueue(client, "opted-out");
        client.namespaces().resource(new io.fabric8.kubernetes.api.model.NamespaceBuilder().withNewMetadata().withName("opted-out")
                .addToLabels("kueue-managed", "false").endMetadata().build()).create();
        OperatorHarness cluster = new OperatorHarness(client, "opted-out");

        // It names a queue: ignored, as Kueue v0.19 ignores its own jobs' label there; said once.
        cluster.submit(KueueTest.t9kJob("named", ""));
        cluster.awaitPodNames("named-master-0", "named-worker-0", "named-worker-1");
        cluster.awaitEvent("QueueIgnored", "kueue.x-k8s.io/queue-name=" + KueueTest.QUEUE + " is ignored");
        assertEquals(List.of(), kueue.workloads(), "no Workload: no quota is taken for it");

        // It names none: not held, though Kueue manages every job where it manages jobs.
        cluster.submit(OperatorHarness.job("unnamed", "OnFailure", "{}"));
        cluster.awaitPods(6);
        assertNull(KueueTest.queuedReason(cluster.job("unnamed")));
        assertEquals(1, cluster.events().stream().filter(e -> "QueueIgnored".equals(e.getReason())).count(), "said once");
        assertEquals(List.of(), kueue.workloads());
    }

    @Test
    void aJobHeldForAQueueNameStartsOnceARelabelLeavesItsNamespaceOutOfKueue() {
        KueueTest.kueue(client, "opting-out");
        client.namespaces().resource(new io.fabric8.kubernetes.api.model.NamespaceBuilder().withNewMetadata().withName("opting-out")
                .addToLabels("team", "a").endMetadata().build()).create();
        OperatorHarness cluster = new OperatorHarness(client, "opting-out");
        cluster.submit(OperatorHarness.job("held", "OnFailure", "{}"));
        awaitHeld(cluster, "held");

        // Another label changes nothing for it; the one the selector reads leaves the namespace out, and it starts.
        relabel("opting-out", "team", "b");
        relabel("opting-out", "kueue-managed", "false");
        cluster.awaitPodNames("held-master-0", "held-worker-0", "held-worker-1");
        cluster.awaitJob("held", j -> "NotQueued".equals(KueueTest.queuedReason(j)));
        assertEquals("False", cluster.condition("held", JobCondition.QUEUED).status, "no longer waiting for a queue");
    }

    @Test
    void aJobAnAppWrapperWrapsIsQueuedThroughItNeitherHeldNorGivenAWorkload() {
        KueueStandIn kueue = KueueTest.kueue(client, "wrapped");
        GenericKubernetesResource wrapper = client.genericKubernetesResources(new io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext.Builder()
                        .withGroup("workload.codeflare.dev").withVersion("v1beta2").withKind("AppWrapper").withPlural("appwrappers")
                        .withNamespaced(true).build())
                .inNamespace("wrapped").resource(client.getKubernetesSerialization().unmarshal("""
                        {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                         "metadata": {"name": "aw", "labels": {"kueue.x-k8s.io/queue-name": "%s"}}, "spec": {"components": []}}
                        """.formatted(KueueTest.QUEUE), GenericKubernetesResource.class)).create();
        OperatorHarness cluster = new OperatorHarness(client, "wrapped");
        // As the AppWrapper's controller makes it once Kueue admitted the AppWrapper: owned by it, no queue label.
        PyTorchTrainingJob job = client.getKubernetesSerialization().unmarshal(OperatorHarness.job("child", "OnFailure", "{}"),
                PyTorchTrainingJob.class);
        job.getMetadata().setOwnerReferences(List.of(new io.fabric8.kubernetes.api.model.OwnerReferenceBuilder()
                .withApiVersion("workload.codeflare.dev/v1beta2").withKind("AppWrapper").withName("aw")
                .withUid(wrapper.getMetadata().getUid()).withController(true).build()));
        client.resources(PyTorchTrainingJob.class).inNamespace("wrapped").resource(job).create();

        cluster.awaitPodNames("child-master-0", "child-worker-0", "child-worker-1");
        cluster.awaitEvent("QueuedByOwner", "through its owner AppWrapper aw");
        assertEquals(List.of(), kueue.workloads(), "the AppWrapper's Workload covers it: none of its own");
        assertNull(KueueTest.queuedReason(cluster.job("child")), "never held for a queue name");
    }

    void relabel(String namespace, String key, String value) {
        client.namespaces().withName(namespace).edit(n -> {
            n.getMetadata().getLabels().put(key, value);
            return n;
        });
    }

    static void awaitGone(java.util.function.Supplier<?> object) {
        org.awaitility.Awaitility.await().atMost(OperatorHarness.WAIT).until(() -> object.get() == null);
    }

    static void awaitHeld(OperatorHarness cluster, String job) {
        cluster.awaitJob(job, j -> j.getStatus() != null && "QueueNameMissing".equals(KueueTest.queuedReason(j)));
    }

    void pause(OperatorHarness cluster, String job, boolean on) {
        UserEdits.edit(client.resources(PyTorchTrainingJob.class).inNamespace(cluster.namespace).withName(job), j -> {
            j.getSpec().runMode = client.getKubernetesSerialization().unmarshal("{\"pause\": {\"enabled\": " + on + "}}",
                    dev.torchjob.operator.api.RunMode.class);
            return j;
        });
    }
}
