package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.engine.TrainingJob.RunPolicy;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;

/**
 * One rank's fault in a job without elastic training: the ranks are one process group, so the others
 * fail after it; the job restarts as a group for one restart of the budget, named by the first failure.
 */
class GroupRestartTest {
    static final String LOST_PEER = "RuntimeError: [gloo/transport/tcp/pair.cc:589] Read error [10.0.0.7]:29500: Connection reset by peer";
    static final String CODE_ERROR = "Traceback (most recent call last):\n  File \"train.py\", line 80\nValueError: bad batch";
    static final Instant FAULT = EngineTest.T0.plusSeconds(100);

    /** Master and two workers under one restart policy, running; the pods' UIDs are in the state. */
    static Run running(RestartPolicy policy, int backoffLimit) {
        Run run = new Run(new TrainingJob("j", "ns", "job-uid", 1L,
                List.of(new ReplicaGroup("master", 1, policy), new ReplicaGroup("worker", 2, policy)),
                new RunPolicy(backoffLimit, null, CleanPodPolicy.None), RunMode.TRAIN, SuccessRule.MASTER,
                RetryableExitCodes.SIGNALS, false, Optional.empty()));
        run.pass();
        run.pass();
        run.now = FAULT.plusSeconds(1);
        return run;
    }

    static List<String> names(List<?> requestsOrDeletions) {
        return requestsOrDeletions.stream().map(o -> o instanceof Decision.PodRequest r ? r.slot().podName()
                : ((Plan.PodDeletion) o).name()).sorted().toList();
    }

    static List<JobEvent> events(Decision decision, String reason) {
        return decision.events().stream().filter(e -> e.reason().equals(reason)).toList();
    }

