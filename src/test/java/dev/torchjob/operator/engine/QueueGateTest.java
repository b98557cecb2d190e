package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.Pause;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.engine.TrainingJob.RunPolicy;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;

/** The queue's gate (Kueue) in front of every pod: waiting, admission, eviction, readmission, refusal. */
class QueueGateTest {
    static final QueueAdmission WAITING = new QueueAdmission.Waiting("team-a-user-queue", "waiting for quota");
    static final QueueAdmission ADMITTED = new QueueAdmission.Admitted("gpu-cq", Map.of(), QueueAdmission.PodAdmission.NONE);
    static final QueueAdmission PREEMPTED = new QueueAdmission.Evicted("team-a-user-queue", "Preempted", "Preempted to accommodate a higher priority Workload");

    @Test
    void aWaitingJobCreatesNothingAndSaysWhereItWaitsOnce() {
        Run run = new Run(2, 3);
        run.queue = WAITING;
        Decision first = run.pass();
        assertTrue(first.podsToCreate().isEmpty() && !first.createService(), "no pod, no Service before admission");
        assertEquals(JobPhase.Pending, first.state().phase());
        var queued = (Situation.Queued) first.situation();
        assertEquals(List.of("team-a-user-queue", "WaitingForAdmission", "Waiting in LocalQueue team-a-user-queue: waiting for quota"),
                List.of(queued.queue(), queued.reason(), queued.message()));
        assertEquals(List.of(JobEvent.normal("Queued", queued.message())), first.events());
        assertTrue(run.pass().events().isEmpty(), "said once");
        assertNull(first.state().startTime(), "a queued job has not started");
    }

    @Test
    void admissionCreatesThePodsWithWhatItAddsAndSaysItOnce() {
        Run run = new Run(2, 3);
        run.queue = WAITING;
        run.pass();
        run.queue = new QueueAdmission.Admitted("gpu-cq", Map.of(), (type, pod) -> {
            pod.getMetadata().setLabels(Map.of("kueue.x-k8s.io/podset", type));
            return pod;
        });
        Decision admitted = run.pass();
        assertEquals(3, admitted.podsToCreate().size());
        assertTrue(admitted.podsToCreate().stream().allMatch(r -> r.mode() == Decision.PodMode.TRAIN), "a first admission is a first start");
        assertEquals(List.of(JobEvent.normal("Admitted", "Admitted by ClusterQueue gpu-cq")), admitted.events());
        assertTrue(run.pass().events().isEmpty());
    }

    @Test
    void anEvictionDeletesEveryPodCountsNothingAndReadmissionResumesTheJob() {
        Run run = new Run(2, 0);
        run.queue = ADMITTED;
        run.pass();
        run.fail("j-worker-1", 137); // a failure the eviction overtakes: not counted either
        run.queue = PREEMPTED;
        Decision evicted = run.pass();
        assertEquals(3, evicted.podsToDelete().size());
        assertTrue(evicted.podsToDelete().stream().allMatch(d -> d.reason() == DeletionReason.QUEUE));
        assertEquals(0, evicted.state().backoffCount(), "an eviction is not a failure, even with backoffLimit 0");
        assertEquals(Pause.EVICTED, evicted.state().pause());
        assertEquals("Evicted", ((Situation.Queued) evicted.situation()).reason());
        assertEquals(JobEvent.Type.Warning, evicted.events().get(0).type());
        assertTrue(evicted.events().get(0).message().contains("Preempted to accommodate"), evicted.events().toString());
        assertTrue(evicted.state().replicaGroups().stream().flatMap(g -> g.replicas().stream()).allMatch(r -> r.uid() == null),
                "the deleted pods are forgotten: none is taken for vanished later");

        run.queue = new QueueAdmission.Waiting("team-a-user-queue", "Preempted to accommodate a higher priority Workload");
        Decision requeued = run.pass();
        assertEquals("Requeued", ((Situation.Queued) requeued.situation()).reason());
        assertTrue(requeued.events().isEmpty());

        run.now = run.now.plusSeconds(600);
        run.queue = ADMITTED;
        Decision readmitted = run.pass();
        assertEquals(3, readmitted.podsToCreate().size());
        assertTrue(readmitted.podsToCreate().stream().allMatch(r -> r.mode() == Decision.PodMode.RESUME), "resumed like a paused job");
        assertEquals(run.now, readmitted.state().startTime(), "startTime restarts with the new pods");
        assertEquals(JobPhase.Resuming, readmitted.state().phase());
        assertEquals(List.of(JobEvent.normal("Admitted", "Admitted by ClusterQueue gpu-cq; the job resumes after its eviction")),
                readmitted.events());
        assertEquals(0, readmitted.state().backoffCount());
    }

