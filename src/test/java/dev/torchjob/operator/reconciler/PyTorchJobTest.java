package dev.torchjob.operator.reconciler;

import dev.torchjob.operator.testing.UserEdits;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/** Kubeflow's PyTorchJob end to end: the operator against the mock API server, the test as kubelet. */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
class PyTorchJobTest {
    @Inject
    KubernetesClient client;

    static String job(String name, String workerPolicy, String runPolicy) {
        return PyTorchJobTestJobs.job(name, workerPolicy, runPolicy);
    }

    static Map<String, String> env(Pod pod) {
        return pod.getSpec().getContainers().get(0).getEnv().stream().collect(Collectors.toMap(EnvVar::getName, EnvVar::getValue));
    }

    OperatorHarness running(String namespace, String workerPolicy, String runPolicy) {
        OperatorHarness cluster = new OperatorHarness(client, namespace);
        cluster.submitPyTorchJob(job("j", workerPolicy, runPolicy));
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        cluster.runAll();
        cluster.awaitState("j", "Running");
        return cluster;
    }

    @Test
    void aJobRunsWithKubeflowsPodsServicesAndStatusAndSucceedsWithItsMaster() {
        OperatorHarness cluster = running("kf-success", "OnFailure", "{}");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), cluster.serviceNames(), "one headless Service per replica");
        Map<String, String> worker = env(cluster.pod("j-worker-1"));
        assertEquals("j-master-0", worker.get("MASTER_ADDR"));
        assertEquals("23456", worker.get("MASTER_PORT"));
        assertEquals("3", worker.get("WORLD_SIZE"));
        assertEquals("2", worker.get("RANK"));
        assertEquals("j", cluster.pod("j-worker-1").getMetadata().getLabels().get("job-name"));
        PyTorchJob running = cluster.pytorchJob("j");
        assertEquals(2, running.getStatus().replicaStatuses.get("Worker").active);
        assertNotNull(running.getStatus().startTime);

        cluster.kubelet.exit("j-master-0", 0);
        PyTorchJob done = cluster.awaitState("j", "Succeeded");
        assertEquals(List.of("Created", "Running", "Succeeded"), done.getStatus().conditions.stream().map(c -> c.type).toList());
        assertEquals("False", done.getStatus().conditions.get(1).status);
        assertNotNull(done.getStatus().completionTime);
        assertEquals(JobPhase.Succeeded, done.getStatus().phase);
        cluster.awaitEvent("Succeeded", "master pod j-master-0 succeeded");
    }

    @Test
    void restartsInPlaceOfOneFaultAreCountedOnceAndReachingBackoffLimitFailsTheJob() {
        OperatorHarness cluster = running("kf-inplace", "OnFailure", "{backoffLimit: 2}");
        StatusWritingKubelet kubelet = (StatusWritingKubelet) cluster.kubelet;
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        // Worker 0 is killed; the other ranks fail in their collectives; the kubelet restarts all three in place.
        kubelet.restartInPlace("j-worker-0", 137);
        kubelet.restartInPlace("j-master-0", 1);
        kubelet.restartInPlace("j-worker-1", 1);
        cluster.awaitPyTorchJob("j", j -> j.getStatus().backoffCount == 1);
        cluster.awaitEvent("JobRestarting", "pod j-worker-0 (container pytorch) exited with code 137 (Error) and was restarted in place; then ");
        cluster.awaitState("j", "Running");
        assertEquals(uid, cluster.pod("j-worker-0").getMetadata().getUid(), "restarted in place, not recreated");
        assertEquals(1, cluster.pytorchJob("j").getStatus().backoffCount, "one fault, counted once");

        kubelet.restartInPlace("j-worker-0", 137);
        kubelet.restartInPlace("j-master-0", 1);
        kubelet.restartInPlace("j-worker-1", 1);
        PyTorchJob failed = cluster.awaitState("j", "Failed");
        assertEquals("BackoffLimitExceeded", failed.getStatus().failureReason);
        assertEquals(1, failed.getStatus().backoffCount, "the fault that spent the budget restarts nothing the operator counts");
        assertNotNull(failed.getStatus().completionTime);
    }

    @Test
    void underExitCodeASignalRecreatesThePodAndAProgramErrorFailsTheJob() {
        OperatorHarness cluster = running("kf-exitcode", "ExitCode", "{backoffLimit: 3}");
        assertEquals("Never", cluster.pod("j-worker-0").getSpec().getRestartPolicy(), "ExitCode pods are the operator's to recreate");
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        cluster.kubelet.oomKill("j-worker-0");
        cluster.awaitNewPod("j-worker-0", uid);
        assertEquals(1, cluster.awaitPyTorchJob("j", j -> j.getStatus().backoffCount == 1).getStatus().backoffCount);
        cluster.kubelet.run("j-worker-0");
        cluster.kubelet.exit("j-worker-1", 1);
        PyTorchJob failed = cluster.awaitState("j", "Failed");
        assertEquals("ReplicaFailedPermanently", failed.getStatus().failureReason);
        assertTrue(failed.getStatus().conditions.get(failed.getStatus().conditions.size() - 1).message
                .contains("pod j-worker-1 (container pytorch) exited with code 1"));
    }

    @Test
    void aRankEvictedAndRemovedBeforeAnyPassSawItIsOneRestartSaidInTheEvictionAPIsWords() {
        OperatorHarness cluster = running("kf-evicted-gone", "ExitCode", "{backoffLimit: 3}");
        String uid = cluster.pod("j-worker-1").getMetadata().getUid();
        cluster.evictThroughTheApi("j-worker-1");
        cluster.awaitNewPod("j-worker-1", uid);
        assertEquals(1, cluster.awaitPyTorchJob("j", j -> j.getStatus().backoffCount == 1).getStatus().backoffCount);
        cluster.awaitEvent("JobRestarting", "pod j-worker-1 was evicted (EvictionByEvictionAPI: Eviction API: evicting)");
    }

    @Test
    void suspendRemovesPodsAndServicesAndResumeStartsTheJobAgain() {
        OperatorHarness cluster = running("kf-suspend", "OnFailure", "{backoffLimit: 3}");
        UserEdits.edit(client.resources(PyTorchJob.class).inNamespace(cluster.namespace).withName("j"), j -> {
            j.getSpec().runPolicy.suspend = true;
            return j;
        });
        cluster.awaitState("j", "Suspended");
        cluster.awaitPods(0);
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() -> cluster.serviceNames().isEmpty());
        assertEquals(0, cluster.pytorchJob("j").getStatus().backoffCount);

        UserEdits.edit(client.resources(PyTorchJob.class).inNamespace(cluster.namespace).withName("j"), j -> {
            j.getSpec().runPolicy.suspend = false;
            return j;
        });
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        PyTorchJob resumed = cluster.awaitPyTorchJob("j", j -> j.getStatus().conditions.stream()
                .anyMatch(c -> c.type.equals("Suspended") && c.status.equals("False") && c.reason.equals("PyTorchJobResumed")));
        assertEquals(0, resumed.getStatus().backoffCount);
    }

    @Test
    void oneOperatorServesBothKindsAtOnce() {
        OperatorHarness cluster = new OperatorHarness(client, "kf-both");
        cluster.submitPyTorchJob(job("kubeflow", "OnFailure", "{}"));
        cluster.submit(OperatorHarness.job("t9k", "OnFailure", "{backoffLimit: 1}"));
        cluster.awaitPodNames("kubeflow-master-0", "kubeflow-worker-0", "kubeflow-worker-1", "t9k-master-0", "t9k-worker-0", "t9k-worker-1");
        assertEquals("t9k", cluster.pod("t9k-worker-0").getMetadata().getLabels().get("tensorstack.dev/owner-name"));
        assertEquals("kubeflow", cluster.pod("kubeflow-worker-0").getMetadata().getLabels().get("training.kubeflow.org/job-name"));
        cluster.runAll();
        cluster.awaitState("kubeflow", "Running");
        cluster.awaitPhase("t9k", JobPhase.Running);
    }

    @ParameterizedTest(name = "cleanPodPolicy {0}")
    @CsvSource(delimiter = '|', textBlock = """
            None    | j-master-0,j-worker-0,j-worker-1
            Running | j-master-0
            All     | ''
            """)
    void cleanPodPolicyDecidesWhichPodsAndServicesOutliveTheJob(String policy, String kept) {
        OperatorHarness cluster = running("kf-clean-" + policy.toLowerCase(), "OnFailure", "{cleanPodPolicy: " + policy + "}");
        cluster.kubelet.exit("j-master-0", 0);
        cluster.awaitState("j", "Succeeded");
        List<String> expected = kept.isEmpty() ? List.of() : List.of(kept.split(","));
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() ->
                cluster.pods().stream().map(p -> p.getMetadata().getName()).sorted().toList().equals(expected)
                        && cluster.serviceNames().equals(expected));
    }

    @Test
    void aFinishedJobIsDeletedWhenItsTimeToLiveIsOver() {
        OperatorHarness cluster = running("kf-ttl", "OnFailure", "{ttlSecondsAfterFinished: 2}");
        cluster.kubelet.exit("j-master-0", 0);
        cluster.awaitState("j", "Succeeded");
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() -> cluster.pytorchJob("j") == null);
    }

    @Test
    void anElasticJobWithMetricsGetsAnAutoscalerItOwns() throws java.io.IOException {
        OperatorHarness cluster = new OperatorHarness(client, "kf-hpa");
        cluster.submitPyTorchJob(java.nio.file.Files.readString(java.nio.file.Path.of("kubernetes/examples/kubeflow/05-elastic.yaml")));
        cluster.awaitPodNames("elastic-example-worker-0", "elastic-example-worker-1");
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() ->
                client.autoscaling().v2().horizontalPodAutoscalers().inNamespace("kf-hpa").withName("elastic-example").get() != null);
        var hpa = client.autoscaling().v2().horizontalPodAutoscalers().inNamespace("kf-hpa").withName("elastic-example").get();
        assertEquals(cluster.pytorchJob("elastic-example").getMetadata().getUid(), hpa.getMetadata().getOwnerReferences().get(0).getUid());
        assertEquals(4, hpa.getSpec().getMaxReplicas());
        assertEquals("PyTorchJob", hpa.getSpec().getScaleTargetRef().getKind());
    }

    @Test
    void aPodNameTakenByTheOtherKindsJobIsReportedNotWaitedForSilently() {
        OperatorHarness cluster = new OperatorHarness(client, "kf-clash");
        cluster.submit(OperatorHarness.job("same", "OnFailure", "{backoffLimit: 1}"));
        cluster.awaitPodNames("same-master-0", "same-worker-0", "same-worker-1");
        cluster.submitPyTorchJob(job("same", "OnFailure", "{}"));
        PyTorchJob clashing = cluster.awaitPyTorchJob("same", j -> j.getStatus().conditions.stream()
                .anyMatch(c -> c.type.equals("ReconcileError") && c.status.equals("True")));
        var error = clashing.getStatus().conditions.stream().filter(c -> c.type.equals("ReconcileError")).findFirst().orElseThrow();
        assertEquals("FailedCreatePod", error.reason);
        assertEquals("pod same-master-0: a pod named same-master-0 exists and belongs to PyTorchTrainingJob same; "
                + "rename this job or delete the other one", error.message);
        assertEquals("ReconcileError", clashing.getStatus().conditions.get(0).type, "first: the State column stays Kubeflow's");
        cluster.awaitEvent("FailedCreatePod", "belongs to PyTorchTrainingJob same");
    }
}