    @Test
    void aRankKilledMidTrainingRestartsTheWholeJobForOneRestartNamingItAsTheCause() {
        Run run = running(RestartPolicy.ExitCode, 3);
        Map<String, String> oldUids = Map.of("j-master-0", run.pods.get("j-master-0").getMetadata().getUid(),
                "j-worker-0", run.pods.get("j-worker-0").getMetadata().getUid());
        run.exit("j-worker-1", 137, "Error", "epoch 3", FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT.plusSeconds(1));
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome(), "a consequence's exit 1 is not judged by ExitCode");
        assertEquals(1, restart.state().backoffCount(), "one fault, one restart");
        assertEquals(1, restart.restarts().size(), "the restart metric counts the incident once");
        assertEquals("worker", restart.restarts().get(0).replicaType());
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(restart.podsToDelete()));
        List<JobEvent> said = events(restart, "JobRestarting");
        assertEquals(1, said.size(), restart.events().toString());
        assertEquals("pod j-worker-1 (container pytorch) exited with code 137 (Error); then j-master-0 (exit code 1), j-worker-0 (exit code 1) "
                + "failed too, consequences (not counted); the job restarts as a group (restart 1 of backoffLimit 3); last output:\nepoch 3",
                said.get(0).message());
        assertTrue(events(restart, "ReplicaRestarted").isEmpty());
        assertEquals(1, restart.state().group("worker").restartCount(), "the cause's group counts the restart");
        assertEquals(0, restart.state().group("master").restartCount());
        assertTrue(restart.state().replica("j-master-0").lastFailure().contains("after j-worker-1 had stopped (a consequence)"),
                restart.state().replica("j-master-0").lastFailure());

        Decision recreate = run.pass();
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(recreate.podsToCreate()), "the group starts anew");
        assertNotEquals(oldUids.get("j-master-0"), run.pods.get("j-master-0").getMetadata().getUid());
        assertEquals(1, run.pass().state().backoffCount(), "the new pods are not counted again");
        assertEquals(List.of(), run.state.countedRestarts(), "forgotten once the new pods are seen");
    }

    @Test
    void inTheSameSecondAStopFromOutsideIsTheCauseWhicheverPodIsSeenFirst() {
        for (boolean killedSeenFirst : new boolean[] {true, false}) {
            Run run = running(RestartPolicy.ExitCode, 3);
            if (killedSeenFirst) {
                // A kill is nobody's consequence: decided at once, the others are ended.
                run.exit("j-worker-0", 137, "Error", null, FAULT);
                Decision verdict = run.pass();
                assertEquals(1, verdict.state().backoffCount());
                assertTrue(events(verdict, "JobRestarting").get(0).message().startsWith("pod j-worker-0 (container pytorch) exited with code 137"));
                continue;
            }
            // A peer's exit 1 seen first may be a consequence: the verdict waits for the replicas still running.
            run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
            Decision waiting = run.pass();
            assertEquals(0, waiting.state().backoffCount(), "no verdict while replicas are still running");
            assertEquals(null, waiting.state().outcome(), "ExitCode does not fail the job on a consequence");
            assertTrue(waiting.podsToDelete().isEmpty() && waiting.podsToCreate().isEmpty());
            assertEquals(Optional.of(Duration.ofSeconds(4)), waiting.recheckAfter(), "looks again when the wait is over");
            assertTrue(((Situation.Active) waiting.situation()).replicaFailureMessage().contains("before deciding"));
            run.exit("j-worker-0", 137, "Error", null, FAULT);
            run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
            Decision verdict = run.pass();
            assertEquals(null, verdict.state().outcome());
            assertEquals(1, verdict.state().backoffCount());
            assertTrue(events(verdict, "JobRestarting").get(0).message().startsWith("pod j-worker-0 (container pytorch) exited with code 137"));
        }
    }

    @Test
    void aCodeErrorStaysACodeErrorAndNamesTheRankThatRaisedNotItsPeers() {
        Run run = running(RestartPolicy.ExitCode, 3);
        // Same second, same exit code: the rank whose output does not say a peer was lost is the cause.
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 1, "Error", CODE_ERROR, FAULT);
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome());
        String message = ((Situation.Ended) failed.situation()).message();
        assertTrue(message.startsWith("pod j-worker-1 (container pytorch) exited with code 1 (Error); then j-master-0 (exit code 1), "
                + "j-worker-0 (exit code 1) failed too"), message);
        assertTrue(message.contains("restartPolicy ExitCode does not restart j-worker-1"), message);
        assertTrue(message.endsWith("ValueError: bad batch"), message);
        assertTrue(!message.contains("Connection reset"), "never a peer's error: " + message);
        assertEquals(0, failed.state().backoffCount());
        assertTrue(failed.podsToCreate().isEmpty());
    }

    @Test
    void aMasterFinishingWhileTheVerdictWaitsDoesNotHideAnEarlierCodeError() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.exit("j-worker-0", 1, "Error", CODE_ERROR, FAULT);
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        assertEquals(null, run.pass().state().outcome(), "waiting for the master");
        run.succeed("j-master-0");
        run.pods.get("j-master-0").getStatus().getContainerStatuses().get(0).getState().getTerminated()
                .setFinishedAt(FAULT.plusSeconds(3).toString());
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome(), "the code error came first");
        assertTrue(((Situation.Ended) failed.situation()).message().startsWith("pod j-worker-0"));
    }

    @Test
    void aWorkerFailingAfterTheMasterSucceededLeavesTheJobSucceeded() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.succeed("j-master-0");
        run.pods.get("j-master-0").getStatus().getContainerStatuses().get(0).getState().getTerminated().setFinishedAt(FAULT.toString());
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT.plusSeconds(1));
        assertEquals(Outcome.Succeeded, run.pass().state().outcome());
    }

    @Test
    void ranksThatReformedInPlaceAndSucceededWhileTheVerdictWaitedAreOneRestart() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.restartInPlace("j-worker-0", 3);
        run.pods.get("j-worker-0").getStatus().getContainerStatuses().get(0).getLastState().getTerminated()
                .setFinishedAt(FAULT.toString());
        assertEquals(0, run.pass().state().backoffCount(), "a program's own exit: waiting for the others");
        run.succeed("j-master-0");
        Decision done = run.pass();
        assertEquals(Outcome.Succeeded, done.state().outcome());
        assertEquals(1, done.state().backoffCount(), "the restart the kubelet made is counted");
        assertEquals(1, events(done, "JobRestarting").size());
    }

    @Test
    void aPeerThatAbortsOnTheLostConnectionIsStillAConsequence() {
        Run run = running(RestartPolicy.ExitCode, 3);
        // C++ code under the rank aborts on the reset connection: a signal's exit code, but its output says why.
        run.exit("j-master-0", 134, "Error", "terminate called after throwing an instance of 'std::system_error'\n"
                + "  what():  Connection reset by peer", FAULT);
        Decision waiting = run.pass();
        assertEquals(0, waiting.state().backoffCount(), "a lost peer's abort is not decided at once");
        run.exit("j-worker-0", 1, "Error", CODE_ERROR, FAULT);
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome());
        assertTrue(((Situation.Ended) failed.situation()).message().startsWith("pod j-worker-0"), "the code error is the cause");
    }

    @Test
    void ranksThatAllSayTheyLostAPeerAreOneRestartEvenUnderExitCode() {
        // A rank lost where no pod shows it (its node cut off, or a new rank that reached the old master's address):
        // every rank that stopped says only that a peer went away. No code error, whatever the exit code.
        Run run = running(RestartPolicy.ExitCode, 3);
        run.exit("j-worker-0", 1, "Error", "[c10d] The client socket has failed to connect (errno: 113 - No route to host).\n" + LOST_PEER,
                FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT.plusSeconds(1));
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome());
        assertEquals(1, restart.state().backoffCount());
        String said = events(restart, "JobRestarting").get(0).message();
        assertTrue(said.startsWith("pod j-master-0 (container pytorch) exited with code 1 (Error); then j-worker-0 (exit code 1), j-worker-1 "
                + "(exit code 1) failed too, consequences (not counted); " + GroupRestarts.ONLY_LOST_PEERS
                + "; the job restarts as a group (restart 1 of backoffLimit 3)"), said);
    }

    @Test
    void ranksThatLostAPeerAreStillNotRestartedUnderNeverNorWhenOneOfThemFailedOnItsOwn() {
        Run never = running(RestartPolicy.Never, 3);
        never.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        never.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
        never.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        assertEquals(Outcome.ReplicaFailedPermanently, never.pass().state().outcome());

        Run codeErrorLater = running(RestartPolicy.ExitCode, 3);
        codeErrorLater.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        codeErrorLater.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
        codeErrorLater.exit("j-worker-1", 1, "Error", CODE_ERROR, FAULT.plusSeconds(1)); // its own error, a second later
        Decision failed = codeErrorLater.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome(), "a rank raised its own error: a code error stays one");
    }

    static final RestartBackoff DNS_CACHE_30S = new RestartBackoff(Duration.ZERO, Duration.ZERO, Duration.ofMinutes(10),
            Duration.ofSeconds(30));

    @Test
    void aGroupRestartingSoonAfterItStartedWaitsTillTheClusterDnsNoLongerGivesTheOldMastersAddress() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.backoff = DNS_CACHE_30S;
        run.startedAt(FAULT.minusSeconds(8)); // the ranks looked the master up after this, before the fault
        run.exit("j-worker-0", 137, "OOMKilled", null, FAULT);
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        assertEquals("pod j-worker-0 (container pytorch) exited with code 137 (OOMKilled); stopping j-master-0, j-worker-1; the job restarts "
                + "as a group (restart 1 of backoffLimit 3; new pods at " + FAULT.plusSeconds(30) + ", once the cluster's DNS no longer "
                + "answers j-master-0's name with its old address)", events(restart, "JobRestarting").get(0).message());
        run.removed("j-worker-0");
        run.now = FAULT.plusSeconds(29);
        assertEquals(List.of(), run.pass().podsToCreate(), "a new rank now could be given the old master's address");
        run.now = FAULT.plusSeconds(30);
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(run.pass().podsToCreate()));
        assertEquals(1, run.state.backoffCount());
    }

    @Test
    void aGroupThatRanLongerThanItsRanksTakeToLookTheMasterUpRestartsAtOnce() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.backoff = DNS_CACHE_30S;
        run.startedAt(FAULT.minus(Duration.ofHours(2)));
        run.exit("j-worker-0", 137, "OOMKilled", null, FAULT);
        run.pods.get("j-worker-0").getStatus().getContainerStatuses().get(0).getState().getTerminated()
                .setStartedAt(FAULT.minus(Duration.ofHours(2)).toString());
        Decision restart = run.pass();
        assertTrue(events(restart, "JobRestarting").get(0).message().endsWith("(restart 1 of backoffLimit 3)"),
                events(restart, "JobRestarting").toString());
        assertEquals(List.of(), List.copyOf(run.pods.keySet()), "the old group is ended at once");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(run.pass().podsToCreate()));
    }

    @Test
    void theDnsWaitAndTheBackOffTakeTheLaterOfTheTwo() {
        RestartBackoff both = new RestartBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofMinutes(10), Duration.ofSeconds(30));
        Instant start = FAULT.minusSeconds(20);
        assertEquals(Optional.of(FAULT.plusSeconds(30)), both.oldAddressForgottenAt(start, FAULT), "looked up before the fault");
        assertEquals(Optional.of(start.plusSeconds(90)), both.oldAddressForgottenAt(start, start.plusSeconds(600)),
                "looked up within a minute of the start");
        assertEquals(Optional.of(FAULT.plusSeconds(30)), both.oldAddressForgottenAt(null, FAULT), "no start known: the fault bounds it");
        assertEquals(Optional.empty(), RestartBackoff.NONE.oldAddressForgottenAt(start, FAULT), "no DNS to wait for");
    }

    @Test
    void theEarlierSecondIsTheCauseEvenWhenItIsAPlainExit() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.exit("j-worker-1", 2, "Error", CODE_ERROR, FAULT);
        run.exit("j-master-0", 137, "Error", null, FAULT.plusSeconds(1)); // the operator's or a user's kill, after
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT.plusSeconds(1));
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome());
        assertTrue(((Situation.Ended) failed.situation()).message().startsWith("pod j-worker-1"));
    }

    @Test
    void aRankStillBlockedInItsCollectiveIsStoppedOnceTheWaitIsOver() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.exit("j-worker-0", 1, "Error", CODE_ERROR, FAULT); // NCCL: the others block instead of failing
        run.now = FAULT.plusSeconds(4);
        assertEquals(0, run.pass().state().backoffCount(), "within the wait");
        run.now = FAULT.plusSeconds(5);
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(restart.podsToDelete()));
        assertTrue(events(restart, "JobRestarting").get(0).message().contains("; stopping j-master-0, j-worker-1; the job restarts as a group"),
                restart.events().toString());
    }

    /** What gloo says when a peer does not answer within the process group's timeout (Debian's torch 1.13, first-hand). */
    static final String GLOO_TIMEOUT = "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 10000ms for recv "
            + "operation to complete";

    @Test
    void aRankThatHangsIsOneRestartOnceItsPeersCollectivesTimeOutEvenUnderExitCode() {
        // j-worker-0 hangs (a stuck driver, a frozen process): it never exits; its peers' collective times out, exit 1.
        Run run = running(RestartPolicy.ExitCode, 3);
        run.exit("j-master-0", 1, "Error", GLOO_TIMEOUT, FAULT);
        run.exit("j-worker-1", 1, "Error", GLOO_TIMEOUT.replace("recv", "send"), FAULT);
        run.now = FAULT.plusSeconds(4);
        Decision waiting = run.pass();
        assertEquals(0, waiting.state().backoffCount(), "the hung rank may still fail on its own");
        assertEquals(null, waiting.state().outcome(), "a timed-out collective is not the rank's code error");
        run.now = FAULT.plusSeconds(5);
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome());
        assertEquals(1, restart.state().backoffCount(), "one hang, one restart");
        Plan.PodDeletion hung = restart.podsToDelete().stream().filter(d -> d.name().equals("j-worker-0")).findFirst().orElseThrow();
        assertEquals(Long.valueOf(GroupRestarts.SURVIVOR_GRACE_SECONDS), hung.gracePeriodSeconds(),
                "a frozen process runs no SIGTERM handler: the kubelet's SIGKILL ends it");
        String said = events(restart, "JobRestarting").get(0).message();
        assertTrue(said.startsWith("pod j-master-0 (container pytorch) exited with code 1 (Error); then j-worker-1 (exit code 1) failed "
                + "too, a consequence (not counted); " + GroupRestarts.ONLY_LOST_PEERS + "; stopping j-worker-0; the job restarts as a group "
                + "(restart 1 of backoffLimit 3)"), said);
        assertTrue(GroupRestarts.ONLY_LOST_PEERS.contains("a rank that hangs"), GroupRestarts.ONLY_LOST_PEERS);
        assertTrue(said.endsWith("Timed out waiting 10000ms for recv operation to complete"), "the cause's last output: " + said);
    }

    @Test
    void aKilledRanksSurvivorsAreStoppedAtOnce() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.exit("j-worker-0", 137, "Error", null, FAULT);
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(restart.podsToDelete()), "not waiting for blocked ranks");
        for (Plan.PodDeletion deletion : restart.podsToDelete()) {
            assertEquals(deletion.name().equals("j-worker-0") ? null : Long.valueOf(GroupRestarts.SURVIVOR_GRACE_SECONDS),
                    deletion.gracePeriodSeconds(), "a survivor, blocked or not, is given 5 s at most: " + deletion);
        }
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(run.pass().podsToCreate()));
    }

    @Test
    void aPodDeletedBySomeoneElseIsTheCauseOfItsPeersFailures() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.deleting("j-worker-0", FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome());
        assertEquals(1, restart.state().backoffCount());
        assertTrue(events(restart, "JobRestarting").get(0).message().startsWith("pod j-worker-0 was deleted; then j-master-0"),
                restart.events().toString());
        assertEquals(List.of("j-master-0", "j-worker-1"), names(restart.podsToDelete()),
                "the deleted one is on its way already: a kubelet keeps the grace period a stop began with");
        run.removed("j-worker-0"); // the kubelet finishes the deletion
        Decision recreate = run.pass();
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(recreate.podsToCreate()));
        assertEquals(1, recreate.state().backoffCount(), "its disappearance is no second fault");
    }

    @Test
    void aRankItsKubeletEvictsIsOneRestartSaidInTheKubeletsWords() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.disrupted("j-worker-1", "Evicted", "TerminationByKubelet", "Usage of EmptyDir volume \"scratch\" exceeds the limit \"64Mi\". ", FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome(), "an eviction is restarted even under ExitCode, whatever its exit code");
        assertEquals(1, restart.state().backoffCount());
        assertEquals("pod j-worker-1 was evicted (Evicted: Usage of EmptyDir volume \"scratch\" exceeds the limit \"64Mi\"); then "
                + "j-master-0 (exit code 1), j-worker-0 (exit code 1) failed too, consequences (not counted); the job restarts as a group "
                + "(restart 1 of backoffLimit 3)", events(restart, "JobRestarting").get(0).message());
        assertTrue(restart.state().replica("j-worker-1").lastFailure().startsWith("pod j-worker-1 was evicted (Evicted: Usage of EmptyDir"),
                restart.state().replica("j-worker-1").lastFailure());
    }

    @Test
    void aRankDrainedOrPreemptedIsSaidInTheWordsOfWhoeverStoppedIt() {
        Run drained = running(RestartPolicy.ExitCode, 3);
        drained.disrupted("j-worker-0", null, "EvictionByEvictionAPI", "Eviction API: evicting", FAULT);
        String drainedSaid = events(drained.pass(), "JobRestarting").get(0).message();
        assertTrue(drainedSaid.startsWith("pod j-worker-0 was evicted (EvictionByEvictionAPI: Eviction API: evicting); stopping j-master-0, j-worker-1; "
                + "the job restarts as a group"), drainedSaid);

        Run preempted = running(RestartPolicy.ExitCode, 3);
        preempted.disrupted("j-master-0", null, "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod",
                FAULT);
        String preemptedSaid = events(preempted.pass(), "JobRestarting").get(0).message();
        assertTrue(preemptedSaid.startsWith("pod j-master-0 was evicted (PreemptionByScheduler: "
                + "default-scheduler: preempting to accommodate a higher priority pod); stopping j-worker-0, j-worker-1; "
                + "the job restarts as a group"), preemptedSaid);
    }

    @Test
    void aRankDrainedAndGoneBeforeAnyPassSawItIsStillSaidInTheEvictionAPIsWords() {
        // kubectl drain evicts both; the worker ends on SIGTERM at once and is removed before the pass, the master is still
        // terminating: the pass has the worker's last state (its DisruptionTarget), not only its name.
        Run run = running(RestartPolicy.ExitCode, 3);
        run.disrupted("j-worker-0", null, "EvictionByEvictionAPI", "Eviction API: evicting", FAULT);
        run.removed("j-worker-0");
        run.disrupted("j-master-0", null, "EvictionByEvictionAPI", "Eviction API: evicting", FAULT.plusSeconds(1));
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT.plusSeconds(1));
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        assertEquals("pod j-worker-0 was evicted (EvictionByEvictionAPI: Eviction API: evicting); then j-master-0 (evicted), j-worker-1 "
                + "(exit code 1) failed too, consequences (not counted); the job restarts as a group (restart 1 of backoffLimit 3)",
                events(restart, "JobRestarting").get(0).message());
        assertTrue(restart.state().replica("j-worker-0").lastFailure().startsWith("pod j-worker-0 was evicted (EvictionByEvictionAPI"),
                restart.state().replica("j-worker-0").lastFailure());
    }

    @Test
    void aRankGoneBeforeAnyPassSawItSaysHowItEndedWhenThatIsKnownAndOnlyItsNameWhenNot() {
        Run failed = running(RestartPolicy.ExitCode, 3);
        failed.exit("j-worker-0", 1, "Error", CODE_ERROR, FAULT);
        failed.removed("j-worker-0"); // failed, then deleted by someone at once (a clean-up script)
        failed.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        failed.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        Decision codeError = failed.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, codeError.state().outcome(), "a code error under ExitCode, even when its pod is gone");
        String message = ((Situation.Ended) codeError.situation()).message();
        assertTrue(message.startsWith("pod j-worker-0 (container pytorch) exited with code 1 (Error)") && message.endsWith("ValueError: bad batch"),
                message);

        Run forced = running(RestartPolicy.ExitCode, 3);
        forced.removed("j-worker-0"); // kubectl delete --force --grace-period=0: nothing was seen of its end
        String said = events(forced.pass(), "JobRestarting").get(0).message();
        assertTrue(said.startsWith("pod j-worker-0 was deleted; stopping j-master-0, j-worker-1"), said);

        Run replaced = running(RestartPolicy.ExitCode, 3);
        replaced.disrupted("j-worker-0", null, "EvictionByEvictionAPI", "Eviction API: evicting", FAULT);
        replaced.removed("j-worker-0");
        replaced.gone.get("j-worker-0").getMetadata().setUid("an-older-pod"); // what is kept is of another pod of that name
        String older = events(replaced.pass(), "JobRestarting").get(0).message();
        assertTrue(older.startsWith("pod j-worker-0 was deleted;"), older);
    }

    @Test
    void aNodePressureEvictionsLongWordsAreCutAndAPodItsKubeletRefusedSaysWhy() {
        Run run = running(RestartPolicy.OnFailure, 3);
        String pressure = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. "
                + "Container pytorch was using 7340032Ki, request is 0, has larger consumption of memory. ".repeat(5);
        run.disrupted("j-worker-0", "Evicted", "TerminationByKubelet", pressure, FAULT);
        String said = events(run.pass(), "JobRestarting").get(0).message();
        assertTrue(said.contains("(Evicted: ") && said.contains("); stopping"), said);
        String words = said.substring(said.indexOf("(Evicted: ") + "(Evicted: ".length(), said.indexOf("); stopping"));
        assertEquals(ReplicaEnding.MAX_POD_MESSAGE, words.length(), said);
        assertTrue(words.startsWith("The node was low on resource: memory.") && words.endsWith("..."), said);

        ReplicaEnding refused = ReplicaEnding.ofFailedPod(new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata().withName("j-worker-1")
                .endMetadata().withNewStatus().withPhase("Failed").withReason("OutOfcpu")
                .withMessage("Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 1200, capacity: 2000")
                .endStatus().build());
        assertEquals("pod j-worker-1 failed (OutOfcpu: Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 1200, "
                + "capacity: 2000)", refused.summary());
    }

    @Test
    void aPodThatVanishedUnseenRestartsTheGroupAtOnce() {
        Run run = running(RestartPolicy.ExitCode, 3);
        run.pods.remove("j-worker-1");
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        assertEquals(List.of("j-master-0", "j-worker-0"), names(restart.podsToDelete()));
        assertTrue(restart.podsToCreate().isEmpty(), "the new group waits for the old pods to go");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(run.pass().podsToCreate()));
    }

    @Test
    void theBudgetEdgeFailsTheJobNamingTheCause() {
        Run run = running(RestartPolicy.OnFailure, 1);
        run.exit("j-worker-0", 137, "OOMKilled", null, FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        assertEquals(1, run.pass().state().backoffCount(), "restart 1 of backoffLimit 1");
        run.pass();
        run.now = FAULT.plusSeconds(60);
        run.exit("j-worker-1", 137, "OOMKilled", null, FAULT.plusSeconds(59));
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT.plusSeconds(59));
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT.plusSeconds(59));
        Decision failed = run.pass();
        assertEquals(Outcome.BackoffLimitExceeded, failed.state().outcome());
        String message = ((Situation.Ended) failed.situation()).message();
        assertTrue(message.startsWith("pod j-worker-1 (container pytorch) exited with code 137 (OOMKilled)"), message);
        assertTrue(message.contains("the restart budget is spent (backoffCount 1 of runPolicy.backoffLimit 1)"), message);
        assertTrue(failed.podsToCreate().isEmpty(), "no pod is created for a job that is ending");
    }

    @Test
    void theNewGroupStartsOnlyOnceEveryPodOfTheOldOneIsGone() {
        Run run = running(RestartPolicy.OnFailure, 5);
        io.fabric8.kubernetes.api.model.Pod oldMaster = run.pods.get("j-master-0");
        run.exit("j-worker-0", 137, "Error", null, FAULT);
        run.pass();
        // The old master takes its time to go (its SIGTERM handler, the kubelet's confirmation).
        oldMaster.getMetadata().setDeletionTimestamp(FAULT.plusSeconds(31).toString());
        run.pods.put("j-master-0", oldMaster);
        Decision waiting = run.pass();
        assertTrue(waiting.podsToCreate().isEmpty(), "a new worker could reach the old master by its name: none yet");
        run.pods.remove("j-master-0");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(run.pass().podsToCreate()));
    }

    @Test
    void aFaultOfTheNewGroupIsASecondIncident() {
        Run run = running(RestartPolicy.OnFailure, 5);
        run.exit("j-worker-0", 137, "Error", null, FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        run.pass();
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(run.pass().podsToCreate()));
        run.now = FAULT.plusSeconds(20);
        run.exit("j-master-0", 1, "Error", CODE_ERROR, FAULT.plusSeconds(19));
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT.plusSeconds(19));
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT.plusSeconds(19));
        Decision second = run.pass();
        assertEquals(2, second.state().backoffCount(), "an independent fault of the new group is counted");
        assertTrue(events(second, "JobRestarting").get(0).message().startsWith("pod j-master-0"), second.events().toString());
    }

    @Test
    void theOldGenerationFailingAfterTheVerdictIsNotCountedAgain() {
        Run run = running(RestartPolicy.OnFailure, 5);
        run.exit("j-worker-0", 137, "Error", null, FAULT);
        run.now = FAULT.plusSeconds(5); // the others were still shown running when the wait ended
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        // The executor's delete of the master is not through yet: the informer shows it failing on its way out.
        io.fabric8.kubernetes.api.model.Pod master = new io.fabric8.kubernetes.api.model.PodBuilder()
                .withNewMetadata().withName("j-master-0").withUid(restart.state().countedRestarts().get(0).uid())
                .addNewOwnerReference().withController(true).withUid("job-uid").endOwnerReference().endMetadata()
                .withNewSpec().addNewContainer().withName("pytorch").endContainer().endSpec().build();
        run.pods.put("j-master-0", master);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT.plusSeconds(5));
        Decision after = run.pass();
        assertEquals(1, after.state().backoffCount(), "a consequence seen late is still a consequence");
        assertEquals(List.of("j-master-0"), names(after.podsToDelete()));
    }

    @Test
    void theRestartIsCountedOnceWhenTheOperatorStopsAfterWritingIt() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.exit("j-worker-0", 137, "Error", null, FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 1, "Error", LOST_PEER, FAULT);
        JobState written = Engine.decide(run.job, run.state, new Observation<>(run.job, List.copyOf(run.pods.values()), true,
                Observation.PodGroupState.NOT_NEEDED, run.now), EngineTest.WORDING, RestartBackoff.NONE).state();
        run.state = written; // status written, then the operator died: nothing deleted
        Decision again = run.pass();
        assertEquals(1, again.state().backoffCount(), "not counted again by the next operator");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(again.podsToDelete()));
        run.pass();
        assertEquals(1, run.pass().state().backoffCount());
    }

    @Test
    void theKubeletsRestartsInPlaceOfOneFaultAreOneRestartAndTheGroupReformsByItself() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.restartInPlace("j-worker-0", 137);
        run.restartInPlace("j-master-0", 1);
        run.restartInPlace("j-worker-1", 1);
        Decision counted = run.pass();
        assertEquals(1, counted.state().backoffCount(), "one fault, though three containers restarted");
        assertTrue(counted.podsToDelete().isEmpty() && counted.podsToCreate().isEmpty(), "the kubelet restarted them all");
        assertEquals(1, events(counted, "JobRestarting").size());
        assertEquals(1, run.pass().state().backoffCount(), "seen again: not counted again");
    }

    @Test
    void whenARankTheKubeletDidNotRestartRemainsTheWholeGroupStartsAnew() {
        Run run = running(RestartPolicy.OnFailure, 3);
        run.restartInPlace("j-worker-0", 137);
        run.restartInPlace("j-worker-1", 1);
        Decision counted = run.pass(); // no times known: decided at once
        assertEquals(1, counted.state().backoffCount());
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(counted.podsToDelete()),
                "the master stayed in its collective: no rank of the old group is left to fail later");
        counted.podsToDelete().forEach(deletion -> assertEquals(Long.valueOf(GroupRestarts.SURVIVOR_GRACE_SECONDS),
                deletion.gracePeriodSeconds(), "the ranks the kubelet restarted, the cause among them, are stopped within 5 s too "
                        + "(one importing PyTorch or waiting at the rendezvous runs no SIGTERM handler): " + deletion));
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1"), names(run.pass().podsToCreate()));
        assertEquals(1, run.state.backoffCount(), "stopping them was part of the one restart");
    }

    @Test
    void aFirstFaultRestartsAtOnceAndFaultsInARowWaitLonger() {
        Run run = running(RestartPolicy.OnFailure, 10);
        run.backoff = new RestartBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofMinutes(10));
        for (long expected : new long[] {0, 10, 20}) {
            String cause = expected == 10 ? "j-master-0" : "j-worker-0"; // whichever rank fails, the faults are in a row
            for (String pod : List.of("j-master-0", "j-worker-0", "j-worker-1")) {
                run.exit(pod, pod.equals(cause) ? 137 : 1, "Error", pod.equals(cause) ? null : LOST_PEER, run.now.minusSeconds(1));
            }
            Decision restart = run.pass();
            assertEquals(expected == 0 ? Optional.empty() : Optional.of(Duration.ofSeconds(expected)), restart.recheckAfter(),
                    "back-off " + expected + " s");
            run.now = run.now.plusSeconds(expected);
            run.pass(); // due: the failed pods go
            run.pass(); // and the new ones come
            assertEquals(3, run.pods.size());
            assertTrue(run.pods.values().stream().allMatch(p -> "Running".equals(p.getStatus().getPhase())));
            run.now = run.now.plusSeconds(1);
        }
        assertEquals(3, run.state.backoffCount());
    }

    @Test
    void anElasticJobRestartsOnlyTheFailedReplica() {
        Run run = new Run(Run.workersOnly(3, RestartPolicy.OnFailure, SuccessRule.ANY_REPLICA, RetryableExitCodes.FROM_128));
        run.pass();
        run.pass();
        run.exit("j-worker-1", 137, "Error", null, FAULT);
        Decision restart = run.pass();
        assertEquals(1, restart.state().backoffCount());
        assertEquals(List.of("j-worker-1"), names(restart.podsToDelete()), "torchrun takes the survivors into a new round itself");
        assertTrue(events(restart, "JobRestarting").isEmpty());
    }

    @Test
    void restartScopeReplicaKeepsRestartsPerReplica() {
        Run run = running(RestartPolicy.OnFailure, 5).perReplica();
        run.exit("j-worker-0", 137, "Error", null, FAULT);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        Decision restart = run.pass();
        assertEquals(2, restart.state().backoffCount(), "each failure counted, as Kubeflow v1 does");
        assertEquals(List.of("j-master-0", "j-worker-0"), names(restart.podsToDelete()));
        assertEquals(2, events(restart, "ReplicaRestarted").size());
    }

    @Test
    void aWrongRestartScopeIsRefusedInOneLine() {
        assertEquals(Optional.of("metadata.annotations[torchjob.dev/restart-scope] \"pod\" must be Job or Replica"),
                TrainingJob.RestartScope.problemWith(Map.of(TrainingJob.RestartScope.ANNOTATION, "pod")));
        assertEquals(Optional.empty(), TrainingJob.RestartScope.problemWith(Map.of(TrainingJob.RestartScope.ANNOTATION, "Replica")));
        assertEquals(TrainingJob.RestartScope.Job, TrainingJob.RestartScope.of(null));
    }
}