    @Test
    void anEvictionBeforeThePodsAreGoneWaitsForThem() {
        Run run = new Run(1, 3);
        run.queue = ADMITTED;
        run.pass();
        run.pods.get("j-master-0").getMetadata().setDeletionTimestamp("2026-01-01T00:00:00Z");
        run.queue = PREEMPTED;
        Decision decision = run.pass();
        assertEquals(2, ((Situation.Queued) decision.situation()).podsLeft(), "a terminating pod still holds its quota");
        assertEquals(1, decision.podsToDelete().size(), "only the pod that is not terminating yet is deleted");
    }

    @Test
    void anAdmissionThatCannotBeAppliedFailsTheJobWithoutCreatingAPod() {
        Run run = new Run(2, 3);
        run.queue = new QueueAdmission.Refused("podSet worker: nodeSelector gpu is h100 and the admission asks for a100");
        Decision decision = run.pass();
        assertEquals(Outcome.FailedToStart, decision.state().outcome());
        assertEquals(JobPhase.Failed, decision.state().phase());
        assertTrue(decision.podsToCreate().isEmpty());
        assertTrue(((Situation.Ended) decision.situation()).message().contains("nodeSelector gpu is h100"));
    }

    @Test
    void withoutKueueTheJobWaitsAndIsLookedAtAgain() {
        Run run = new Run(1, 3);
        run.queue = new QueueAdmission.Unavailable("q", "Kueue's Workload API is not installed");
        Decision decision = run.pass();
        assertEquals("KueueUnavailable", ((Situation.Queued) decision.situation()).reason());
        assertEquals(Optional.of(Engine.ADMISSION_RECHECK), decision.recheckAfter());
        assertEquals(JobEvent.Type.Warning, decision.events().get(0).type());
        assertTrue(decision.podsToCreate().isEmpty());
    }

    @Test
    void aJobItsQueueRefusesWaitsSayingWhyWithoutRecheckingUntilItChanges() {
        Run run = new Run(1, 3);
        run.queue = new QueueAdmission.Invalid("q", "the label kueue.x-k8s.io/max-exec-time-seconds is \"1h\"");
        Decision decision = run.pass();
        Situation.Queued queued = (Situation.Queued) decision.situation();
        assertEquals(List.of("InvalidQueueRequest", "Not queued in LocalQueue q: the label kueue.x-k8s.io/max-exec-time-seconds is \"1h\""),
                List.of(queued.reason(), queued.message()));
        assertEquals(Optional.empty(), decision.recheckAfter(), "fixing the label is a change of the job, which starts a pass");
        assertEquals(JobEvent.Type.Warning, decision.events().get(0).type());
        assertTrue(decision.podsToCreate().isEmpty());
        assertTrue(run.pass().events().isEmpty(), "said once");
    }

    @Test
    void aJobKueueDeactivatedIsDeletedOnceItsRetentionIsOverAndNotBefore() {
        Run run = new Run(1, 3);
        Instant at = run.now.plusSeconds(60);
        run.queue = new QueueAdmission.Waiting("q", "the Workload w is deactivated (spec.active is false)", Optional.of(at));
        Decision kept = run.pass();
        assertFalse(kept.deleteJob());
        assertEquals(Optional.of(Duration.ofSeconds(60)), kept.recheckAfter(), "looked at again when it is due");
        run.now = at;
        Decision deleted = run.pass();
        assertTrue(deleted.deleteJob());
        assertEquals("Deleted", deleted.events().get(0).reason());
        assertTrue(deleted.events().get(0).message().contains("deactivated by Kueue and not reactivated by " + at), deleted.events().toString());
    }

