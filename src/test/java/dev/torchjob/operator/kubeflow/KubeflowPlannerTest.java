package dev.torchjob.operator.kubeflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.KubeflowCondition;
import dev.torchjob.operator.api.kubeflow.KubeflowReplicaStatus;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;

/** Whole PyTorchJob lifecycles through the planner: Kubeflow's status, conditions and clean-up, restarts counted once. */
class KubeflowPlannerTest {
    static final String POD = "{spec: {containers: [{name: pytorch, image: torch}]}}";

    static KubeflowCluster job(String spec) {
        return new KubeflowCluster("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n" + spec.indent(2));
    }

    /** A job restarting each replica on its own, as Kubeflow v1 does (restart scope Replica). */
    static KubeflowCluster perReplica(String spec) {
        return new KubeflowCluster("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j, annotations: "
                + "{torchjob.dev/restart-scope: Replica}}\nspec:\n" + spec.indent(2));
    }

    static KubeflowCondition condition(KubeflowCluster cluster, String type) {
        return KubeflowConditions.find(cluster.job.getStatus().conditions, type);
    }

    static KubeflowReplicaStatus replicas(KubeflowCluster cluster, String type) {
        return cluster.job.getStatus().replicaStatuses.get(type);
    }

    @Test
    void theSeedJobRunsAndSucceedsWithKubeflowsStatus() throws IOException {
        KubeflowCluster cluster = new KubeflowCluster(Files.readString(Path.of("kubernetes/examples/kubeflow/02-mnist-gloo-demo.yaml")));
        String job = "pytorch-dist-mnist-gloo-demo";
        cluster.settle();
        assertEquals(Set.of(job + "-master-0", job + "-worker-0", job + "-worker-1", job + "-worker-2"), cluster.pods.keySet());
        assertEquals(cluster.pods.keySet(), cluster.services, "one Service per replica, named as its pod");
        assertEquals("Created", cluster.state());
        assertEquals("PyTorchJob " + job + " is created.", condition(cluster, "Created").message);
        assertNotNull(cluster.job.getStatus().startTime);

        cluster.runAll();
        cluster.settle();
        assertEquals("Running", cluster.state());
        assertEquals("PyTorchJobRunning", condition(cluster, "Running").reason);
        assertEquals("PyTorchJob " + job + " is running.", condition(cluster, "Running").message);
        assertEquals(1, replicas(cluster, "Master").active);
        assertEquals(3, replicas(cluster, "Worker").active);
        assertEquals("training.kubeflow.org/job-name=" + job + ",training.kubeflow.org/operator-name=pytorchjob-controller"
                + ",training.kubeflow.org/replica-type=worker", replicas(cluster, "Worker").selector, "keys sorted, as Kubeflow writes it");
        assertEquals("worker", replicas(cluster, "Worker").labelSelector.getMatchLabels().get("training.kubeflow.org/replica-type"));

        cluster.exit(job + "-master-0", 0);
        Plan<PyTorchJobStatus> done = cluster.reconcile();
        assertEquals(List.of("Created=True", "Running=False", "Succeeded=True"), cluster.conditionTypes());
        assertEquals("PyTorchJobSucceeded", condition(cluster, "Succeeded").reason);
        assertEquals("PyTorchJob " + job + " is successfully completed.", condition(cluster, "Succeeded").message);
        assertNotNull(done.status().completionTime);
        assertEquals(JobPhase.Succeeded, done.status().phase);
        assertEquals(1, replicas(cluster, "Master").succeeded);
        assertEquals(3, replicas(cluster, "Worker").succeeded, "workers still running count as succeeded once the job did");
        assertNull(replicas(cluster, "Worker").active);
        assertEquals(4, cluster.pods.size(), "cleanPodPolicy None keeps the pods");
        cluster.settle();
        assertTrue(cluster.reconcile().podsToCreate().isEmpty());
    }

