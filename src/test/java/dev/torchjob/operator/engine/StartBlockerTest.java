package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.StartBlocker.PodWarning;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.RunPolicy;
import dev.torchjob.operator.testing.PodFates;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Pods that cannot start (no node fits them, their image cannot be had, a ConfigMap or a volume is
 * missing): the job waits, says which replica and why once per pod and cause, counts nothing, and
 * goes on by itself once the cause is fixed.
 */
class StartBlockerTest {
    private static final String NO_NODE = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
            + "1 No preemption victims found for incoming pod.";

    @Test
    void aPodNoNodeCanFitMakesTheJobWaitSayingWhichReplicaAndWhyOnceAndCountingNothing() {
        Run run = new Run(2, 1);
        run.pass();
        PodFates.unschedulable(run.pods.get("j-worker-1"), NO_NODE);
        Decision held = run.pass();

        List<StartBlocker> blocked = ((Situation.Active) held.situation()).cannotStart();
        assertEquals(List.of(new StartBlocker("Unschedulable", "pod j-worker-1 cannot be scheduled: "
                + NO_NODE.substring(0, NO_NODE.length() - 1))), blocked, "the scheduler's words, as a clause");
        assertEquals(List.of("ReplicaCannotStart"), reasons(held), "one Warning event");
        assertEquals(JobEvent.Type.Warning, held.events().get(0).type());
        assertTrue(held.events().get(0).message().startsWith("pod j-worker-1 cannot be scheduled: 0/1 nodes are available"),
                held.events().get(0).message());
        assertEquals("Unschedulable", held.state().replica("j-worker-1").cannotStart().reason(), "recorded, so said once");
        assertNothingCountedOrTouched(held);

        for (int i = 0; i < 5; i++) {
            run.now = run.now.plus(Duration.ofMinutes(10));
            Decision again = run.pass();
            assertEquals(blocked, ((Situation.Active) again.situation()).cannotStart(), "still held, still said");
            assertEquals(List.of(), reasons(again), "said once, not at every pass");
            assertNothingCountedOrTouched(again);
        }

        PodFates.running(run.pods.get("j-worker-1"));
        Decision started = run.pass();
        assertEquals(List.of(), ((Situation.Active) started.situation()).cannotStart(), "a node was found: the job goes on by itself");
        assertNull(started.state().replica("j-worker-1").cannotStart());
        assertEquals(JobPhase.Running, started.state().phase());
        assertEquals(List.of(), reasons(started));
    }

    /**
     * The scheduler's own error (a plugin that fails, not a node that does not fit) keeps a pod Pending as long as it
     * stays, retried for ever: Kubernetes' gang plugin refused a group of mixed priorities so. Said as no fit is.
     */
    @Test
    void aPodTheSchedulerFailsOnIsSaidWithItsErrorOnceAndCountsNothing() {
        Run run = new Run(2, 1);
        run.pass();
        PodFates.unschedulable(run.pods.get("j-worker-1"), NO_NODE);
        run.pass();
        String error = "all pods in a single pod group should have the same priority as the pod group's priority, got 1000 and 0";
        PodFates.notScheduled(run.pods.get("j-worker-1"), "SchedulerError", error);
        Decision failing = run.pass();
        assertEquals(List.of(new StartBlocker("SchedulerError", "pod j-worker-1 cannot be scheduled (the scheduler's error, which it "
                + "retries): " + error)), ((Situation.Active) failing.situation()).cannotStart());
        assertEquals(List.of("ReplicaCannotStart"), reasons(failing), "another cause, said again");
        assertNothingCountedOrTouched(failing);
        run.now = run.now.plus(Duration.ofMinutes(10));
        Decision again = run.pass();
        assertEquals(List.of(), reasons(again), "said once");
        assertNothingCountedOrTouched(again);
        PodFates.running(run.pods.get("j-worker-1"));
        assertEquals(List.of(), ((Situation.Active) run.pass().situation()).cannotStart(), "placed once the error is gone");
    }

