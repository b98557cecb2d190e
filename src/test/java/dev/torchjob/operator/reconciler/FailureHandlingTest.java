package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import dev.torchjob.operator.api.CountedRestart;
import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.testing.UserEdits;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.EventListBuilder;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.kubernetes.client.KubernetesServer;
import io.quarkus.test.kubernetes.client.KubernetesTestServer;
import dev.torchjob.operator.testing.StatusWriteConflicts;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;

/** Spec §5 and §6 end to end: the operator against the mock API server, the test as kubelet. */
@QuarkusTest
@WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)
class FailureHandlingTest {
    @Inject
    KubernetesClient client;

    @Inject
    io.micrometer.core.instrument.MeterRegistry registry;

    @KubernetesTestServer
    KubernetesServer server;

    static OperatorHarness running(KubernetesClient client, String namespace, String policy, String runPolicy) {
        return new OperatorHarness(client, namespace).runJob(policy, runPolicy);
    }

    /**
     * A volume that cannot be mounted is said only in the pod's Warning events: the operator reads them
     * (by the pod's UID: the mock API server cannot select events by field, so the test answers that
     * request as the real one would) for a pod still creating its containers well after it was
     * scheduled, and the job says it. Events it may not read leave the job as it was.
     */
    @ParameterizedTest
    @CsvSource({"200, failed-mount", "403, events-forbidden"})
    void aPodWhoseVolumeCannotBeMountedIsSaidFromItsWarningEvents(int answer, String namespace) {
        OperatorHarness cluster = new OperatorHarness(client, namespace);
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 0}"));
        cluster.awaitPods(3);
        String uid = cluster.pod("j-worker-1").getMetadata().getUid();
        Event mount = new EventBuilder().withNewMetadata().withName("j-worker-1.mount").endMetadata().withType("Warning")
                .withReason("FailedMount").withMessage("MountVolume.SetUp failed for volume \"data\" : persistentvolumeclaim \"data\" not found")
                .withNewInvolvedObject().withKind("Pod").withName("j-worker-1").withUid(uid).endInvolvedObject()
                .withLastTimestamp(Instant.now().toString()).build();
        var request = server.expect().get().withPath("/api/v1/namespaces/" + namespace + "/events?fieldSelector=involvedObject.uid%3D" + uid
                + "%2Ctype%3DWarning&resourceVersion=0");
        if (answer == 200) {
            request.andReturn(200, new EventListBuilder().withItems(mount).build()).always();
        } else {
            request.andReturn(403, new StatusBuilder().withCode(403).withReason("Forbidden").withMessage("events is forbidden: User "
                    + "\"system:serviceaccount:torchjob-system:torchjob-operator\" cannot list resource \"events\"").build()).always();
        }
        cluster.kubelet.run("j-master-0");
        cluster.kubelet.run("j-worker-0");
        ((StatusWritingKubelet) cluster.kubelet).creating("j-worker-1", Instant.now().minusSeconds(30));

        if (answer == 200) {
            PyTorchTrainingJob held = cluster.awaitJob("j", j -> j.getStatus().tasks.get(1).replicas.get(1).cannotStart != null);
            assertEquals("FailedMount", held.getStatus().tasks.get(1).replicas.get(1).cannotStart.reason);
            var running = cluster.condition("j", "Running");
            assertEquals("FailedMount", running.reason);
            assertTrue(running.message.startsWith("pod j-worker-1 cannot start: MountVolume.SetUp failed for volume \"data\""), running.message);
            cluster.awaitEvent("ReplicaCannotStart", "persistentvolumeclaim \"data\" not found");
        } else {
            cluster.awaitJob("j", j -> j.getStatus().tasks.get(1).replicas.get(1).containers.stream()
                    .anyMatch(c -> "ContainerCreating".equals(c.reason)));
            assertEquals("WaitingForReplicas", cluster.condition("j", "Running").reason, "only what the pod's status says");
            assertEquals(null, cluster.condition("j", "ReconcileError"), "the job is not held back");
        }
        assertEquals(0, cluster.job("j").getStatus().backoffCount);

