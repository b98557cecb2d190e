package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;

/** What the job's side of the Workload protocol writes, decided from the job and the Workload as observed. */
class WorkloadSyncTest {
    static final Instant NOW = Instant.parse("2026-11-24T12:00:00Z");
    static final List<KueueWorkload.PodSet> POD_SETS = List.of(
            new KueueWorkload.PodSet("master", KueueProtocolTest.template(), 1, Optional.empty(), null),
            new KueueWorkload.PodSet("worker", KueueProtocolTest.template(), 8, Optional.of(2), null));

    static JobState state(JobPhase phase, Outcome outcome) {
        return new JobState(true, phase, null, null, 0, List.of(), List.of(), null, false, false, JobState.Pause.NEVER, false, false, outcome);
    }

    static final JobState PENDING = state(JobPhase.Pending, null);
    /** The queue KueueProtocolTest's Workloads are in, which the jobs here name. */
    static final Optional<String> QUEUE = Optional.of("team-a-user-queue");
    /** A Workload status: admitted whole, its master on the spot flavor, its workers on the a100 one. */
    static final String ADMITTED = """
            conditions:
            - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "Quota reserved"}
            - {type: Admitted, status: "True", reason: Admitted, message: "admitted"}
            admission:
              clusterQueue: gpu-cq
              podSetAssignments:
              - {name: master, count: 1, flavors: {cpu: spot}}
              - {name: worker, count: 8, flavors: {nvidia.com/gpu: a100}}
            """;

    static WorkloadSync.Job job(JobState state, boolean paused, int podsLeft, int podsReady) {
        return new WorkloadSync.Job(state, paused, POD_SETS, podsLeft, podsReady, Optional.empty(), QUEUE);
    }

    static GenericKubernetesResource workload(String status) {
        GenericKubernetesResource workload = KueueProtocolTest.workload(status);
        workload.getMetadata().setFinalizers(new java.util.ArrayList<>(List.of(KueueWorkload.FINALIZER)));
        return workload;
    }