    /**
     * A pod held back by scheduling gates (one of the template's, or Kueue's topology gate whose ungater is not running)
     * is not scheduled at all until they are removed: said once it has been held a minute, never for the seconds
     * Kueue's own gate lasts; nothing counted; placed and running once the gates are gone.
     */
    @Test
    void aPodScheduledGatesHoldForAMinuteIsSaidNamingThemAndStartsOnceTheyAreRemoved() {
        Run run = new Run(1, 1);
        run.pass();
        Pod worker = run.pods.get("j-worker-0");
        worker.getMetadata().setCreationTimestamp(run.now.toString());
        worker.getSpec().setSchedulingGates(List.of(new io.fabric8.kubernetes.api.model.PodSchedulingGate("example.com/quota")));
        PodFates.notScheduled(worker, "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates");
        run.now = run.now.plusSeconds(20);
        Decision early = run.pass();
        assertEquals(List.of(), ((Situation.Active) early.situation()).cannotStart(), "gates that come and go are not said");
        assertEquals(List.of(), reasons(early));
        assertEquals(Optional.of(Duration.ofSeconds(40)), early.recheckAfter(), "looked at again once it is a minute old");

        run.now = run.now.plusSeconds(40);
        Decision held = run.pass();
        assertEquals(List.of(new StartBlocker("SchedulingGated", "pod j-worker-0 is held back by its scheduling gates (example.com/quota) "
                + "since " + EngineTest.T0 + ": the scheduler does not look at it until what added them removes them")),
                ((Situation.Active) held.situation()).cannotStart());
        assertEquals(List.of("ReplicaCannotStart"), reasons(held));
        assertNothingCountedOrTouched(held);
        run.now = run.now.plus(Duration.ofMinutes(10));
        assertEquals(List.of(), reasons(run.pass()), "said once");

        worker.getSpec().setSchedulingGates(null);
        PodFates.running(worker);
        Decision started = run.pass();
        assertEquals(List.of(), ((Situation.Active) started.situation()).cannotStart());
        assertEquals(JobPhase.Running, started.state().phase());
    }

    @Test
    void anImageThatCannotBePulledIsOneCauseWhileTheKubeletAlternatesErrImagePullAndImagePullBackOff() {
        Run run = new Run(1, 1);
        run.pass();
        Pod worker = run.pods.get("j-worker-0");
        PodFates.waiting(worker, run.now, "ErrImagePull", "failed to pull and unpack image \"registry.example/train:2\": not found");
        Decision first = run.pass();
        StartBlocker blocker = ((Situation.Active) first.situation()).cannotStart().get(0);
        assertEquals("ImagePullBackOff", blocker.reason());
        assertEquals("pod j-worker-0 (container pytorch) cannot start: ErrImagePull: failed to pull and unpack image "
                + "\"registry.example/train:2\": not found", blocker.message());
        assertEquals(1, first.events().size());

        for (String reason : List.of("ImagePullBackOff", "ErrImagePull", "ImagePullBackOff")) {
            PodFates.waiting(worker, run.now, reason, "Back-off pulling image \"registry.example/train:2\"");
            Decision again = run.pass();
            assertEquals("ImagePullBackOff", ((Situation.Active) again.situation()).cannotStart().get(0).reason());
            assertEquals(List.of(), reasons(again), reason + ": the same cause, said once");
            assertNothingCountedOrTouched(again);
        }
        // Pulled at last: the kubelet creates the container. Its warnings not looked up this pass, the pull's cause is gone all the same.
        PodFates.waiting(worker, run.now.minusSeconds(60), "ContainerCreating", null);
        assertEquals(List.of(), ((Situation.Active) run.pass().situation()).cannotStart());
    }

