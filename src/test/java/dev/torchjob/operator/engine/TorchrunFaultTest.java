package dev.torchjob.operator.engine;

import static dev.torchjob.operator.engine.GroupRestartTest.FAULT;
import static dev.torchjob.operator.engine.GroupRestartTest.LOST_PEER;
import static dev.torchjob.operator.engine.GroupRestartTest.events;
import static dev.torchjob.operator.engine.GroupRestartTest.names;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.EngineTest.Run;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;

/**
 * Ranks that run torchrun: its container exits with 1 whatever ended its workers, and a rank that lost a peer says
 * so above torchrun's own traceback. The outputs are torchrun's own (PyTorch 1.13, two agents of a c10d rendezvous,
 * the kubelet's 2048 bytes of each log): a worker killed with SIGKILL mid-training, its peer, an agent stopped with
 * SIGTERM, an agent that lost the rendezvous the stopped one hosted, and a worker whose code raised, without and with
 * {@code @record} on its main.
 */
class TorchrunFaultTest {
    static final String WORKER_KILLED = output("worker-killed.txt");
    static final String PEER_LOST = output("peer-lost.txt");
    static final String AGENT_SIGNALLED = output("agent-signalled.txt");
    static final String STORE_LOST = output("store-lost.txt");
    static final String WORKER_RAISED = output("worker-raised.txt");
    static final String WORKER_RAISED_RECORDED = output("worker-raised-recorded.txt");
    static final String RAISED = "ValueError: rank 1: a bad batch in epoch 3 (RAISE_IN_EPOCH)";