    static WorkloadSync.Changes sync(WorkloadSync.Job job, GenericKubernetesResource workload) {
        return WorkloadSync.of(job, Optional.of(workload), Optional.of(KueueAdmission.of(workload, KueueProtocolTest.FLAVORS)), NOW);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> condition(Map<String, Object> status, String type) {
        return ((List<Map<String, Object>>) status.get("conditions")).stream().filter(c -> type.equals(c.get("type"))).findFirst().orElse(null);
    }

    @Test
    void aWorkloadIsCreatedOnlyForAJobThatCanStartAndHasNoPodLeft() {
        assertTrue(WorkloadSync.of(job(PENDING, false, 0, 0), Optional.empty(), Optional.empty(), NOW).create());
        assertFalse(WorkloadSync.of(job(PENDING, false, 1, 0), Optional.empty(), Optional.empty(), NOW).create(),
                "pods of an earlier admission must be gone first");
        assertFalse(WorkloadSync.of(job(PENDING, true, 0, 0), Optional.empty(), Optional.empty(), NOW).create(),
                "a paused job asks for no quota");
        assertFalse(WorkloadSync.of(job(state(JobPhase.Succeeded, Outcome.Succeeded), false, 0, 0), Optional.empty(), Optional.empty(), NOW)
                .create());
        assertFalse(WorkloadSync.of(new WorkloadSync.Job(PENDING, false, List.of(), 0, 0, Optional.empty(), QUEUE), Optional.empty(), Optional.empty(), NOW).create(),
                "an invalid job has nothing to ask for");
    }

    @Test
    void aWaitingJobWritesNothing() {
        assertFalse(sync(job(PENDING, false, 0, 0), workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "insufficient quota"}
                """)).any());
    }

    @Test
    void afterAnEvictionTheReservationIsReleasedOnceThePodsAreGone() {
        String evicted = """
                conditions:
                - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "Quota reserved in ClusterQueue gpu-cq", lastTransitionTime: "2026-11-24T11:00:00Z"}
                - {type: Admitted, status: "True", reason: Admitted, message: "admitted", lastTransitionTime: "2026-11-24T11:00:00Z"}
                - {type: Evicted, status: "True", reason: Preempted, message: "Preempted to accommodate a higher priority Workload", lastTransitionTime: "2026-11-24T11:59:00Z"}
                admission:
                  clusterQueue: gpu-cq
                  podSetAssignments:
                  - {name: master, count: 1, flavors: {cpu: spot}}
                  - {name: worker, count: 8, flavors: {nvidia.com/gpu: a100}}
                """;
        assertFalse(sync(job(PENDING, false, 2, 0), workload(evicted)).any(), "the quota is held while pods are left");

        Map<String, Object> status = sync(job(PENDING, false, 0, 0), workload(evicted)).status();
        assertNull(status.get("admission"));
        assertEquals(List.of("False", "Pending", "Preempted to accommodate a higher priority Workload", "2026-11-24T12:00:00Z"),
                List.of(condition(status, "QuotaReserved").get("status"), condition(status, "QuotaReserved").get("reason"),
                        condition(status, "QuotaReserved").get("message"), condition(status, "QuotaReserved").get("lastTransitionTime")));
        assertEquals("False", condition(status, "Admitted").get("status"));
        assertEquals(List.of("True", "Preempted"), List.of(condition(status, "Requeued").get("status"), condition(status, "Requeued").get("reason")));
        assertEquals("True", condition(status, "Evicted").get("status"), "Kueue's own condition is left as Kueue wrote it");
        assertEquals(3600, status.get("accumulatedPastExecutionTimeSeconds"), "admitted from 11:00 to 12:00, as Kueue counts it");
    }

    @Test
    void eachAdmissionsTimeIsAddedToWhatTheWorkloadHasRunBefore() {
        Map<String, Object> status = sync(job(PENDING, false, 0, 0), workload("""
                conditions:
                - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "Quota reserved", lastTransitionTime: "2026-11-24T11:59:00Z"}
                - {type: Admitted, status: "True", reason: Admitted, message: "admitted", lastTransitionTime: "2026-11-24T11:59:30Z"}
                - {type: Evicted, status: "True", reason: DeactivatedDueToMaximumExecutionTimeExceeded, message: "The workload is deactivated due to exceeding the maximum execution time"}
                accumulatedPastExecutionTimeSeconds: 100
                admission:
                  clusterQueue: gpu-cq
                  podSetAssignments:
                  - {name: master, count: 1, flavors: {cpu: spot}}
                  - {name: worker, count: 8, flavors: {nvidia.com/gpu: a100}}
                """)).status();
        assertEquals(130, status.get("accumulatedPastExecutionTimeSeconds"), "30 s since the admission, after 100 s before");
        assertEquals(List.of("False", "DeactivatedDueToMaximumExecutionTimeExceeded"), List.of(condition(status, "Requeued").get("status"),
                condition(status, "Requeued").get("reason")), "Kueue requeues a deactivated Workload only once it is reactivated");

        Map<String, Object> neverAdmitted = sync(job(PENDING, false, 0, 0), workload("""
                conditions:
                - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "Quota reserved", lastTransitionTime: "2026-11-24T11:59:00Z"}
                - {type: Evicted, status: "True", reason: AdmissionCheck, message: "rejected"}
                """)).status();
        assertNull(neverAdmitted.get("accumulatedPastExecutionTimeSeconds"), "quota reserved but never admitted: nothing ran");
    }

    @Test
    void theJobsMaximumExecutionTimeFollowsItsLabelWhileNoQuotaIsHeld() {
        WorkloadSync.Job limited = new WorkloadSync.Job(PENDING, false, POD_SETS, 0, 0, Optional.of(600), QUEUE);
        WorkloadSync.Changes waiting = sync(limited, workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "insufficient quota"}
                """));
        assertEquals(Map.of("maximumExecutionTimeSeconds", 600), waiting.spec());
        assertNull(waiting.status());

        GenericKubernetesResource hasIt = workload("conditions: []");
        spec(hasIt).put("maximumExecutionTimeSeconds", 600);
        assertFalse(sync(limited, hasIt).any(), "already so");
        WorkloadSync.Changes removed = sync(job(PENDING, false, 0, 0), hasIt);
        assertTrue(removed.spec().containsKey("maximumExecutionTimeSeconds") && removed.spec().get("maximumExecutionTimeSeconds") == null,
                "the label removed: the field goes");

        GenericKubernetesResource admitted = workload(ADMITTED);
        assertNull(sync(limited, admitted).spec(), "fixed while quota is held, as Kueue's validation requires");
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> spec(GenericKubernetesResource workload) {
        return (Map<String, Object>) workload.getAdditionalProperties().get("spec");
    }

    @Test
    void anEvictedWorkloadNoLongerSaysItsPodsAreReady() {
        Map<String, Object> status = sync(job(PENDING, false, 0, 0), workload("""
                conditions:
                - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "Quota reserved"}
                - {type: Admitted, status: "True", reason: Admitted, message: "admitted"}
                - {type: PodsReady, status: "True", reason: Started, message: "All pods reached readiness and the workload is running"}
                - {type: Evicted, status: "True", reason: Preempted, message: "Preempted to accommodate a higher priority Workload"}
                admission:
                  clusterQueue: gpu-cq
                  podSetAssignments:
                  - {name: master, count: 1, flavors: {cpu: spot}}
                  - {name: worker, count: 8, flavors: {nvidia.com/gpu: a100}}
                """)).status();
        assertEquals(List.of("False", "WaitForStart"), List.of(condition(status, "PodsReady").get("status"),
                condition(status, "PodsReady").get("reason")), "released with the reservation, until the pods run again");

        assertFalse(sync(job(PENDING, false, 0, 0), workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "insufficient quota"}
                - {type: PodsReady, status: "False", reason: WaitForStart, message: "Not all pods are ready or succeeded"}
                """)).any(), "a waiting Workload already saying so is not written again");
    }

    @Test
    void anEvictionForAnyOtherReasonIsNotRequeuedByTheJob() {
        Map<String, Object> status = sync(job(PENDING, false, 0, 0), workload("""
                conditions:
                - {type: QuotaReserved, status: "True"}
                - {type: Evicted, status: "True", reason: PodsReadyTimeout, message: "Exceeded the PodsReady timeout"}
                """)).status();
        assertEquals(List.of("False", "PodsReadyTimeout"), List.of(condition(status, "Requeued").get("status"),
                condition(status, "Requeued").get("reason")));
    }

    @Test
    void aFinishedJobFinishesItsWorkloadAndLetsItGo() {
        String admitted = """
                conditions:
                - {type: QuotaReserved, status: "True"}
                - {type: Admitted, status: "True"}
                """;
        var succeeded = sync(job(state(JobPhase.Succeeded, Outcome.Succeeded), false, 2, 2), workload(admitted));
        assertEquals(List.of("True", "Succeeded"), List.of(condition(succeeded.status(), "Finished").get("status"),
                condition(succeeded.status(), "Finished").get("reason")));
        assertTrue(succeeded.removeFinalizer());
        var failed = sync(job(state(JobPhase.Failed, Outcome.BackoffLimitExceeded), false, 0, 0), workload(admitted));
        assertEquals("The job failed: BackoffLimitExceeded.", condition(failed.status(), "Finished").get("message"));
        var refused = sync(job(state(JobPhase.Failed, Outcome.FailedToStart), false, 0, 0), workload(admitted));
        assertEquals("FailedToStart", condition(refused.status(), "Finished").get("reason"), "as Kueue expects of a conflict");

        GenericKubernetesResource finished = workload("""
                conditions:
                - {type: Finished, status: "True", reason: Succeeded, message: done}
                """);
        finished.getMetadata().setFinalizers(new java.util.ArrayList<>());
        assertFalse(sync(job(state(JobPhase.Succeeded, Outcome.Succeeded), false, 0, 0), finished).any(), "written once");
    }

    @Test
    @SuppressWarnings("unchecked")
    void pauseDeactivatesTheWorkloadAndResumeReactivatesOnlyWhatThePauseDeactivated() {
        String admitted = """
                conditions:
                - {type: QuotaReserved, status: "True"}
                - {type: Admitted, status: "True"}
                """;
        assertEquals(Boolean.FALSE, sync(job(PENDING, true, 2, 2), workload(admitted)).active());

        GenericKubernetesResource deactivatedByUs = workload("conditions: []");
        ((Map<String, Object>) deactivatedByUs.getAdditionalProperties().get("spec")).put("active", false);
        deactivatedByUs.getMetadata().setAnnotations(Map.of(WorkloadSync.PAUSED_ANNOTATION, "true"));
        assertEquals(Boolean.TRUE, sync(job(PENDING, false, 0, 0), deactivatedByUs).active());

        GenericKubernetesResource deactivatedByAnAdmin = workload("conditions: []");
        ((Map<String, Object>) deactivatedByAnAdmin.getAdditionalProperties().get("spec")).put("active", false);
        assertNull(sync(job(PENDING, false, 0, 0), deactivatedByAnAdmin).active(), "an administrator's deactivation stands");
    }

    /** Admitted for a master and 5 workers, with this PodsReady condition (none when null). */
    static GenericKubernetesResource admittedWithPodsReady(String status, String reason) {
        return workload("""
                conditions:
                - {type: QuotaReserved, status: "True"}
                - {type: Admitted, status: "True"}
                %s
                admission:
                  clusterQueue: gpu-cq
                  podSetAssignments:
                  - {name: master, count: 1, flavors: {cpu: spot}}
                  - {name: worker, count: 5, flavors: {nvidia.com/gpu: a100}}
                """.formatted(status == null ? "" : "- {type: PodsReady, status: \"" + status + "\", reason: " + reason + ", message: \""
                + ("True".equals(status) ? "All pods reached readiness and the workload is running" : "Not all pods are ready or succeeded")
                + "\"}"));
    }

    static List<Object> podsReady(Map<String, Object> status) {
        return List.of(condition(status, "PodsReady").get("status"), condition(status, "PodsReady").get("reason"));
    }

    @Test
    void podsReadyFollowsThePods() {
        var starting = sync(job(state(JobPhase.Pending, null), false, 6, 3), admittedWithPodsReady(null, null)).status();
        assertEquals(List.of("False", "WaitForStart"), podsReady(starting));
        var started = sync(job(state(JobPhase.Running, null), false, 6, 6), admittedWithPodsReady(null, null)).status();
        assertEquals(List.of("True", "Started"), podsReady(started), "6 of the admitted 1 + 5 pods (partial admission)");

        GenericKubernetesResource wasReady = admittedWithPodsReady("True", "Started");
        var restarting = sync(job(state(JobPhase.Running, null), false, 6, 5), wasReady).status();
        assertEquals(List.of("False", "WaitForRecovery"), podsReady(restarting));
        assertFalse(sync(job(state(JobPhase.Running, null), false, 6, 6), wasReady).any(), "nothing written while nothing changes");

        var recovered = sync(job(state(JobPhase.Running, null), false, 6, 6), admittedWithPodsReady("False", "WaitForRecovery")).status();
        assertEquals(List.of("True", "Recovered"), podsReady(recovered));
        assertFalse(sync(job(state(JobPhase.Running, null), false, 6, 6), admittedWithPodsReady("True", "Recovered")).any(),
                "a recovered workload stays Recovered, as Kueue's");
    }

    /**
     * The pass that restarts the group deletes pods that still look ready in the cache: they are counted as
     * not ready, so PodsReady falls in that very pass (Kueue's recovery starts), whatever the next look sees;
     * a failed pod is not ready whatever its Ready condition says.
     */
    @Test
    void podsThePassDeletesOrThatFailedAreNotReady() {
        JobState running = state(JobPhase.Running, null);
        List<io.fabric8.kubernetes.api.model.Pod> pods = new java.util.ArrayList<>();
        for (String name : List.of("j-master-0", "j-worker-0", "j-worker-1")) {
            io.fabric8.kubernetes.api.model.Pod pod = new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata().withName(name)
                    .addNewOwnerReference().withUid("job-uid").withController(true).withKind("PyTorchTrainingJob").withName("j")
                    .withApiVersion("batch.tensorstack.dev/v1beta1").endOwnerReference().endMetadata()
                    .withNewSpec().addNewContainer().withName("pytorch").endContainer().endSpec().build();
            dev.torchjob.operator.testing.PodFates.ready(pod);
            pods.add(pod);
        }
        assertEquals(3, WorkloadSync.Job.of(running, false, POD_SETS, "job-uid", pods, java.util.Set.of(), Optional.empty(), QUEUE).podsReady());
        WorkloadSync.Job restarting = WorkloadSync.Job.of(running, false, POD_SETS, "job-uid", pods,
                java.util.Set.of("j-master-0", "j-worker-0", "j-worker-1"), Optional.empty(), QUEUE);
        assertEquals(List.of(3, 0), List.of(restarting.podsLeft(), restarting.podsReady()), "still there, using the quota; none ready");
        pods.get(2).getStatus().setPhase("Failed");
        assertEquals(2, WorkloadSync.Job.of(running, false, POD_SETS, "job-uid", pods, java.util.Set.of(), Optional.empty(), QUEUE).podsReady());
    }

    @Test
    @SuppressWarnings("unchecked")
    void aWorkloadThatNoLongerFitsTheJobIsReplacedOrUpdated() {
        List<KueueWorkload.PodSet> bigger = List.of(POD_SETS.get(0), new KueueWorkload.PodSet("worker", KueueProtocolTest.template(), 16,
                Optional.of(2), null));
        var reserved = WorkloadSync.of(new WorkloadSync.Job(PENDING, false, bigger, 0, 0, Optional.empty(), QUEUE), Optional.of(workload("""
                conditions:
                - {type: QuotaReserved, status: "True"}
                """)), Optional.empty(), NOW);
        assertTrue(reserved.delete() && reserved.removeFinalizer(), "its podSets are fixed while quota is held: a new Workload is made");
        var waiting = WorkloadSync.of(new WorkloadSync.Job(PENDING, false, bigger, 0, 0, Optional.empty(), QUEUE), Optional.of(workload("conditions: []")),
                Optional.empty(), NOW);
        assertFalse(waiting.delete());
        assertEquals(16, ((List<Map<String, Object>>) waiting.spec().get("podSets")).get(1).get("count"));
    }

    @Test
    void theWorkloadFollowsTheJobsQueueLabelWhileNoQuotaIsHeld() {
        WorkloadSync.Job moved = new WorkloadSync.Job(PENDING, false, POD_SETS, 0, 0, Optional.empty(), Optional.of("team-a-spare-queue"));
        WorkloadSync.Changes waiting = sync(moved, workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "insufficient quota"}
                """));
        assertEquals(Map.of("queueName", "team-a-spare-queue"), waiting.spec());
        assertFalse(waiting.delete());
        assertNull(sync(moved, workload(ADMITTED)).spec(), "Kueue refuses changing the queue while quota is held");
    }

    @Test
    void aJobWhoseQueueLabelIsGoneLetsItsWorkloadGoOnlyOnceItHoldsNoQuota() {
        WorkloadSync.Job unlabelled = new WorkloadSync.Job(PENDING, false, POD_SETS, 0, 0, Optional.empty(), Optional.empty());
        WorkloadSync.Changes waiting = sync(unlabelled, workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "insufficient quota"}
                """));
        assertTrue(waiting.delete() && waiting.removeFinalizer(), "it leaves the queue: the Workload goes, finalizer first");
        assertFalse(WorkloadSync.of(unlabelled, Optional.empty(), Optional.empty(), NOW).create(), "and no new one is made");

        WorkloadSync.Job runningUnlabelled = new WorkloadSync.Job(state(JobPhase.Running, null), false, POD_SETS, 9, 9, Optional.empty(),
                Optional.empty());
        WorkloadSync.Changes admitted = sync(runningUnlabelled, workload(ADMITTED));
        assertFalse(admitted.delete(), "an admitted job keeps its Workload, and its quota counted, while it runs");
        assertEquals("True", condition(admitted.status(), "PodsReady").get("status"), "and the protocol goes on");

        WorkloadSync.Changes finished = sync(new WorkloadSync.Job(state(JobPhase.Succeeded, Outcome.Succeeded), false, POD_SETS, 0, 0,
                Optional.empty(), Optional.empty()), workload("""
                conditions:
                - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "Quota reserved"}
                - {type: Admitted, status: "True", reason: Admitted, message: "admitted"}
                """));
        assertEquals("True", condition(finished.status(), "Finished").get("status"), "its end gives the quota back");
        assertFalse(finished.delete());
    }

    @Test
    void aWorkloadBeingDeletedIsLetGoOnceThePodsAreGone() {
        GenericKubernetesResource deleting = workload("conditions: []");
        deleting.getMetadata().setDeletionTimestamp("2026-11-24T11:00:00Z");
        assertFalse(sync(job(PENDING, false, 1, 1), deleting).removeFinalizer());
        assertTrue(sync(job(PENDING, false, 0, 0), deleting).removeFinalizer());
    }
}