    @Test
    void eachPodAndEachCauseIsSaidOnceAndTheStatusSaysThemAll() {
        Run run = new Run(2, 1);
        run.pass();
        PodFates.waiting(run.pods.get("j-worker-0"), run.now, "ErrImageNeverPull",
                "Container image \"train:2\" is not present with pull policy of Never");
        PodFates.waiting(run.pods.get("j-worker-1"), run.now, "CreateContainerConfigError", "configmap \"settings\" not found");
        Decision both = run.pass();
        assertEquals(List.of("ErrImageNeverPull", "CreateContainerConfigError"),
                ((Situation.Active) both.situation()).cannotStart().stream().map(StartBlocker::reason).toList());
        assertEquals(List.of("ReplicaCannotStart", "ReplicaCannotStart"), reasons(both));
        assertEquals("pod j-worker-0 (container pytorch) cannot start: ErrImageNeverPull: Container image \"train:2\" is not present "
                + "with pull policy of Never; pod j-worker-1 (container pytorch) cannot start: CreateContainerConfigError: configmap "
                + "\"settings\" not found. The job waits for them; nothing is counted.",
                ((Situation.Active) both.situation()).cannotStartMessage());

        // The ConfigMap is made, but the key the pod reads is not in it: a new cause of the same pod.
        PodFates.waiting(run.pods.get("j-worker-1"), run.now, "CreateContainerConfigError", "couldn't find key lr in ConfigMap");
        assertEquals(List.of(), reasons(run.pass()), "the same cause in other words: said once");
        PodFates.waiting(run.pods.get("j-worker-1"), run.now, "ImagePullBackOff", "Back-off pulling image");
        Decision other = run.pass();
        assertEquals(1, other.events().size(), "another cause of the same pod is said");
        assertTrue(other.events().get(0).message().startsWith("pod j-worker-1 (container pytorch) cannot start: ImagePullBackOff"));
    }

    @Test
    void aVolumeThatCannotBeMountedIsReadFromThePodsWarningEventsOnlyWhileItIsSlowToStart() {
        Run run = new Run(1, 1);
        run.pass();
        Pod worker = run.pods.get("j-worker-0");
        String uid = worker.getMetadata().getUid();
        Instant scheduled = run.now;
        PodFates.waiting(worker, scheduled, "ContainerCreating", null);
        assertFalse(StartBlocker.needsWarnings(worker, run.now), "a pod just scheduled is creating its containers: nothing to ask");
        Decision creating = run.pass();
        assertEquals(List.of(), ((Situation.Active) creating.situation()).cannotStart());
        assertEquals(Optional.of(StartBlocker.LOOK_AT_WARNINGS_AFTER), creating.recheckAfter(), "looked at again when it is slow");

        run.now = scheduled.plus(StartBlocker.LOOK_AT_WARNINGS_AFTER);
        assertTrue(StartBlocker.needsWarnings(worker, run.now));
        List<ContainerStatus> reported = worker.getStatus().getContainerStatuses();
        worker.getStatus().setContainerStatuses(new ArrayList<>());
        assertFalse(StartBlocker.needsWarnings(worker, run.now), "no kubelet has reported on it (no container status): it has no warnings yet");
        worker.getStatus().setContainerStatuses(reported);
        String mount = "MountVolume.SetUp failed for volume \"settings\" : configmap \"settings\" not found";
        run.warnings = Map.of(uid, List.of(
                new PodWarning(uid, "FailedMount", mount, run.now.minusSeconds(4)),
                new PodWarning(uid, "FailedScheduling", "an old word of the scheduler", run.now.minusSeconds(15))));
        Decision held = run.pass();
        assertEquals(List.of(new StartBlocker("FailedMount", "pod j-worker-0 cannot start: " + mount)),
                ((Situation.Active) held.situation()).cannotStart());
        assertEquals(List.of("ReplicaCannotStart"), reasons(held));
        assertEquals(Optional.of(Duration.ofSeconds(60)), held.recheckAfter(), "its warnings are looked at again now and then");

        run.warnings = Map.of(); // the look-up failed: what the status says of this pod holds
        run.now = run.now.plusSeconds(60);
        Decision unknown = run.pass();
        assertEquals("FailedMount", ((Situation.Active) unknown.situation()).cannotStart().get(0).reason());
        assertEquals(List.of(), reasons(unknown));

        run.warnings = Map.of(uid, List.of(new PodWarning(uid, "FailedMount", mount, run.now.minus(Duration.ofMinutes(4)))));
        Decision stale = run.pass();
        assertEquals(List.of(), ((Situation.Active) stale.situation()).cannotStart(),
                "no fresh warning: the volume was mounted, the kubelet may be pulling a large image");
        assertNull(stale.state().replica("j-worker-0").cannotStart());

        PodFates.running(worker);
        assertFalse(StartBlocker.needsWarnings(worker, run.now), "a running pod's events are never read");
        assertEquals(Optional.empty(), run.pass().recheckAfter());
    }