        cluster.kubelet.run("j-worker-1");
        cluster.awaitJob("j", j -> j.getStatus().tasks.get(1).replicas.get(1).cannotStart == null
                && "AllReplicasRunning".equals(cluster.condition("j", "Running").reason));
        assertEquals(answer == 200 ? 1 : 0, cluster.events().stream().filter(e -> "ReplicaCannotStart".equals(e.getReason())).count());
    }

    @Test
    void oomKilledWorkerUnderExitCodeIsRecreatedCountedAndTheJobStillSucceeds() {
        OperatorHarness cluster = running(client, "exit137", "ExitCode", "{backoffLimit: 3}");
        String oldUid = cluster.pod("j-worker-1").getMetadata().getUid();
        cluster.kubelet.oomKill("j-worker-1");
        cluster.awaitNewPod("j-worker-1", oldUid);
        PyTorchTrainingJob restarted = cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        assertEquals(1, restarted.getStatus().tasks.get(1).restartCount);
        cluster.awaitEvent("JobRestarting", "pod j-worker-1 (container pytorch) exited with code 137 (OOMKilled)");
        cluster.kubelet.run("j-worker-1");
        cluster.kubelet.exit("j-master-0", 0);
        PyTorchTrainingJob done = cluster.awaitPhase("j", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount);
        assertNotNull(done.getStatus().completionTime);
    }

    @Test
    void exitCodeOneUnderExitCodeFailsTheJobPermanently() {
        OperatorHarness cluster = running(client, "exit1", "ExitCode", "{backoffLimit: 3}");
        cluster.kubelet.exit("j-worker-0", 1);
        PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals(0, failed.getStatus().backoffCount);
        assertNotNull(failed.getStatus().completionTime);
        assertEquals("ReplicaFailedPermanently", cluster.condition("j", "Failed").reason);
        assertTrue(cluster.condition("j", "Failed").message.contains("pod j-worker-0 (container pytorch) exited with code 1"));
        assertTrue(cluster.condition("j", "ReplicaFailure").isTrue());
        cluster.awaitEvent("ReplicaFailed", "exited with code 1");
        cluster.awaitEvent("Failed", "ReplicaFailedPermanently");
        // Written in the order decided, so a reader that orders by creation shows the cause first.
        assertEquals(List.of("PodsCreated", "ReplicaFailed", "Failed"),
                cluster.events().stream().map(Event::getReason).toList());
    }

    @Test
    void onFailureFailingFourTimesWithBackoffLimitThreeFails() {
        OperatorHarness cluster = running(client, "backoff", "OnFailure", "{backoffLimit: 3}");
        for (int failure = 1; failure <= 3; failure++) {
            String uid = cluster.pod("j-master-0").getMetadata().getUid();
            masterFailsMidTraining(cluster);
            cluster.awaitNewPod("j-master-0", uid);
            int expected = failure;
            cluster.awaitJob("j", j -> j.getStatus().backoffCount == expected);
            cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1"); // the group anew: the old one's pods went first
            cluster.runAll();
        }
        masterFailsMidTraining(cluster);
        PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals(3, failed.getStatus().backoffCount);
        assertEquals("BackoffLimitExceeded", cluster.condition("j", "Failed").reason);
        assertTrue(cluster.condition("j", "Failed").message.contains("exited with code 1"));
    }

    /** The master exits 1 and its workers, in a collective with it, lose it: one incident, judged at once. */
    static void masterFailsMidTraining(OperatorHarness cluster) {
        cluster.kubelet.exit("j-master-0", 1);
        cluster.kubelet.losePeer("j-worker-0");
        cluster.kubelet.losePeer("j-worker-1");
    }

    @Test
    void aBackoffLimitLoweredBelowTheRestartsSpentKeepsTheJobCurrentAndFailsItAtTheNextFailure() {
        OperatorHarness cluster = running(client, "lowered", "OnFailure", "{backoffLimit: 3}");
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        cluster.kubelet.exit("j-worker-0", 1);
        cluster.kubelet.losePeer("j-master-0");
        cluster.kubelet.losePeer("j-worker-1");
        cluster.awaitNewPod("j-worker-0", uid);
        cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        UserEdits.edit(client.resources(PyTorchTrainingJob.class).inNamespace("lowered").withName("j"), j -> {
            j.getSpec().runPolicy.backoffLimit = 0;
            return j;
        });
        cluster.awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        cluster.runAll();
        // The status keeps following the pods: the restarted group is seen running.
        cluster.awaitJob("j", j -> j.getStatus().aggregate.running == 3 && j.getStatus().phase == JobPhase.Running);
        cluster.kubelet.exit("j-worker-1", 1);
        cluster.kubelet.losePeer("j-master-0");
        cluster.kubelet.losePeer("j-worker-0");
        PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals("BackoffLimitExceeded", cluster.condition("j", "Failed").reason);
        assertTrue(cluster.condition("j", "Failed").message.contains("pod j-worker-1"), cluster.condition("j", "Failed").message);
        assertEquals(1, failed.getStatus().backoffCount);
    }

    @Test
    void anInvalidEditOfARunningJobIsRefusedAndTheJobKeepsRunningUntilItIsFixed() {
        OperatorHarness cluster = running(client, "invalid-edit", "OnFailure", "{backoffLimit: 3}");
        var template = cluster.job("j").getSpec().replicaSpecs.get(1).template;
        UserEdits.edit(client.resources(PyTorchTrainingJob.class).inNamespace("invalid-edit").withName("j"), j -> {
            j.getSpec().replicaSpecs.get(1).template = java.util.Map.of("spec", java.util.Map.of("containers", List.of()));
            return j;
        });
        PyTorchTrainingJob refused = cluster.awaitJob("j", j -> j.getStatus().conditions.stream()
                .anyMatch(c -> "SpecRejected".equals(c.type) && c.isTrue()));
        assertEquals(JobPhase.Running, refused.getStatus().phase);
        assertTrue(cluster.condition("j", "SpecRejected").message.contains("spec.replicaSpecs[1].template.spec.containers"));
        cluster.awaitEvent("SpecRejected", "spec.replicaSpecs[1].template.spec.containers");
        assertEquals(3, cluster.pods().size(), "nothing was deleted");

        UserEdits.edit(client.resources(PyTorchTrainingJob.class).inNamespace("invalid-edit").withName("j"), j -> {
            j.getSpec().replicaSpecs.get(1).template = template;
            return j;
        });
        cluster.awaitJob("j", j -> j.getStatus().conditions.stream().anyMatch(c -> "SpecRejected".equals(c.type) && !c.isTrue()));
        cluster.kubelet.exit("j-master-0", 0);
        cluster.awaitPhase("j", JobPhase.Succeeded);
    }

    @Test
    void podCreatesRefusedByTheApiServerAreReportedOnceAndRetriedUntilTheyWork() throws InterruptedException {
        // The API server refuses the first two pod creates, as an admission webhook might.
        server.expect().post().withPath("/api/v1/namespaces/refused/pods").andReturn(403, new StatusBuilder().withCode(403)
                .withReason("Forbidden").withMessage("pods is forbidden: denied by the team's admission policy").build()).times(2);
        OperatorHarness cluster = new OperatorHarness(client, "refused");
        double errorsBefore = registry.get("pytorchtrainingjob_reconcile_errors").counter().count();
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}"));
        PyTorchTrainingJob refused = cluster.awaitJob("j", j -> j.getStatus() != null && j.getStatus().conditions.stream()
                .anyMatch(c -> "ReconcileError".equals(c.type) && c.isTrue()));
        var error = refused.getStatus().conditions.stream().filter(c -> "ReconcileError".equals(c.type)).findFirst().orElseThrow();
        assertEquals("FailedCreatePod", error.reason);
        assertEquals("pod j-master-0: pods is forbidden: denied by the team's admission policy", error.message);
        // The first pod goes alone, before the Service: a refused job leaves nothing behind (the next try is a second away).
        assertTrue(client.services().inNamespace("refused").list().getItems().isEmpty(), "no Service while its pods are refused");

        cluster.awaitPods(3); // the retries go on until the API server takes them
        assertEquals(List.of("j"), client.services().inNamespace("refused").list().getItems().stream().map(s -> s.getMetadata().getName()).toList(),
                "the Service follows the first pod the API server takes");
        cluster.awaitJob("j", j -> j.getStatus().conditions.stream().anyMatch(c -> "ReconcileError".equals(c.type) && !c.isTrue()));
        assertEquals(1, cluster.events().stream().filter(e -> "FailedCreatePod".equals(e.getReason())).count(),
                "one event for the same error, however often it was met");
        cluster.awaitEvent("PodsCreated", "j-master-0");
        // Creates start with one pod and double while the API server takes them: a pass that is refused
        // costs one call, not one per replica.
        assertEquals(2 + 3, podCreatesSent("/api/v1/namespaces/refused/pods"), "two refused creates, then one per replica");
        assertTrue(registry.get("pytorchtrainingjob_reconcile_errors").counter().count() - errorsBefore >= 1,
                "a refused pass counts in the error ratio the alert watches");
    }

    /** A call the API server fails once (a 500: etcd timed out) is retried in place: the job never shows an error. */
    @Test
    void aCallTheApiServerFailsOnceIsRetriedInPlace() {
        server.expect().post().withPath("/api/v1/namespaces/blip/pods").andReturn(500, new StatusBuilder().withCode(500)
                .withReason("InternalError").withMessage("etcdserver: request timed out").build()).once();
        OperatorHarness cluster = new OperatorHarness(client, "blip");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}"));
        cluster.awaitPods(3);
        cluster.awaitEvent("PodsCreated", "j-master-0");
        assertNull(cluster.condition("j", "ReconcileError"), "no error for a failure the retry covered");
        assertEquals(0, cluster.events().stream().filter(e -> "FailedCreatePod".equals(e.getReason())).count());
    }

    /**
     * A call the API server keeps failing (a 500: an admission webhook that is down) is retried once, at
     * once, and then left to the job's own back-off (1 s, doubling), not to the client's ten retries
     * (about 20 s as shipped): a reconcile thread waiting through those made every other job wait too.
     */
    @Test
    void aCallTheApiServerKeepsFailingIsRetriedOnceThenLeftToTheJobsBackOff() throws InterruptedException {
        String path = "/api/v1/namespaces/webhook-down/pods";
        String refusal = "Internal error occurred: failed calling webhook \"pods.policy.example\": failed to call webhook: "
                + "Post \"https://policy.policy-system.svc:443/validate\": dial tcp 10.96.7.7:443: connect: connection refused";
        server.expect().post().withPath(path).andReturn(500, new StatusBuilder().withCode(500).withReason("InternalError")
                .withMessage(refusal).build()).always();
        drainRequests();
        OperatorHarness cluster = new OperatorHarness(client, "webhook-down");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}"));
        List<Long> sent = new ArrayList<>(); // when each create reached the server, in ms
        long start = System.nanoTime();
        while (sent.size() < 2 * (1 + PassClient.RETRIES) && System.nanoTime() - start < Duration.ofSeconds(20).toNanos()) {
            var request = server.getKubernetesMockServer().takeRequest(100, TimeUnit.MILLISECONDS);
            if (request != null && "POST".equals(request.getMethod()) && path.equals(request.getPath())) {
                sent.add((System.nanoTime() - start) / 1_000_000);
            }
        }
        assertEquals(2 * (1 + PassClient.RETRIES), sent.size(), "two passes of a create and its retry: " + sent);
        assertTrue(sent.get(1) - sent.get(0) < 500, "the retry comes at once: " + sent);
        assertTrue(sent.get(2) - sent.get(1) >= 900, "the next pass after the job's back-off of 1 s: " + sent);
        assertTrue(sent.get(3) - sent.get(2) < 500, "and its retry at once: " + sent);
        cluster.awaitJob("j", j -> j.getStatus() != null && j.getStatus().conditions.stream()
                .anyMatch(c -> "ReconcileError".equals(c.type) && c.isTrue()));
        JobCondition error = cluster.condition("j", "ReconcileError");
        assertEquals("FailedCreatePod", error.reason);
        assertEquals("pod j-master-0: " + refusal, error.message);
    }

    /**
     * The pod creates are refused, and so is the one status write that would show it (a closed connection
     * in production, here a 403): the next retry puts the error on the job, which says it once all the same.
     */
    @Test
    void anErrorTheStatusCouldNotTakeAtFirstIsShownAtTheNextRetry() {
        server.expect().post().withPath("/api/v1/namespaces/unrecorded/pods").andReturn(403, new StatusBuilder().withCode(403)
                .withReason("Forbidden").withMessage("pods is forbidden: denied by the team's admission policy").build()).always();
        server.expect().put().withPath("/apis/batch.tensorstack.dev/v1beta1/namespaces/unrecorded/pytorchtrainingjobs/j/status")
                .andReturn(403, new StatusBuilder().withCode(403).withReason("Forbidden").withMessage("denied once").build()).once();
        OperatorHarness cluster = new OperatorHarness(client, "unrecorded");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}"));
        cluster.awaitJob("j", j -> j.getStatus() != null && j.getStatus().conditions.stream()
                .anyMatch(c -> "ReconcileError".equals(c.type) && c.isTrue()));
        JobCondition error = cluster.condition("j", "ReconcileError");
        assertEquals("pod j-master-0: pods is forbidden: denied by the team's admission policy", error.message);
        assertEquals(1, cluster.events().stream().filter(e -> "FailedCreatePod".equals(e.getReason())).count(), "said once");
    }

    @Test
    void aStatusWriteTheApiServerFailsCountsTheRestartOnceAndStillSaysIt() {
        OperatorHarness cluster = running(client, "status-refused", "OnFailure", "{backoffLimit: 3}");
        // The write that would count the restart is refused once (an admission policy, say: neither
        // JOSDK nor the client retries a 403 in place).
        server.expect().put().withPath("/apis/batch.tensorstack.dev/v1beta1/namespaces/status-refused/pytorchtrainingjobs/j/status")
                .andReturn(403, new StatusBuilder().withCode(403).withReason("Forbidden")
                        .withMessage("denied by the team's admission policy").build()).once();
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        cluster.kubelet.exit("j-worker-0", 1);
        cluster.awaitNewPod("j-worker-0", uid);
        cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1 && j.getStatus().conditions.stream()
                .anyMatch(c -> "ReconcileError".equals(c.type) && !c.isTrue()));
        // The failed write must not leave the counted restart behind for the error report to write: the
        // pass that counts it again is the one that says it.
        assertEquals(1, cluster.events().stream().filter(e -> "JobRestarting".equals(e.getReason())).count(),
                "one JobRestarting event for the one counted restart");
        assertEquals(1, cluster.events().stream().filter(e -> "FailedStatusUpdate".equals(e.getReason())).count());
    }

    /**
     * The status write that counts a restart meets 409 Conflict three times (by update, as in the local mode:
     * someone labelled the job a moment before the cache saw it): the pass runs again on the newer job, the
     * restart is counted once, and nothing is said of it.
     */
    @Test
    void aStatusWriteThatMeetsAConflictRunsThePassAgainAndSaysNothing() {
        OperatorHarness cluster = running(client, "status-conflict", "OnFailure", "{backoffLimit: 3}");
        server.expect().put().withPath("/apis/batch.tensorstack.dev/v1beta1/namespaces/status-conflict/pytorchtrainingjobs/j/status")
                .andReturn(409, new StatusBuilder().withCode(409).withReason("Conflict").withMessage("Operation cannot be fulfilled on "
                        + "pytorchtrainingjobs.batch.tensorstack.dev \"j\": the object has been modified; please apply your changes "
                        + "to the latest version and try again").build()).times(2 * (1 + JobStatusWrites.CONFLICT_RETRIES));
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        cluster.kubelet.exit("j-worker-0", 1);
        cluster.awaitNewPod("j-worker-0", uid);
        cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        assertNull(cluster.condition("j", "ReconcileError"), "a conflict is no error of the job");
        assertEquals(List.of(), cluster.events().stream().filter(e -> "FailedStatusUpdate".equals(e.getReason())).toList());
        assertEquals(1, cluster.events().stream().filter(e -> "JobRestarting".equals(e.getReason())).count(),
                "one JobRestarting event for the one counted restart");
    }

    /**
     * The API server fails the event that reports a restart or the outcome (a 500, past the pass client's one
     * retry): the pass stops before the status that records it, and the next pass writes both, the event once.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"restart, JobRestarting", "outcome, Succeeded"})
    void anEventTheApiServerFailsOnceIsSaidOnceByTheNextPass(String what, String reason) {
        String namespace = "event-failed-" + what;
        OperatorHarness cluster = running(client, namespace, "OnFailure", "{backoffLimit: 3}");
        cluster.awaitEvent("PodsCreated", "j-master-0");
        server.expect().post().withPath("/api/v1/namespaces/" + namespace + "/events").andReturn(500, new StatusBuilder()
                .withCode(500).withReason("InternalError").withMessage("etcdserver: request timed out").build()).times(1 + PassClient.RETRIES);
        if (what.equals("restart")) {
            String uid = cluster.pod("j-worker-0").getMetadata().getUid();
            cluster.kubelet.exit("j-worker-0", 1);
            cluster.awaitNewPod("j-worker-0", uid);
            cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        } else {
            cluster.kubelet.exit("j-master-0", 0);
            cluster.awaitPhase("j", JobPhase.Succeeded);
        }
        cluster.awaitJob("j", j -> j.getStatus().conditions.stream().anyMatch(c -> "ReconcileError".equals(c.type) && !c.isTrue()));
        assertEquals(1, cluster.events().stream().filter(e -> reason.equals(e.getReason())).count(), () -> "said once: " + cluster.events().stream().map(e -> e.getReason() + " " + e.getMetadata().getName()).toList());
        assertEquals(1, cluster.events().stream().filter(e -> "FailedCreateEvent".equals(e.getReason())).count(),
                "the refusal said once too");
        assertEquals(what.equals("restart") ? 1 : 0, cluster.job("j").getStatus().backoffCount, "counted once");
    }

    /**
     * A status write refused for good (here a 403 every time: a webhook, RBAC without the status
     * subresource): the error is said once and the retries back off as documented although the
     * condition that keeps the back-off cannot be written.
     */
    @Test
    void aStatusWriteRefusedForGoodIsSaidOnceAndRetriedWithBackOff() throws InterruptedException {
        String path = "/apis/batch.tensorstack.dev/v1beta1/namespaces/status-never/pytorchtrainingjobs/j/status";
        server.expect().put().withPath(path).andReturn(403, new StatusBuilder().withCode(403).withReason("Forbidden")
                .withMessage("denied by the team's admission policy").build()).always();
        drainRequests();
        OperatorHarness cluster = new OperatorHarness(client, "status-never");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}"));
        cluster.awaitPods(3);
        Thread.sleep(Duration.ofSeconds(9).toMillis());
        // The first pass creates, then writes; retries after 1, 1, 2 and 4 s: six writes at most in 9 s, not eighteen.
        int writes = requestsSent("PUT", path);
        assertTrue(writes >= 3 && writes <= 7, writes + " status writes in 9 s");
        assertEquals(1, cluster.events().stream().filter(e -> "FailedStatusUpdate".equals(e.getReason())).count());
        assertEquals(3, cluster.pods().size(), "nothing created twice");
    }

    /** A job whose own object is gone (404 on its status) is let go at once: no retries, nothing said. */
    @Test
    void aJobWhoseStatusIsNotFoundIsLetGo() throws InterruptedException {
        String path = "/apis/batch.tensorstack.dev/v1beta1/namespaces/status-gone/pytorchtrainingjobs/j/status";
        server.expect().put().withPath(path).andReturn(404, new StatusBuilder().withCode(404).withReason("NotFound")
                .withMessage("pytorchtrainingjobs.batch.tensorstack.dev \"j\" not found").build()).always();
        drainRequests();
        OperatorHarness cluster = new OperatorHarness(client, "status-gone");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}"));
        cluster.awaitPods(3);
        Thread.sleep(Duration.ofSeconds(4).toMillis());
        assertTrue(requestsSent("PUT", path) <= 3, "not retried");
        assertEquals(0, cluster.events().stream().filter(e -> "FailedStatusUpdate".equals(e.getReason())).count());
    }

    private void drainRequests() throws InterruptedException {
        while (server.getKubernetesMockServer().takeRequest(10, TimeUnit.MILLISECONDS) != null) {
            // requests of earlier tests
        }
    }

    private int requestsSent(String method, String path) throws InterruptedException {
        int count = 0;
        for (var request = server.getKubernetesMockServer().takeRequest(100, TimeUnit.MILLISECONDS); request != null;
                request = server.getKubernetesMockServer().takeRequest(100, TimeUnit.MILLISECONDS)) {
            if (method.equals(request.getMethod()) && path.equals(request.getPath())) {
                count++;
            }
        }
        return count;
    }

    private int podCreatesSent(String path) throws InterruptedException {
        int count = 0;
        for (var request = server.getKubernetesMockServer().takeRequest(1, TimeUnit.SECONDS); request != null; request = server.getKubernetesMockServer().takeRequest(100, TimeUnit.MILLISECONDS)) {
            if ("POST".equals(request.getMethod()) && path.equals(request.getPath())) {
                count++;
            }
        }
        return count;
    }

    @Test
    void neverFailsTheJobAtTheFirstFailure() {
        OperatorHarness cluster = running(client, "never", "Never", "{backoffLimit: 3}");
        cluster.kubelet.exit("j-worker-1", 2);
        cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals("ReplicaFailedPermanently", cluster.condition("j", "Failed").reason);
        assertEquals(0, cluster.job("j").getStatus().backoffCount);
    }

    @Test
    void aPodDeletedBySomeoneElseIsRecreatedAndCounted() {
        OperatorHarness cluster = running(client, "vanish", "OnFailure", "{backoffLimit: 3}");
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        client.pods().inNamespace("vanish").withName("j-worker-0").delete();
        cluster.awaitNewPod("j-worker-0", uid);
        cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        cluster.awaitEvent("JobRestarting", "pod j-worker-0 was deleted");
    }

    @Test
    void aPodEvictedAndRemovedBeforeAnyPassSawItIsSaidInTheEvictionAPIsWords() {
        OperatorHarness cluster = running(client, "evicted-gone", "OnFailure", "{backoffLimit: 3}");
        String uid = cluster.pod("j-worker-0").getMetadata().getUid();
        cluster.evictThroughTheApi("j-worker-0");
        cluster.awaitNewPod("j-worker-0", uid);
        cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        cluster.awaitEvent("JobRestarting", "pod j-worker-0 was evicted (EvictionByEvictionAPI: Eviction API: evicting)");
    }

    @Test
    void aDeadlinePassingWithNoFurtherEventsFailsTheJob() {
        OperatorHarness cluster = new OperatorHarness(client, "deadline");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{activeDeadlineSeconds: 3}"));
        cluster.awaitPods(3);
        cluster.runAll();
        PyTorchTrainingJob started = cluster.awaitPhase("j", JobPhase.Running);
        Instant deadline = Instant.parse(started.getStatus().startTime).plusSeconds(3);
        PyTorchTrainingJob failed = cluster.awaitPhase("j", JobPhase.Failed);
        Instant completed = Instant.parse(failed.getStatus().completionTime);
        assertTrue(!completed.isBefore(deadline) && completed.isBefore(deadline.plusSeconds(5)),
                "failed at " + completed + ", deadline " + deadline);
        assertEquals("DeadlineExceeded", cluster.condition("j", "Failed").reason);
        cluster.awaitPods(0);
    }

    @ParameterizedTest(name = "cleanUpPolicy {0}")
    @CsvSource({"None, j-master-0 j-worker-0 j-worker-1", "All, ''", "Unfinished, j-master-0 j-worker-0"})
    void cleanUpPolicyLeavesExactlyThePodsItShould(String policy, String kept) {
        OperatorHarness cluster = running(client, "cleanup-" + policy.toLowerCase(), "OnFailure",
                "{cleanUpPolicy: " + policy + "}");
        cluster.kubelet.exit("j-worker-0", 0);
        cluster.kubelet.exit("j-master-0", 0);
        cluster.awaitPhase("j", JobPhase.Succeeded);
        Set<String> expected = kept.isBlank() ? Set.of() : Set.of(kept.split(" "));
        cluster.awaitPods(expected.size());
        assertEquals(expected, cluster.pods().stream().map(p -> p.getMetadata().getName()).collect(Collectors.toSet()));
    }

    @Test
    void anOperatorRestartBetweenCountingAndRecreatingKeepsTheCountExact() {
        OperatorHarness cluster = running(client, "crash", "ExitCode", "{backoffLimit: 3}");
        String uid = cluster.pod("j-worker-1").getMetadata().getUid();
        // The state an operator leaves when it dies right after writing the count: the restart is
        // recorded against the pod's UID, the pod is not deleted yet. The running operator takes over.
        PyTorchTrainingJob job = cluster.job("j");
        job.getStatus().backoffCount = 1;
        job.getStatus().countedRestarts = List.of(new CountedRestart("j-worker-1", uid));
        client.resources(PyTorchTrainingJob.class).inNamespace("crash").resource(job).updateStatus();
        cluster.kubelet.oomKill("j-worker-1");
        cluster.awaitNewPod("j-worker-1", uid);
        cluster.kubelet.run("j-worker-1");
        PyTorchTrainingJob settled = cluster.awaitJob("j", j -> j.getStatus().countedRestarts == null);
        assertEquals(1, settled.getStatus().backoffCount, "counted once, not twice");
        cluster.kubelet.exit("j-master-0", 0);
        assertEquals(1, cluster.awaitPhase("j", JobPhase.Succeeded).getStatus().backoffCount);
    }

    @Test
    void aFinishedJobNeverCreatesPodsAgain() throws InterruptedException {
        OperatorHarness cluster = running(client, "finished", "OnFailure", "{backoffLimit: 3}");
        cluster.kubelet.exit("j-master-0", 0);
        PyTorchTrainingJob done = cluster.awaitPhase("j", JobPhase.Succeeded);
        client.pods().inNamespace("finished").withName("j-worker-0").delete();
        cluster.awaitPods(2);
        Thread.sleep(Duration.ofSeconds(1).toMillis());
        assertEquals(2, cluster.pods().size());
        PyTorchTrainingJob later = cluster.job("j");
        assertEquals(JobPhase.Succeeded, later.getStatus().phase);
        assertEquals(done.getStatus().completionTime, later.getStatus().completionTime);
    }
}