    @Test
    void aWrongRestartScopeFailsThePyTorchJobAsInvalidSpec() {
        KubeflowCluster cluster = new KubeflowCluster("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j, annotations: "
                + "{torchjob.dev/restart-scope: job}}\nspec:\n  pytorchReplicaSpecs:\n    Master: {template: " + POD + "}\n");
        Plan<PyTorchJobStatus> plan = cluster.reconcile();
        assertEquals("InvalidSpec", plan.status().failureReason);
        assertTrue(condition(cluster, "Failed").message.contains("metadata.annotations[torchjob.dev/restart-scope] \"job\" must be Job or Replica"),
                condition(cluster, "Failed").message);
        assertTrue(plan.podsToCreate().isEmpty());
    }

    @Test
    void inPlaceRestartsAreCountedOnceAndTheJobFailsWhenTheyReachBackoffLimit() {
        KubeflowCluster cluster = perReplica("runPolicy: {backoffLimit: 2}\npytorchReplicaSpecs:\n  Master: {template: " + POD
                + "}\n  Worker: {replicas: 2, template: " + POD + "}");
        cluster.started();
        cluster.restartInPlace("j-worker-1", 1);
        Plan<PyTorchJobStatus> restarted = cluster.reconcile();
        assertEquals(1, restarted.status().backoffCount);
        assertEquals("Running", cluster.state(), "as in Kubeflow, a restart in place does not make the job Restarting");
        assertTrue(restarted.podsToDelete().isEmpty() && restarted.podsToCreate().isEmpty(), "the kubelet restarted it in place");
        assertTrue(restarted.events().stream().anyMatch(e -> e.reason().equals("ReplicaRestarted")), "it is said in an event");
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount, "counted once");
        assertEquals(List.of("Created", "Running"), cluster.job.getStatus().conditions.stream().map(c -> c.type).toList());