    @Test
    void theDeadlineEndsTheWaitAndNothingElseDoes() {
        TrainingJob job = Run.job(1, 0);
        Run run = new Run(new TrainingJob(job.name(), job.namespace(), job.uid(), job.generation(), job.groups(),
                new RunPolicy(0, 600L, CleanPodPolicy.None), job.runMode(), job.successRule(), job.retryableExitCodes(), false,
                Optional.empty()));
        run.pass();
        PodFates.unschedulable(run.pods.get("j-worker-0"), NO_NODE);
        run.now = run.now.plusSeconds(599);
        Decision waiting = run.pass();
        assertEquals(null, waiting.state().outcome(), "backoffLimit 0 is not spent by a pod that never started");
        assertNothingCountedOrTouched(waiting);
        run.now = run.now.plusSeconds(1);
        Decision ended = run.pass();
        assertEquals(Outcome.DeadlineExceeded, ended.state().outcome());
        assertEquals(0, ended.state().backoffCount());
    }

    @Test
    void aReplicaRecreatedThatCannotStartEitherIsSaidAgain() {
        Run run = new Run(1, 3);
        run.pass();
        PodFates.unschedulable(run.pods.get("j-worker-0"), NO_NODE);
        assertEquals(List.of("ReplicaCannotStart"), reasons(run.pass()));
        run.pods.remove("j-worker-0"); // deleted by someone: a restart of the group, counted, and new pods
        assertEquals(1, run.pass().state().backoffCount());
        run.pass(); // the old group is gone: the new one is created
        PodFates.unschedulable(run.pods.get("j-worker-0"), NO_NODE);
        Decision again = run.pass();
        assertEquals(List.of("ReplicaCannotStart"), reasons(again), "a new pod: said of it too");
        assertEquals(1, again.state().backoffCount(), "its wait counts nothing");
    }