    @Test
    void aJobKueueDeactivatedWhilePodsAreLeftIsNotDeletedBeforeTheyAreGone() {
        Run run = new Run(1, 3);
        run.queue = ADMITTED;
        run.pass();
        run.pods.get("j-master-0").getMetadata().setDeletionTimestamp("2026-01-01T00:00:00Z");
        run.queue = new QueueAdmission.Waiting("q", "deactivated", Optional.of(run.now.minusSeconds(1)));
        assertFalse(run.pass().deleteJob(), "its pods end first; the job is looked at again when they are gone");
    }

    @Test
    void aJobThatMustNameAQueueAndNamesNoneWaitsSayingHowThenRunsOnceQueuedAndAdmitted() {
        Run run = new Run(1, 3);
        run.queue = new QueueAdmission.NoQueueName("Kueue manages every job in namespace team-a and this one names no LocalQueue");
        Decision held = run.pass();
        Situation.Queued queued = (Situation.Queued) held.situation();
        assertEquals(List.of("QueueNameMissing", "Kueue manages every job in namespace team-a and this one names no LocalQueue"),
                List.of(queued.reason(), queued.message()));
        assertTrue(held.podsToCreate().isEmpty() && !held.createService(), "nothing of it runs");
        assertEquals(JobPhase.Pending, held.state().phase());
        assertNull(held.state().startTime(), "a held job has not started: a default LocalQueue made later may still take it");
        assertEquals(List.of(JobEvent.warning("QueueNameMissing", queued.message())), held.events());
        assertEquals(Optional.empty(), held.recheckAfter(), "a label, or a default LocalQueue made later, is an event that brings it back");
        assertTrue(run.pass().events().isEmpty(), "said once");

        run.queue = WAITING; // labelled by its user
        assertEquals("WaitingForAdmission", ((Situation.Queued) run.pass().situation()).reason());
        run.queue = ADMITTED;
        Decision admitted = run.pass();
        assertEquals(2, admitted.podsToCreate().size(), "the master and its worker");
        assertTrue(admitted.podsToCreate().stream().allMatch(r -> r.mode() == Decision.PodMode.TRAIN), "a first start, not a resume");
    }

    @Test
    void aPauseWinsOverTheQueueAndResumingGoesBackToWaiting() {
        Run run = new Run(1, 3);
        run.queue = ADMITTED;
        run.pass();
        run.runMode(RunMode.PAUSE);
        Decision pausing = run.pass();
        assertEquals(DeletionReason.PAUSE, pausing.podsToDelete().get(0).reason());
        run.pass();
        assertEquals(Pause.PAUSED, run.state.pause());
        run.runMode(RunMode.TRAIN);
        run.queue = WAITING;
        Decision resumed = run.pass();
        assertTrue(resumed.resumed());
        assertTrue(resumed.podsToCreate().isEmpty(), "resumed, but its Workload must be admitted again first");
        run.queue = ADMITTED;
        assertTrue(run.pass().podsToCreate().stream().allMatch(r -> r.mode() == Decision.PodMode.RESUME));
    }

    @Test
    void anElasticJobRunsTheReplicasItWasAdmittedWith() {
        TrainingJob elastic = new TrainingJob("j", "ns", "job-uid", 1L, List.of(new ReplicaGroup("worker", 2, RestartPolicy.OnFailure)),
                new RunPolicy(3, null, CleanPodPolicy.None), RunMode.TRAIN, SuccessRule.ANY_REPLICA, RetryableExitCodes.FROM_128, true,
                Optional.empty());
        assertEquals(5, elastic.admitted(Map.of("worker", 5)).groups().get(0).replicas(), "partial admission: 5 of maxReplicas");
        TrainingJob fixed = Run.job(2, 3);
        assertEquals(fixed, fixed.admitted(Map.of("worker", 1)), "a job that is not elastic is admitted whole");
    }

    @Test
    void aJobWithoutAQueueIsNotGated() {
        Run run = new Run(1, 3);
        Decision decision = run.pass();
        assertEquals(2, decision.podsToCreate().size());
        assertTrue(!decision.state().queued());
    }
}