        cluster.restartInPlace("j-master-0", 137);
        Plan<PyTorchJobStatus> failed = cluster.reconcile();
        assertEquals("Failed", cluster.state());
        assertEquals("PyTorchJobFailed", condition(cluster, "Failed").reason);
        assertTrue(condition(cluster, "Failed").message.startsWith("PyTorchJob j is failed because pod j-master-0 (container pytorch) "
                + "exited with code 137 (OOMKilled) and was restarted in place; the restart budget is spent (backoffCount 2 of "
                + "runPolicy.backoffLimit 2)"), condition(cluster, "Failed").message);
        assertEquals("BackoffLimitExceeded", failed.status().failureReason);
        assertNotNull(failed.status().completionTime);
        List<String> conditions = cluster.conditionTypes();
        cluster.exit("j-worker-0", 0);
        cluster.settle();
        assertEquals(conditions, cluster.conditionTypes(), "once Failed, no condition changes");
    }

    @Test
    void underExitCodeAProgramErrorFailsTheJobAndASignalRecreatesThePodCountingIt() {
        KubeflowCluster cluster = job("runPolicy: {backoffLimit: 3}\npytorchReplicaSpecs:\n  Master: {template: " + POD
                + "}\n  Worker: {replicas: 2, restartPolicy: ExitCode, template: " + POD + "}");
        cluster.started();
        String uid = cluster.pods.get("j-worker-0").getMetadata().getUid();
        cluster.exit("j-worker-0", 137);
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount);
        assertTrue(!uid.equals(cluster.pods.get("j-worker-0").getMetadata().getUid()), "recreated");
        assertEquals("PyTorchJob j is restarting because 1 Worker replica(s) failed.", condition(cluster, "Restarting").message);
        assertTrue(cluster.services.contains("j-worker-0"), "a restart keeps the replica's Service");

        cluster.runAll();
        cluster.settle();
        cluster.exit("j-worker-1", 1);
        cluster.reconcile();
        assertEquals("Failed", cluster.state());
        assertEquals("ReplicaFailedPermanently", cluster.job.getStatus().failureReason);
        assertEquals(1, replicas(cluster, "Worker").failed);
    }

    @Test
    void suspendDeletesPodsAndServicesCountsNothingAndResumingStartsAfresh() {
        KubeflowCluster cluster = job("runPolicy: {backoffLimit: 3}\npytorchReplicaSpecs:\n  Master: {template: " + POD
                + "}\n  Worker: {replicas: 2, template: " + POD + "}");
        cluster.started();
        String firstStart = cluster.job.getStatus().startTime;
        cluster.job.getSpec().runPolicy.suspend = true;
        cluster.settle();
        assertTrue(cluster.pods.isEmpty() && cluster.services.isEmpty(), "no pods and no Services while suspended");
        assertEquals("Suspended", cluster.state());
        assertEquals("PyTorchJobSuspended", condition(cluster, "Suspended").reason);
        assertEquals("False", condition(cluster, "Running").status);
        assertEquals(0, cluster.job.getStatus().backoffCount, "deleting them counted nothing");
        assertNull(replicas(cluster, "Worker").active);

        cluster.now = cluster.now.plusSeconds(60);
        cluster.job.getSpec().runPolicy.suspend = false;
        cluster.settle();
        assertEquals(3, cluster.pods.size());
        assertEquals(3, cluster.services.size());
        assertEquals("False", condition(cluster, "Suspended").status);
        assertEquals("PyTorchJobResumed", condition(cluster, "Suspended").reason);
        assertTrue(!firstStart.equals(cluster.job.getStatus().startTime), "startTime is reset on resume");
    }

    /** A pod a lost node never lets go: the suspension says what holds it, in Kubeflow's words first. */
    @Test
    void aSuspensionHeldByAPodOnALostNodeSaysWhatHoldsIt() {
        KubeflowCluster cluster = job("runPolicy: {backoffLimit: 3}\npytorchReplicaSpecs:\n  Master: {template: " + POD
                + "}\n  Worker: {replicas: 1, template: " + POD + "}");
        cluster.started();
        var lost = cluster.pods.get("j-worker-0");
        lost.getSpec().setNodeName("node-7");
        lost.getMetadata().setDeletionTimestamp(cluster.now.minusSeconds(61).toString());
        cluster.job.getSpec().runPolicy.suspend = true;
        cluster.settle();
        assertEquals(List.of("j-worker-0"), List.copyOf(cluster.pods.keySet()), "the lost node's pod is still there");
        String message = condition(cluster, "Suspended").message;
        assertTrue(message.startsWith("PyTorchJob j is suspended. pod j-worker-0 is still terminating, its grace period ended at "
                + cluster.now.minusSeconds(61) + ": node node-7 has not confirmed that it stopped"), message);
        assertTrue(message.endsWith("; the suspension is complete once they are gone."), message);
        assertEquals(0, cluster.job.getStatus().backoffCount);
    }

    @Test
    void cleanPodPolicyRunningDeletesTheUnfinishedPodsAndTheirServicesWhenTheJobEnds() {
        KubeflowCluster cluster = job("runPolicy: {cleanPodPolicy: Running}\npytorchReplicaSpecs:\n  Master: {template: " + POD
                + "}\n  Worker: {replicas: 2, template: " + POD + "}");
        cluster.started();
        cluster.exit("j-master-0", 0);
        cluster.settle();
        assertEquals(Set.of("j-master-0"), cluster.pods.keySet(), "the running workers are deleted, the finished master kept");
        assertEquals(Set.of("j-master-0"), cluster.services);
        assertEquals("Succeeded", cluster.state());
        assertEquals(2, replicas(cluster, "Worker").succeeded, "the deleted workers keep the counts of the moment the job ended");
        assertEquals(1, replicas(cluster, "Master").succeeded);
    }

    @Test
    void anEndedJobsCountsFollowThePodsItKeeps() {
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Master: {restartPolicy: ExitCode, template: " + POD
                + "}\n  Worker: {replicas: 2, restartPolicy: ExitCode, template: " + POD + "}");
        cluster.started();
        cluster.exit("j-worker-0", 1);
        cluster.settle();
        assertEquals("Failed", cluster.state());
        assertEquals(1, replicas(cluster, "Master").active, "cleanPodPolicy None keeps the survivors running");
        assertEquals(1, replicas(cluster, "Worker").active);
        cluster.exit("j-master-0", 1);
        cluster.exit("j-worker-1", 1);
        cluster.settle();
        assertNull(replicas(cluster, "Master").active, "no pod runs: the ended job says so");
        assertEquals(1, replicas(cluster, "Master").failed);
        assertEquals(2, replicas(cluster, "Worker").failed);
        assertEquals("Failed", cluster.state());
    }

    /** Istio's proxy injected beside each rank: the counts and the outcome follow the training container. */
    @Test
    void aSidecarRunningOnKeepsNoReplicaActive() {
        String pod = "{spec: {containers: [{name: pytorch, image: torch}, {name: istio-proxy, image: proxyv2}]}}";
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Master: {restartPolicy: OnFailure, template: " + pod
                + "}\n  Worker: {replicas: 2, restartPolicy: OnFailure, template: " + pod + "}");
        cluster.started();
        cluster.exitBesideSidecar("j-worker-0", 0);
        Plan<PyTorchJobStatus> workerDone = cluster.reconcile();
        assertEquals(List.of("j-worker-0"), workerDone.sidecarsToStop().stream().map(Plan.SidecarStop::name).toList());
        assertEquals(1, replicas(cluster, "Worker").succeeded);
        assertEquals(1, replicas(cluster, "Worker").active);
        assertEquals("Running", cluster.state());
        cluster.exitBesideSidecar("j-master-0", 0);
        cluster.settle();
        assertEquals("Succeeded", cluster.state(), "the master's training succeeded, its pod Running only for its proxy");
        assertEquals(1, replicas(cluster, "Master").succeeded);
        assertNull(replicas(cluster, "Master").failed, "its DeadlineExceeded, once stopped, is not a failure");
        assertEquals(2, replicas(cluster, "Worker").succeeded);
    }

    @Test
    void cleanPodPolicyAllDeletesEveryPodAndService() {
        KubeflowCluster cluster = job("runPolicy: {cleanPodPolicy: All}\npytorchReplicaSpecs:\n  Worker: {replicas: 2, template: " + POD + "}");
        cluster.job.getMetadata().setNamespace("team-a");
        cluster.started();
        assertEquals("PyTorchJob team-a/j is running.", condition(cluster, "Running").message, "Kubeflow's words for a job without a Master");
        cluster.exit("j-worker-0", 0);
        cluster.exit("j-worker-1", 0);
        cluster.settle();
        assertEquals("Succeeded", cluster.state(), "without a Master, every worker succeeded");
        assertEquals("PyTorchJob team-a/j successfully completed.", condition(cluster, "Succeeded").message);
        assertTrue(cluster.pods.isEmpty() && cluster.services.isEmpty());
        assertEquals(2, replicas(cluster, "Worker").succeeded, "the counts of the moment it ended stay after the clean-up");
    }

    @Test
    void anInvalidJobFailsAtOnceNamingTheFieldAndCreatesNothing() {
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Master: {replicas: 2, template: " + POD + "}");
        cluster.settle();
        assertEquals("Failed", cluster.state());
        assertEquals("InvalidSpec", cluster.job.getStatus().failureReason);
        assertTrue(condition(cluster, "Failed").message.contains("spec.pytorchReplicaSpecs.Master.replicas must be 1"));
        assertTrue(cluster.pods.isEmpty() && cluster.services.isEmpty());
    }

    @Test
    void aQueuedJobShowsWhatKueueLastSaidWithoutMovingItsCondition() {
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Worker: {replicas: 2, template: " + POD + "}");
        cluster.queue = new dev.torchjob.operator.engine.QueueAdmission.Waiting("user-queue", "its Workload is being created");
        cluster.settle();
        String since = condition(cluster, "Queued").lastTransitionTime;
        cluster.now = cluster.now.plusSeconds(3);
        cluster.queue = new dev.torchjob.operator.engine.QueueAdmission.Waiting("user-queue",
                "couldn't assign flavors to pod set worker: insufficient unused quota for cpu in flavor kwok");
        assertTrue(cluster.reconcile().statusChanged());
        assertEquals("Queued", cluster.state());
        assertTrue(condition(cluster, "Queued").message.contains("insufficient unused quota"), condition(cluster, "Queued").message);
        assertEquals(since, condition(cluster, "Queued").lastTransitionTime, "still waiting: not a transition");
        assertTrue(cluster.pods.isEmpty());
    }

    @Test
    void aJobWhosePodsRanAndEndedBetweenTwoPassesStillSaysItRan() {
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Master: {template: " + POD + "}\n  Worker: {template: " + POD + "}");
        cluster.settle();
        assertEquals(List.of("Created=True"), cluster.conditionTypes());
        cluster.exit("j-master-0", 0);
        cluster.exit("j-worker-0", 0);
        cluster.reconcile();
        assertEquals(List.of("Created=True", "Running=False", "Succeeded=True"), cluster.conditionTypes(), "as a job seen running");
    }

    @Test
    void aSettledJobWritesNothing() {
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Worker: {replicas: 2, template: " + POD + "}");
        cluster.started();
        Plan<PyTorchJobStatus> idle = cluster.reconcile();
        assertTrue(!idle.statusChanged() && idle.podsToCreate().isEmpty() && idle.servicesToCreate().isEmpty());
    }

    @Test
    void aFinishedJobIsDeletedOnceItsTimeToLiveIsOver() {
        KubeflowCluster cluster = job("runPolicy: {ttlSecondsAfterFinished: 60}\npytorchReplicaSpecs:\n  Worker: {template: " + POD + "}");
        cluster.started();
        cluster.exit("j-worker-0", 0);
        Plan<PyTorchJobStatus> done = cluster.reconcile();
        assertEquals("Succeeded", cluster.state());
        assertEquals(java.util.Optional.of(java.time.Duration.ofSeconds(60)), done.recheckAfter(), "looked at again when it expires");
        assertTrue(!done.deleteJob());
        cluster.now = cluster.now.plusSeconds(59);
        assertTrue(!cluster.reconcile().deleteJob(), "not yet");
        cluster.now = cluster.now.plusSeconds(1);
        assertTrue(cluster.reconcile().deleteJob(), "60 s after completionTime");
    }

    @Test
    void aJobWithoutTimeToLiveIsKept() {
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Worker: {template: " + POD + "}");
        cluster.settle();
        cluster.runAll();
        cluster.exit("j-worker-0", 0);
        cluster.settle();
        cluster.now = cluster.now.plusSeconds(365L * 24 * 3600);
        assertTrue(!cluster.reconcile().deleteJob());
    }

    @Test
    void aJobManagedByMultiKueueIsLeftAlone() {
        KubeflowCluster cluster = job("runPolicy: {managedBy: kueue.x-k8s.io/multikueue}\npytorchReplicaSpecs:\n  Worker: {template: " + POD + "}");
        Plan<PyTorchJobStatus> plan = cluster.reconcile();
        assertTrue(plan.podsToCreate().isEmpty() && plan.servicesToCreate().isEmpty() && !plan.statusChanged());
        assertTrue(cluster.job.getStatus().conditions.isEmpty() && cluster.job.getStatus().phase == null, "its status is MultiKueue's to write");
    }

    @Test
    void anElasticJobWithMetricsGetsAnAutoscalerThatFollowsItsSpecAndGoesWhileSuspended() throws IOException {
        KubeflowCluster cluster = new KubeflowCluster(Files.readString(Path.of("kubernetes/examples/kubeflow/05-elastic.yaml")));
        cluster.settle();
        var hpa = cluster.autoscaler;
        assertNotNull(hpa, "elasticPolicy.metrics asks for one");
        assertEquals("elastic-example", hpa.getMetadata().getName());
        assertEquals(List.of("kubeflow.org/v1", "PyTorchJob", "elastic-example"), List.of(hpa.getSpec().getScaleTargetRef().getApiVersion(),
                hpa.getSpec().getScaleTargetRef().getKind(), hpa.getSpec().getScaleTargetRef().getName()));
        assertEquals(2, hpa.getSpec().getMinReplicas());
        assertEquals(4, hpa.getSpec().getMaxReplicas());
        assertEquals(80, hpa.getSpec().getMetrics().get(0).getResource().getTarget().getAverageUtilization());
        assertEquals("PyTorchJob", hpa.getMetadata().getOwnerReferences().get(0).getKind());
        assertTrue(cluster.reconcile().objectsToApply().isEmpty(), "an autoscaler that is as wanted is left alone");

        cluster.job.getSpec().elasticPolicy.maxReplicas = 6;
        assertEquals(6, ((io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler) cluster.reconcile().objectsToApply().get(0))
                .getSpec().getMaxReplicas(), "brought up to date with the spec");

        cluster.job.getSpec().runPolicy = new dev.torchjob.operator.api.kubeflow.KubeflowRunPolicy();
        cluster.job.getSpec().runPolicy.suspend = true;
        cluster.settle();
        assertNull(cluster.autoscaler, "a suspended job has no autoscaler");
    }

    @Test
    void theDeadlineEndsTheJobWithoutWaitingForAnEventAndCleansUp() {
        KubeflowCluster cluster = job("runPolicy: {activeDeadlineSeconds: 600, cleanPodPolicy: Running}\npytorchReplicaSpecs:\n  Worker: {replicas: 2, template: "
                + POD + "}");
        cluster.settle();
        cluster.runAll();
        Plan<PyTorchJobStatus> running = cluster.reconcile();
        assertTrue(running.recheckAfter().isPresent(), "a running job with a deadline asks to be looked at again");
        cluster.now = cluster.now.plusSeconds(600);
        cluster.settle();
        assertEquals("Failed", cluster.state());
        assertEquals("DeadlineExceeded", cluster.job.getStatus().failureReason);
        assertNotNull(cluster.job.getStatus().completionTime);
        assertTrue(cluster.pods.isEmpty() && cluster.services.isEmpty(), "its running pods are cleaned up");
    }

    @Test
    void replicasThatCannotStartAreSaidInAConditionThatLeavesTheStateColumnKubeflows() {
        KubeflowCluster cluster = job("pytorchReplicaSpecs:\n  Master: {template: " + POD + "}\n  Worker: {replicas: 2, template: " + POD + "}");
        cluster.settle();
        dev.torchjob.operator.testing.PodFates.unschedulable(cluster.pods.get("j-worker-1"), "0/1 nodes are available: 1 Insufficient cpu.");
        cluster.settle();
        KubeflowCondition held = condition(cluster, KubeflowConditions.REPLICA_CANNOT_START);
        assertEquals("True", held.status);
        assertEquals("Unschedulable", held.reason);
        assertEquals("pod j-worker-1 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu. The job waits for them; nothing "
                + "is counted.", held.message);
        assertEquals(List.of("ReplicaCannotStart=True", "Created=True"), cluster.conditionTypes());
        assertEquals("Created", cluster.state(), "the State column is Kubeflow's");
        assertEquals("Unschedulable", cluster.job.getStatus().tasks.get(1).replicas.get(1).cannotStart.reason);
        assertEquals(1, cluster.plans.stream().flatMap(p -> p.events().stream()).filter(e -> e.reason().equals("ReplicaCannotStart")).count());

        cluster.runAll();
        cluster.settle();
        assertEquals(List.of("ReplicaCannotStart=False", "Created=True", "Running=True"), cluster.conditionTypes());
        assertEquals("Running", cluster.state());
        assertEquals(0, cluster.job.getStatus().tasks.stream().mapToInt(t -> t.restartCount == null ? 0 : t.restartCount).sum());
    }
}
