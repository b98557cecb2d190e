package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One rank's fault in the middle of real DDP training (gloo, Debian's PyTorch) in the local mode: the
 * rank's process is killed from outside once training is under way, as the kernel or a kubelet would,
 * and every other rank then fails in its collective. The job restarts as a group, counts one restart,
 * resumes from the example's checkpoint and succeeds; a rank whose code raises fails the job, named.
 */
class RankFaultsIT {
    static final Duration TIMEOUT = Duration.ofMinutes(4);

    @TempDir
    Path dir;

    record Outcome(int exitCode, String out) {
    }

    @BeforeEach
    void copyExample() throws IOException {
        for (String file : List.of("train.py", ".python-version")) {
            Files.copy(LocalModeIT.EXAMPLE.resolve(file), dir.resolve(file));
        }
    }

    /** A T9k job of the example's train.py: master and workers under one restart policy, 6 epochs. */
    Path t9kJob(String name, int workers, String restartPolicy, int backoffLimit, String extraEnv) throws IOException {
        String replica = """
                  - type: %s
                    replicas: %d
                    restartPolicy: %s
                    template:
                      spec:
                        containers:
                        - name: pytorch
                          image: torchjob-examples:0.1.0
                          command: [python3]
                          args: [train.py]
                          env:
                          - {name: EPOCHS, value: "6"}%s
                """;
        String yaml = """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata:
                  name: %s
                spec:
                  runPolicy:
                    backoffLimit: %d
                    cleanUpPolicy: Unfinished
                  replicaSpecs:
                """.formatted(name, backoffLimit) + replica.formatted("master", 1, restartPolicy, extraEnv)
                + replica.formatted("worker", workers, restartPolicy, extraEnv);
        Path file = dir.resolve(name + ".yaml");
        Files.writeString(file, yaml);
        return file;
    }

    /** A Kubeflow PyTorchJob of the example's train.py: Master and Workers under one restart policy, 6 epochs. */
    Path kubeflowJob(String name, int workers, String restartPolicy, int backoffLimit) throws IOException {
        String replica = """
                    %s:
                      replicas: %d
                      restartPolicy: %s
                      template:
                        spec:
                          containers:
                          - name: pytorch
                            image: torchjob-examples:0.1.0
                            command: [python3]
                            args: [train.py]
                            env:
                            - {name: EPOCHS, value: "6"}
                """;
        String yaml = """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata:
                  name: %s
                spec:
                  runPolicy:
                    backoffLimit: %d
                    cleanPodPolicy: Running
                  pytorchReplicaSpecs:
                """.formatted(name, backoffLimit) + replica.formatted("Master", 1, restartPolicy)
                + replica.formatted("Worker", workers, restartPolicy);
        Path file = dir.resolve(name + ".yaml");
        Files.writeString(file, yaml);
        return file;
    }

    /**
     * Runs the job and, once the master has finished {@code afterLine} for the first time, kills the
     * training process of {@code rank} with SIGKILL from outside (found by its environment among the
     * runner's descendants), as the kernel's OOM killer or a kubelet would.
     */
    Outcome runKilling(Path job, String afterLine, int rank) throws Exception {
        return runSignalling(job, afterLine, rank, "KILL");
    }

    /** As {@link #runKilling}, with another signal: {@code STOP} freezes the rank, as a stuck driver call leaves it. */
    Outcome runSignalling(Path job, String afterLine, int rank, String signal) throws Exception {
        Path out = dir.resolve("out-" + UUID.randomUUID() + ".log");
        Process runner = LocalModeIT.runner(dir, job.toString()).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        Instant deadline = Instant.now().plus(TIMEOUT);
        boolean killed = false;
        while (runner.isAlive() && Instant.now().isBefore(deadline)) {
            if (!killed && Files.readString(out).contains(afterLine)) {
                ProcessHandle target = rankProcess(runner, rank)
                        .orElseThrow(() -> new AssertionError("no training process of rank " + rank));
                assertEquals(0, new ProcessBuilder("bash", "-c", "kill -" + signal + " " + target.pid()).inheritIO().start().waitFor(),
                        "SIG" + signal + " to rank " + rank);
                killed = true;
            }
            Thread.sleep(50);
        }
        assertTrue(runner.waitFor(1, TimeUnit.SECONDS), "local run did not finish in " + TIMEOUT + ":\n" + Files.readString(out));
        assertTrue(killed, "the line to kill after never came:\n" + Files.readString(out));
        return new Outcome(runner.exitValue(), Files.readString(out));
    }