    static String output(String name) {
        try (InputStream in = TorchrunFaultTest.class.getResourceAsStream("/torchrun/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Two torchrun ranks (workers only, T9k's ExitCode codes), running. */
    static Run torchrunRanks(RestartPolicy policy) {
        Run run = new Run(Run.workersOnly(2, policy, SuccessRule.ALL_REPLICAS, RetryableExitCodes.SIGNALS));
        run.pass();
        run.pass();
        run.now = FAULT.plusSeconds(4);
        return run;
    }

    @Test
    void aTorchrunRankWhoseWorkerWasKilledRestartsTheJobUnderExitCodeThoughTorchrunExitedWithOne() {
        Run run = torchrunRanks(RestartPolicy.ExitCode);
        // The peer's torchrun noticed its worker's lost connection before the killed worker's torchrun noticed its end.
        run.exit("j-worker-1", 1, "Error", PEER_LOST, FAULT);
        run.exit("j-worker-0", 1, "Error", WORKER_KILLED, FAULT.plusSeconds(3));
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome(), "a worker killed by SIGKILL is a stop from outside, not a code error");
        assertEquals(1, restart.state().backoffCount(), "one fault, one restart");
        assertEquals(List.of("j-worker-0", "j-worker-1"), names(restart.podsToDelete()));
        String said = events(restart, "JobRestarting").get(0).message();
        assertTrue(said.startsWith("pod j-worker-0 (container pytorch) exited with code 1 (Error) after torchrun's worker (rank 0) was "
                + "killed by signal 9 (SIGKILL); then j-worker-1 (exit code 1) failed too, a consequence (not counted); the job restarts "
                + "as a group (restart 1 of backoffLimit 3); last output of torchrun's workers:\n"), said);
        assertTrue(said.endsWith("epoch 29/400: loss 0.0069\nepoch 30/400: loss 0.0065"), "where training was, not torchrun's traceback: " + said);
        assertFalse(said.contains("ChildFailedError"), "torchrun's own words are summed up in the sentence: " + said);
        assertEquals(List.of(new Plan.RestartCounted("worker", "137", false)), restart.restarts(),
                "the restart metric says the signal, as a container killed by it would");
    }

    @Test
    void aRankThatLostAPeerIsAConsequenceWhenItsWordsAreAboveTorchrunsTraceback() {
        ReplicaEnding peer = new ReplicaEnding(ReplicaEnding.Cause.FAILED, "j-worker-1", "pytorch", 1, "Error", null,
                ReplicaEnding.kept(PEER_LOST), null, FAULT, List.of());
        assertFalse(ReplicaEnding.tail(peer.output()).contains("closed by peer"), "beyond what a message repeats");
        assertTrue(peer.showsLostPeer(), "read in all the kubelet kept");
        assertEquals("torchrun's worker (rank 1) exited with code 1", peer.torchrun().orElseThrow().said());
        assertEquals(1, peer.judgedExitCode());
        assertTrue(peer.describe().contains("; last output of torchrun's workers:\n") && peer.describe().contains("Connection closed by peer"),
                "the message shows the lost peer, torchrun's traceback did not bury it: " + peer.describe());
    }

    @Test
    void aTorchrunRankWhoseWorkerRaisedFailsTheJobUnderExitCodeNamingThatRankAndItsError() {
        Run run = torchrunRanks(RestartPolicy.ExitCode);
        run.exit("j-worker-1", 1, "Error", PEER_LOST, FAULT);
        run.exit("j-worker-0", 1, "Error", WORKER_RAISED, FAULT.plusSeconds(2));
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome(), "a bug is a bug, under torchrun too");
        String message = ((Situation.Ended) failed.situation()).message();
        assertTrue(message.startsWith("pod j-worker-0 (container pytorch) exited with code 1 (Error) after torchrun's worker (rank 1) exited "
                + "with code 1; then j-worker-1"), "the rank that raised, never the peer's lost connection: " + message);
        assertTrue(message.contains("; last output of torchrun's workers:\n"), message);
        assertTrue(message.endsWith(RAISED), "the worker's own error, above torchrun's traceback and report: " + message);
        assertFalse(message.contains("To enable traceback see"), message);
    }

    @Test
    void aWorkerRecordedWithRecordIsNamedByTheTracebackInTorchrunsReport() {
        ReplicaEnding recorded = new ReplicaEnding(ReplicaEnding.Cause.FAILED, "j-worker-1", "pytorch", 1, "Error", null,
                ReplicaEnding.kept(WORKER_RAISED_RECORDED), null, FAULT, List.of());
        assertEquals(1, recorded.judgedExitCode());
        String said = recorded.describe();
        assertTrue(said.startsWith("pod j-worker-1 (container pytorch) exited with code 1 (Error) after torchrun's worker (rank 1) exited "
                + "with code 1; last output:\n..."), "the report carries the traceback and is all the kubelet kept: " + said);
        assertTrue(said.contains("  " + RAISED), said);
    }

    @Test
    void aTorchrunWorkersOwnExitCodeIsJudgedAsTheContainersWouldBeWithoutTorchrun() {
        // The example's train.py exits 128 + 15 on SIGTERM, as a container's PID 1 should: torchrun reports that code.
        String stopped = WORKER_RAISED.replace("exitcode  : 1 (pid", "exitcode  : 143 (pid");
        ReplicaEnding ending = new ReplicaEnding(ReplicaEnding.Cause.FAILED, "j-worker-0", "pytorch", 1, "Error", null,
                ReplicaEnding.kept(stopped), null, FAULT, List.of());
        assertEquals(143, ending.judgedExitCode(), "the worker's 143, not torchrun's 1");
        assertTrue(RestartRules.isRestartable(RestartPolicy.ExitCode, ending, RetryableExitCodes.SIGNALS), "T9k's codes retry it");
        assertTrue(ending.fromOutside());
        assertEquals("143", ending.countedAs());
        ReplicaEnding exited = new ReplicaEnding(ReplicaEnding.Cause.FAILED, "j-worker-0", "pytorch", 1, "Error", null,
                ReplicaEnding.kept(WORKER_RAISED.replace("exitcode  : 1 (pid", "exitcode  : 3 (pid")), null, FAULT, List.of());
        assertEquals(3, exited.judgedExitCode());
        assertFalse(RestartRules.isRestartable(RestartPolicy.ExitCode, exited, RetryableExitCodes.FROM_128), "a code error under Kubeflow's rule");
        assertTrue(exited.summary().endsWith(" after torchrun's worker (rank 1) exited with code 3"), exited.summary());
    }

    @Test
    void aTorchrunAgentStoppedBySigtermIsAStopFromOutsideAndTheAgentThatLostItsRendezvousItsConsequence() {
        Run run = torchrunRanks(RestartPolicy.ExitCode);
        run.exit("j-worker-1", 1, "Error", STORE_LOST, FAULT);
        run.exit("j-worker-0", 1, "Error", AGENT_SIGNALLED, FAULT.plusSeconds(1));
        Decision restart = run.pass();
        assertEquals(null, restart.state().outcome(), "SIGTERM is 143 under ExitCode");
        assertEquals(1, restart.state().backoffCount());
        assertTrue(events(restart, "JobRestarting").get(0).message().startsWith("pod j-worker-0 (container pytorch) exited with code 1 "
                + "(Error) after torchrun got signal 15 (SIGTERM); then j-worker-1 (exit code 1) failed too"), restart.events().toString());
        assertEquals(List.of(new Plan.RestartCounted("worker", "143", false)), restart.restarts());
        assertTrue(events(restart, "JobRestarting").get(0).message().endsWith("\n"
                + "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 9171 closing signal SIGTERM\n"
                + "rank 2: SIGTERM, stopping\nrank 3: SIGTERM, stopping"), "its workers' last words, above torchrun's traceback: "
                + events(restart, "JobRestarting").get(0).message());
    }

    @Test
    void underNeverATorchrunRankKilledStillFailsTheJobNamingTheSignal() {
        Run run = torchrunRanks(RestartPolicy.Never);
        run.exit("j-worker-0", 1, "Error", WORKER_KILLED, FAULT);
        run.exit("j-worker-1", 1, "Error", PEER_LOST, FAULT);
        Decision failed = run.pass();
        assertEquals(Outcome.ReplicaFailedPermanently, failed.state().outcome());
        assertTrue(((Situation.Ended) failed.situation()).message().startsWith("pod j-worker-0 (container pytorch) exited with code 1 (Error) after torchrun's "
                + "worker (rank 0) was killed by signal 9 (SIGKILL)"), ((Situation.Ended) failed.situation()).message());
    }

    @Test
    void aRankThatSaysItLostAPeerIsNeverTheCauseBesideOneThatDidNotWhicheverStoppedFirst() {
        Run run = GroupRestartTest.running(RestartPolicy.OnFailure, 3);
        run.exit("j-master-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-0", 1, "Error", LOST_PEER, FAULT);
        run.exit("j-worker-1", 137, "OOMKilled", "epoch 3", FAULT.plusSeconds(2));
        run.now = FAULT.plusSeconds(3);
        Decision restart = run.pass();
        assertTrue(events(restart, "JobRestarting").get(0).message().startsWith("pod j-worker-1 (container pytorch) exited with code 137 "
                + "(OOMKilled); then j-master-0 (exit code 1), j-worker-0 (exit code 1) failed too"), restart.events().toString());
        assertEquals(1, restart.state().group("worker").restartCount(), "the cause's group counts it");
    }

    @Test
    void torchrunsReportIsReadForTheRootCauseOnlyAndOnlyAsTorchrunWritesIt() {
        String twoWorkers = "Failures:\n[1]:\n  time      : 2026-12-02_12:20:40\n  host      : w-1\n  rank      : 3 (local_rank: 1)\n"
                + "  exitcode  : -15 (pid: 8)\n  error_file: <N/A>\n  traceback : Signal 15 (SIGTERM) received by PID 8\n"
                + "------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
                + "  time      : 2026-12-02_12:20:40\n  host      : w-1\n  rank      : 2 (local_rank: 0)\n  exitcode  : -11 (pid: 7)\n"
                + "  error_file: <N/A>\n  traceback : Signal 11 (SIGSEGV) received by PID 7\n"
                + "============================================================";
        TorchrunReport segfault = TorchrunReport.of(twoWorkers).orElseThrow();
        assertEquals(139, segfault.exitCode(), "the first failure's signal, not another worker's");
        assertEquals("torchrun's worker (rank 2) was killed by signal 11 (SIGSEGV)", segfault.said());
        assertEquals(Optional.empty(), TorchrunReport.of(twoWorkers.replace("Root Cause (first observed failure):", "")),
                "a worker's exit code outside torchrun's report says nothing");
        assertEquals(new TorchrunReport(1, "torchrun's worker (rank 2) exited with code 1", null),
                TorchrunReport.of(twoWorkers.replace("-11 (pid: 7)", "1 (pid: 7)")).orElseThrow(),
                "an exit of its own; without the agent's line above the report, its workers' words are not told from its own");
        assertEquals(Optional.empty(), TorchrunReport.of(twoWorkers.replace("-11 (pid: 7)", "-300 (pid: 7)")), "no such signal");
        assertEquals(Optional.empty(), TorchrunReport.of(twoWorkers.replace("-11 (pid: 7)", "256 (pid: 7)")), "no such exit code");
        assertEquals(Optional.empty(), TorchrunReport.of(twoWorkers.replace("-11 (pid: 7)", "0 (pid: 7)")), "no failure");
        assertEquals(Optional.empty(), TorchrunReport.of(twoWorkers.replace("-11 (pid: 7)", "-99999999999999999999 (pid: 7)")), "no int");
        assertEquals(Optional.empty(), TorchrunReport.of("SignalException: Process 17 got signal: 99999999999999999999"), "no int");
        assertEquals("torchrun's worker (rank 2) was killed by signal 40", TorchrunReport.of(twoWorkers.replace("-11 (pid", "-40 (pid"))
                .orElseThrow().said(), "a signal without a name is said by number");
        assertEquals(Optional.empty(), TorchrunReport.of("Traceback (most recent call last):\nValueError: bad batch"));
        assertEquals(Optional.empty(), TorchrunReport.of(null));
        assertEquals(143, TorchrunReport.of(WORKER_KILLED + "\nSignalException: Process 17 got signal: 15").orElseThrow().exitCode(),
                "whichever torchrun said last");

        ReplicaEnding killedWhole = new ReplicaEnding(ReplicaEnding.Cause.FAILED, "j-worker-0", "pytorch", 137, "Error", null,
                ReplicaEnding.kept(WORKER_KILLED), null, FAULT, List.of());
        assertEquals(137, killedWhole.judgedExitCode(), "a container killed itself is judged by its own code");
        assertEquals(Optional.empty(), killedWhole.torchrun());
    }
}