    /**
     * A rank's node is lost mid-training: its peers fail, the group restarts, and the lost rank's pod is never gone
     * (its kubelet cannot confirm the end). The replica's new pod waits for it; once it outstays its grace period
     * by a minute the job says so, once, with what to do, and counts nothing more; when it is gone the group starts.
     */
    @Test
    void anOldPodThatOutstaysItsGracePeriodHoldsItsReplicaSaidOnceWithWhatToDo() {
        Run run = new Run(2, 3);
        run.pass();
        run.pods.values().forEach(PodFates::running);
        run.pods.get("j-worker-1").getSpec().setNodeName("node-7");
        run.lingering.add("j-worker-1");
        run.fail("j-worker-0", 137);
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        Instant graceEnds = Instant.parse(run.pods.get("j-worker-1").getMetadata().getDeletionTimestamp());
        assertEquals(Duration.ofSeconds(5), Duration.between(run.now, graceEnds), "the survivor's short grace");
        run.pods.keySet().retainAll(java.util.Set.of("j-worker-1"));

        run.now = run.now.plusSeconds(10);
        Decision waiting = run.pass();
        assertEquals(List.of(), ((Situation.Active) waiting.situation()).cannotStart(), "within a minute of its grace period: normal");
        assertEquals(List.of(), waiting.podsToCreate(), "the new group waits for the old one to be gone");
        assertEquals(Optional.of(Duration.between(run.now, graceEnds.plus(LingeringPod.OVERDUE_AFTER))), waiting.recheckAfter(),
                "looked at again when it is overdue: nothing else would say so");

        run.now = graceEnds.plus(LingeringPod.OVERDUE_AFTER);
        Decision overdue = run.pass();
        StartBlocker held = ((Situation.Active) overdue.situation()).cannotStart().get(0);
        assertEquals(StartBlocker.TERMINATING, held.reason());
        assertEquals("pod j-worker-1 is still terminating, its grace period ended at " + graceEnds + ": node node-7 has not confirmed "
                + "that it stopped (a node that is down or cut off never will: once you know it is, `kubectl delete pod j-worker-1 "
                + "--force --grace-period=0`, or the taint node.kubernetes.io/out-of-service on the node, lets it go); "
                + "its replica's new pod waits for it to be gone", held.message());
        assertEquals(List.of("ReplicaCannotStart"), reasons(overdue));
        assertEquals(1, overdue.state().backoffCount(), "nothing more counted");
        assertEquals(List.of(), overdue.podsToCreate());
        assertEquals(List.of(), overdue.podsToDelete(), "never forced: only a person can know the old rank stopped");
        assertEquals(StartBlocker.TERMINATING, overdue.state().replica("j-worker-1").cannotStart().reason());

        run.now = run.now.plus(Duration.ofMinutes(30));
        Decision later = run.pass();
        assertEquals(List.of(held), ((Situation.Active) later.situation()).cannotStart(), "still said in the status");
        assertEquals(List.of(), reasons(later), "said once");

        run.pods.remove("j-worker-1"); // force-deleted by the user
        Decision anew = run.pass();
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), anew.podsToCreate().stream().map(r -> r.slot().podName()).toList());
        assertEquals(List.of(), ((Situation.Active) anew.situation()).cannotStart());
        assertEquals(1, anew.state().backoffCount(), "one fault, one restart");
        assertNull(anew.state().replica("j-worker-1").cannotStart());
    }

    @Test
    void anOldPodHeldByAFinalizerNamesItAndAReplicaRestartedOnItsOwnWaitsLikewise() {
        Run run = new Run(1, 3).perReplica();
        run.pass();
        run.pods.values().forEach(PodFates::running);
        run.pods.get("j-worker-0").getMetadata().setFinalizers(List.of("storage.example.com/flush"));
        run.lingering.add("j-worker-0");
        run.fail("j-worker-0", 137);
        run.pass();
        Instant graceEnds = Instant.parse(run.pods.get("j-worker-0").getMetadata().getDeletionTimestamp());
        run.now = graceEnds.plus(LingeringPod.OVERDUE_AFTER).plusSeconds(1);
        Decision overdue = run.pass();
        List<StartBlocker> held = ((Situation.Active) overdue.situation()).cannotStart();
        assertEquals(1, held.size(), held.toString());
        assertEquals("pod j-worker-0 is still terminating, its grace period ended at " + graceEnds + ": its finalizers "
                + "(storage.example.com/flush) are still on it: what added them must remove them; its replica's new pod waits for it "
                + "to be gone", held.get(0).message());
        assertEquals(1, overdue.state().backoffCount());
        assertEquals(List.of(), overdue.podsToCreate());
        assertFalse(overdue.podsToDelete().stream().anyMatch(d -> d.name().equals("j-master-0")), "the master trains on");
    }

    private static List<String> reasons(Decision decision) {
        return decision.events().stream().map(JobEvent::reason).toList();
    }

    private static void assertNothingCountedOrTouched(Decision decision) {
        assertEquals(0, decision.state().backoffCount(), "nothing counted");
        assertEquals(List.of(), decision.restarts());
        assertEquals(List.of(), decision.podsToDelete(), "the waiting pod is left to start");
        assertEquals(List.of(), decision.podsToCreate());
        assertEquals(null, decision.state().outcome());
    }
}