    Outcome run(Path job) throws Exception {
        Path out = dir.resolve("out-" + UUID.randomUUID() + ".log");
        Process runner = LocalModeIT.runner(dir, job.toString()).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        assertTrue(runner.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS), "local run did not finish in " + TIMEOUT);
        return new Outcome(runner.exitValue(), Files.readString(out));
    }

    /** The python process training as {@code rank}: its environment says so (Linux /proc). */
    static Optional<ProcessHandle> rankProcess(Process runner, int rank) {
        return runner.descendants().filter(p -> {
            try {
                String environ = Files.readString(Path.of("/proc", Long.toString(p.pid()), "environ"), StandardCharsets.ISO_8859_1);
                String command = p.info().commandLine().orElse("");
                return ("\0" + environ).contains("\0RANK=" + rank + "\0") && command.contains("train.py");
            } catch (IOException e) {
                return false; // gone, or not ours to read
            }
        }).findFirst();
    }

    static void assertOneGroupRestartAndResumed(Outcome run, String job, String cause) {
        assertEquals(0, run.exitCode(), run.out());
        assertTrue(Pattern.compile("(?m)^\\[local\\] " + job + " Succeeded in [0-9.]+ s, 1 restart$").matcher(run.out()).find(), run.out());
        // The kill is decided at once: its peers' failures are named when already reported, else stopped with it.
        assertTrue(Pattern.compile("JobRestarting: pod " + Pattern.quote(cause) + " \\(container pytorch\\) exited with code 137 \\(Error\\)"
                + "( and was restarted in place)?; (then|stopping) ").matcher(run.out()).find(), run.out());
        assertTrue(run.out().contains("the job restarts as a group (restart 1 of backoffLimit "), run.out());
        assertFalse(run.out().contains("OOMKilled"), "no memory limit killed it: " + run.out());
        assertFalse(run.out().contains("ReplicaRestarted"), "no restart counted per replica: " + run.out());
        assertTrue(Pattern.compile("\\[" + job + "-master-0\\] rank 0: resuming at epoch [3-6] from checkpoint.pt").matcher(run.out()).find(),
                "the new group resumed from the checkpoint: " + run.out());
    }

    @Test
    void aWorkerKilledMidTrainingUnderExitCodeIsOneRestartOfTheJob() throws Exception {
        Outcome run = runKilling(t9kJob("worker-killed", 1, "ExitCode", 2, ""), "[worker-killed-master-0] epoch 3/6", 1);
        assertOneGroupRestartAndResumed(run, "worker-killed", "worker-killed-worker-0");
    }

    @Test
    void theMasterKilledMidTrainingIsTheCauseNotTheWorkersLostConnection() throws Exception {
        Outcome run = runKilling(t9kJob("master-killed", 1, "ExitCode", 2, ""), "[master-killed-master-0] epoch 3/6", 0);
        assertOneGroupRestartAndResumed(run, "master-killed", "master-killed-master-0");
    }

    @Test
    void aKubeflowWorkerKilledAmongFourIsOneRestartNotTheWholeBudget() throws Exception {
        Outcome run = runKilling(kubeflowJob("kf-five", 4, "OnFailure", 3), "[kf-five-master-0] epoch 3/6", 1);
        assertOneGroupRestartAndResumed(run, "kf-five", "kf-five-worker-0");
    }

    @Test
    void aKubeflowPairUnderOnFailureCountsOneRestartForOneFault() throws Exception {
        Outcome run = runKilling(kubeflowJob("kf-pair", 1, "OnFailure", 3), "[kf-pair-master-0] epoch 3/6", 1);
        assertOneGroupRestartAndResumed(run, "kf-pair", "kf-pair-worker-0");
    }

    @Test
    void aWorkerThatHangsMidTrainingIsOneRestartOnceTheMastersCollectiveTimesOut() throws Exception {
        Outcome run = runSignalling(t9kJob("hung", 1, "ExitCode", 2, "\n          - {name: PROCESS_GROUP_TIMEOUT, value: \"15\"}"),
                "[hung-master-0] epoch 3/6", 1, "STOP");
        assertEquals(0, run.exitCode(), run.out());
        assertTrue(Pattern.compile("(?m)^\\[local\\] hung Succeeded in [0-9.]+ s, 1 restart$").matcher(run.out()).find(), run.out());
        assertTrue(run.out().contains("JobRestarting: pod hung-master-0 (container pytorch) exited with code 1 (Error); each says a peer was "
                + "lost and none failed on its own (the network between them, a rank that hangs, or a rank stopped where no pod shows it); "
                + "stopping hung-worker-0; the job restarts as a group (restart 1 of backoffLimit 2"), run.out());
        assertTrue(run.out().contains("Timed out waiting 15000ms for"), run.out());
        assertTrue(Pattern.compile("\\[hung-master-0\\] rank 0: resuming at epoch [3-6] from checkpoint.pt").matcher(run.out()).find(),
                "the new group resumed from the checkpoint: " + run.out());
    }

    @Test
    void aRankWhoseCodeRaisesFailsTheJobNamingThatRank() throws Exception {
        Outcome run = run(t9kJob("code-error", 1, "ExitCode", 2,
                "\n          - {name: RAISE_IN_EPOCH, value: \"3\"}\n          - {name: FAIL_RANKS, value: \"1\"}"));
        assertEquals(1, run.exitCode(), run.out());
        assertTrue(Pattern.compile("(?m)^\\[local\\] code-error Failed in [0-9.]+ s, 0 restarts: ReplicaFailedPermanently: pod code-error-worker-0 \\(container pytorch\\) "
                + "exited with code 1 \\(Error\\)").matcher(run.out()).find(), run.out());
        assertTrue(run.out().contains("restartPolicy ExitCode does not restart code-error-worker-0"), run.out());
        assertTrue(run.out().contains("ValueError: rank 1: a bad batch in epoch 3 (RAISE_IN_EPOCH)"), run.out());
    }
}
