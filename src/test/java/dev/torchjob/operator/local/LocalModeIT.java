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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.testing.PackagedOperator;
import org.junit.jupiter.api.io.TempDir;

/**
 * The local mode as a user runs it: the packaged operator as a process, real PyTorch DDP
 * replicas (Debian's python3-torch, gloo) as its children.
 */
class LocalModeIT {
    static final Path EXAMPLE = Path.of("kubernetes/examples/local").toAbsolutePath();
    static final Duration TIMEOUT = Duration.ofMinutes(3);

    @TempDir
    Path dir;

    record Run(int exitCode, String out, String err, Duration took) {
    }

    @BeforeEach
    void copyExample() throws IOException {
        for (String file : List.of("train.py", ".python-version", "ddp-job.yaml", "ddp-pytorchjob.yaml")) {
            Files.copy(EXAMPLE.resolve(file), dir.resolve(file));
        }
    }

    /** A job file in the work folder: the example with extra env for the worker. */
    Path jobWithWorkerEnv(String name, String... env) throws IOException {
        String yaml = Files.readString(dir.resolve("ddp-job.yaml"));
        int worker = yaml.indexOf("- type: worker");
        StringBuilder extra = new StringBuilder();
        for (int i = 0; i < env.length; i += 2) {
            extra.append("\n          - {name: ").append(env[i]).append(", value: \"").append(env[i + 1]).append("\"}");
        }
        String edited = yaml.substring(0, worker) + yaml.substring(worker).replaceFirst("- \\{name: EPOCHS, value: \"8\"}",
                "- {name: EPOCHS, value: \"8\"}" + Matcher.quoteReplacement(extra.toString()));
        Path file = dir.resolve(name);
        Files.writeString(file, edited);
        return file;
    }

    /**
     * Starts the runner with SIGINT at its default disposition: a shell running in the background
     * starts children with SIGINT ignored, which a terminal's Ctrl-C never meets.
     */
    static ProcessBuilder runner(Path workDir, String... args) {
        return runner(workDir, Map.of(), args);
    }

    static ProcessBuilder runner(Path workDir, Map<String, String> properties, String... args) {
        List<String> command = new ArrayList<>(List.of("python3", "-c",
                "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])"));
        command.addAll(PackagedOperator.command(List.of(), properties, "run"));
        command.addAll(List.of(args));
        command.addAll(List.of("--metrics-port", "0"));
        return new ProcessBuilder(command).directory(workDir.toFile());
    }

    Run run(String... args) throws Exception {
        return run(Map.of(), args);
    }

    Run run(Map<String, String> properties, String... args) throws Exception {
        Path out = dir.resolve("out-" + UUID.randomUUID() + ".log");
        Path err = dir.resolve("err-" + UUID.randomUUID() + ".log");
        Instant start = Instant.now();
        Process process = runner(dir, properties, args).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS), "local run did not finish in " + TIMEOUT);
        return new Run(process.exitValue(), Files.readString(out), Files.readString(err), Duration.between(start, Instant.now()));
    }

    @Test
    void theExampleTrainsWithBothRanksAndSucceeds() throws Exception {
        Run run = run(dir.resolve("ddp-job.yaml").toString());
        System.out.println("example wall time " + run.took().toMillis() + " ms");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("[ddp-local-master-0] all-reduce check: rank 0 of 2 got 3, expected 3"), run.out());
        assertTrue(run.out().contains("[ddp-local-worker-0] all-reduce check: rank 1 of 2 got 3, expected 3"), run.out());
        Matcher loss = Pattern.compile("loss: first epoch ([0-9.]+), last epoch ([0-9.]+); accuracy ([0-9.]+)").matcher(run.out());
        assertTrue(loss.find(), run.out());
        assertTrue(Double.parseDouble(loss.group(2)) < Double.parseDouble(loss.group(1)), "loss decreased");
        assertTrue(Double.parseDouble(loss.group(3)) >= 0.95, "accuracy " + loss.group(3));
        assertTrue(Files.size(dir.resolve("model.pt")) > 0, "rank 0 saved the model");
        assertTrue(Pattern.compile("(?m)^\\[local\\] ddp-local Succeeded in [0-9.]+ s, 0 restarts$").matcher(run.out()).find(), run.out());
        assertFalse(run.out().contains("phase: "), "the whole status only with --output yaml");
        assertTrue(run.out().contains("metrics http://127.0.0.1:"), run.out());
    }

    @Test
    void aReplicaKilledOnceUnderExitCodeIsRestartedAndTheJobSucceeds() throws Exception {
        Path job = jobWithWorkerEnv("restart.yaml", "FAIL_ONCE_EXIT_CODE", "137", "FAIL_RANKS", "1");
        Run run = run(job.toString());
        assertEquals(0, run.exitCode(), run.out() + run.err());
        // It failed before the rendezvous: the master waits there, and the job restarts as a group once the wait for it is over.
        assertTrue(run.out().contains("JobRestarting: pod ddp-local-worker-0 (container pytorch) exited with code 137 (Error); "
                + "stopping ddp-local-master-0; the job restarts as a group (restart 1 of backoffLimit 2)"), run.out());
        assertTrue(Pattern.compile("(?m)^\\[local\\] ddp-local Succeeded in [0-9.]+ s, 1 restart$").matcher(run.out()).find(), run.out());
    }

    @Test
    void theKubeflowVersionOfTheExampleTrainsWithKubeflowsEnvironmentAndSucceeds() throws Exception {
        Run run = run(dir.resolve("ddp-pytorchjob.yaml").toString(), "--output", "yaml");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("[local] submitted PyTorchJob ddp-kubeflow"), run.out());
        assertTrue(run.out().contains("[ddp-kubeflow-master-0] all-reduce check: rank 0 of 2 got 3, expected 3"), run.out());
        assertTrue(run.out().contains("[ddp-kubeflow-worker-0] all-reduce check: rank 1 of 2 got 3, expected 3"), run.out());
        assertTrue(run.out().contains("phase: \"Succeeded\""), run.out());
        assertTrue(run.out().contains("type: \"Succeeded\""), run.out());
    }

    @Test
    void underOnFailureAKubeflowReplicaIsRestartedInPlaceAndCountedOnce() throws Exception {
        String yaml = Files.readString(dir.resolve("ddp-pytorchjob.yaml"));
        int worker = yaml.indexOf("    Worker:");
        Path job = dir.resolve("in-place.yaml");
        Files.writeString(job, yaml.substring(0, worker) + yaml.substring(worker).replaceFirst("- \\{name: EPOCHS, value: \"8\"}",
                Matcher.quoteReplacement("- {name: EPOCHS, value: \"8\"}\n            - {name: FAIL_ONCE_EXIT_CODE, value: \"3\"}\n"
                        + "            - {name: FAIL_RANKS, value: \"1\"}")));
        Run run = run(job.toString());
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("[ddp-kubeflow-worker-0] exited with code 3; the node restarts it in place"), run.out());
        // It failed before the rendezvous, which the master waits at: either the group re-formed in place and
        // trained to the end within the verdict's wait, or the wait ended first and the group restarted. One restart.
        assertTrue(run.out().contains("JobRestarting: pod ddp-kubeflow-worker-0 (container pytorch) exited with code 3 (Error) and was "
                + "restarted in place; "), run.out());
        assertTrue(Pattern.compile("(?m)^\\[local\\] ddp-kubeflow Succeeded in [0-9.]+ s, 1 restart$").matcher(run.out()).find(), run.out());
    }

    /** The same values RealNodeIT reads from a real kubelet for the same container. */
    @Test
    void aReplicaGetsTheDownwardApisValuesAsFromAKubeletAndIsToldWhatThisMachineHasNot() throws Exception {
        Files.writeString(dir.resolve("downward.yaml"), """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: downward}
                spec:
                  replicaSpecs:
                  - type: master
                    replicas: 1
                    template:
                      spec:
                        containers:
                        - name: pytorch
                          image: torchjob-examples:0.1.0
                          command: [sh, -c, 'echo "pod=$POD_NAME ns=$NAMESPACE ip=$POD_IP threads=$OMP_NUM_THREADS mem=$MEMORY cpu-request=$CPU_REQUEST mem-request=$MEMORY_REQUEST token=[${TOKEN-unset}]"']
                          resources: {requests: {cpu: 100m}, limits: {cpu: 700m, memory: 256Mi}}
                          env:
                          - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
                          - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
                          - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
                          - {name: OMP_NUM_THREADS, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
                          - {name: MEMORY, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
                          - {name: CPU_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
                          - {name: MEMORY_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
                          - {name: TOKEN, valueFrom: {secretKeyRef: {name: hub, key: token}}}
                          envFrom:
                          - configMapRef: {name: settings}
                """);
        Run run = run(dir.resolve("downward.yaml").toString());
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("[downward-master-0] pod=downward-master-0 ns=default ip=127.0.0.1 threads=1 mem=256 cpu-request=100"
                + " mem-request=256 token=[unset]"),
                run.out());
        assertTrue(run.out().contains("[downward-master-0] TOKEN uses valueFrom, and its Secret hub is not on this machine; skipped"),
                run.out());
        assertTrue(run.out().contains("[downward-master-0] envFrom: its ConfigMap settings is not on this machine; its variables are"
                + " left out"), run.out());
    }

    @Test
    void aReplicaExitingWithOneFailsTheJobAndTheCommand() throws Exception {
        Path job = jobWithWorkerEnv("fail.yaml", "FAIL_ONCE_EXIT_CODE", "1", "FAIL_RANKS", "1", "FAIL_ALWAYS", "1");
        Run run = run(job.toString());
        assertEquals(1, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("pod ddp-local-worker-0 (container pytorch) exited with code 1"), run.out());
        // The replica's last words are in the operator's own report, not only in the process's output.
        assertTrue(java.util.regex.Pattern.compile("Warning ReplicaFailed: pod ddp-local-worker-0 \\(container pytorch\\) exited with code 1 "
                + "\\(Error\\)[^\n]*; last output:\n(.*\n)*? *rank 1: exiting with code 1 as asked").matcher(run.out()).find(), run.out());
        // One summary line with the outcome, its reason and the crash, the replica's last words indented below it.
        assertTrue(Pattern.compile("(?m)^\\[local\\] ddp-local Failed in [0-9.]+ s, 0 restarts: ReplicaFailedPermanently: pod ddp-local-worker-0 "
                + "\\(container pytorch\\) exited with code 1 \\(Error\\)[^\n]*last output:\n    rank 1: exiting with code 1 as asked$").matcher(run.out()).find(), run.out());
    }

    @Test
    void eachEventIsRecordedOnceAndPrintedOnceEvenWhenReplicasFailDuringTheFirstPass() throws Exception {
        // Replicas that fail as soon as they start, while the operator's first pass is still writing: the
        // timing a fast (native) start gives. The operator's DEBUG log names each event as recorded and as printed.
        Files.writeString(dir.resolve("instant.yaml"), """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: instant}
                spec:
                  runPolicy: {backoffLimit: 2, cleanUpPolicy: Unfinished}
                  replicaSpecs:
                  - type: master
                    restartPolicy: ExitCode
                    template: {spec: {containers: [{name: pytorch, image: x, command: [sh, -c, "sleep 3"]}]}}
                  - type: worker
                    replicas: 3
                    restartPolicy: ExitCode
                    template: {spec: {containers: [{name: pytorch, image: x, command: [sh, -c, "exit 1"]}]}}
                """);
        Run run = run(Map.of("quarkus.log.category.\"dev.torchjob\".level", "DEBUG"), dir.resolve("instant.yaml").toString());
        assertEquals(1, run.exitCode(), run.out() + run.err());
        List<String> recorded = matches("recorded event (\\S+):", run.out());
        List<String> printed = matches("\\(main\\) event (\\S+) \\(uid", run.out());
        assertEquals(recorded.size(), Set.copyOf(recorded).size(), "an event recorded twice: " + run.out());
        assertEquals(printed.size(), Set.copyOf(printed).size(), "an event printed twice: " + run.out());
        assertTrue(recorded.containsAll(printed), run.out());
        assertEquals(printed.size(), run.out().lines().filter(line -> line.matches("\\[operator\\] (Normal|Warning) .*")).count(), run.out());
        assertEquals(1, run.out().lines().filter(line -> line.equals("[operator] Normal PodsCreated: Created pods instant-master-0, "
                + "instant-worker-0, instant-worker-1, instant-worker-2")).count(), run.out());
        assertTrue(run.out().contains("[local] instant Failed in "), run.out());
    }

    private static List<String> matches(String regex, String text) {
        List<String> found = new ArrayList<>();
        Matcher matcher = Pattern.compile(regex).matcher(text);
        while (matcher.find()) {
            found.add(matcher.group(1));
        }
        return found;
    }

    @Test
    void ctrlCStopsEveryTrainingProcess() throws Exception {
        String marker = "--run-id=" + UUID.randomUUID();
        String yaml = Files.readString(dir.resolve("ddp-job.yaml")).replace("value: \"8\"", "value: \"100000\"")
                .replace("args: [train.py]", "args: [train.py, \"" + marker + "\"]");
        Files.writeString(dir.resolve("long.yaml"), yaml);
        Path out = dir.resolve("long.log");
        Process process = runner(dir, dir.resolve("long.yaml").toString()).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        Instant deadline = Instant.now().plus(Duration.ofSeconds(90));
        while (!Files.readString(out).contains("epoch 3/") && Instant.now().isBefore(deadline) && process.isAlive()) {
            Thread.sleep(200);
        }
        assertTrue(Files.readString(out).contains("epoch 3/"), Files.readString(out));
        assertEquals(2, trainingProcesses(marker).size(), "both replicas run");

        new ProcessBuilder("kill", "-INT", Long.toString(process.pid())).start().waitFor();
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the runner exits on Ctrl-C");
        assertEquals(130, process.exitValue());
        String said = Files.readString(out);
        assertTrue(said.contains("[local] interrupted: ddp-local was Running after "), said);
        assertFalse(said.contains("\tat ") || said.contains("Exception"), "no stack trace: " + said);
        Instant gone = Instant.now().plus(Duration.ofSeconds(5));
        while (!trainingProcesses(marker).isEmpty() && Instant.now().isBefore(gone)) {
            Thread.sleep(100);
        }
        assertEquals(List.of(), trainingProcesses(marker), "no training process outlives the runner");
    }

    @Test
    void aPausedJobSaysItWillNotEndAndCtrlCEndsItWithOneLine() throws Exception {
        String yaml = Files.readString(dir.resolve("ddp-job.yaml")).replaceFirst("(?m)^spec:\n", "spec:\n  runMode: {pause: {enabled: true}}\n");
        Files.writeString(dir.resolve("paused.yaml"), yaml);
        Path out = dir.resolve("paused.log");
        Process process = runner(dir, dir.resolve("paused.yaml").toString()).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        Instant deadline = Instant.now().plus(Duration.ofSeconds(60));
        while (!Files.readString(out).contains("is Paused") && Instant.now().isBefore(deadline) && process.isAlive()) {
            Thread.sleep(200);
        }
        String before = Files.readString(out);
        assertTrue(before.contains("[local] this job will not end by itself: it is paused (spec.runMode.pause); no replica runs until it is resumed."
                + " Ctrl-C stops it."), before);
        assertTrue(before.contains("[operator] job ddp-local is Paused"), before);

        new ProcessBuilder("kill", "-INT", Long.toString(process.pid())).start().waitFor();
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the runner exits on Ctrl-C");
        assertEquals(130, process.exitValue());
        String after = Files.readString(out).substring(before.length());
        assertTrue(Pattern.compile("^\\[local\\] interrupted: ddp-local was Paused after [0-9.]+ s; every replica process is stopped\n$")
                .matcher(after).matches(), "one line, no stack trace: " + after);
    }

    /** A torchrun job of two workers, the example's script, and a torchrun of the test's on the PATH. */
    Run runTorchrunJob(String standInTorchrun) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path torchrun = bin.resolve("torchrun");
        Files.writeString(torchrun, standInTorchrun);
        assertTrue(torchrun.toFile().setExecutable(true));
        Files.writeString(dir.resolve("torchrun-job.yaml"), """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: ddp-torchrun}
                spec:
                  torchrunConfig: {enabled: true, maxRestarts: 0, procPerNode: "1"}
                  replicaSpecs:
                  - type: worker
                    replicas: 2
                    restartPolicy: Never
                    template:
                      spec:
                        containers:
                        - name: pytorch
                          image: torchjob-examples:0.1.0
                          command: [python3]
                          args: [train.py]
                          env: [{name: EPOCHS, value: "2"}]
                """);
        Path out = dir.resolve("torchrun-out.log");
        Path err = dir.resolve("torchrun-err.log");
        ProcessBuilder builder = runner(dir, dir.resolve("torchrun-job.yaml").toString()).redirectOutput(out.toFile()).redirectError(err.toFile());
        builder.environment().put("PATH", bin + java.io.File.pathSeparator + System.getenv("PATH"));
        Instant start = Instant.now();
        Process process = builder.start();
        assertTrue(process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS), "local run did not finish in " + TIMEOUT);
        return new Run(process.exitValue(), Files.readString(out), Files.readString(err), Duration.between(start, Instant.now()));
    }

    @Test
    void aTorchrunJobRunsWithOnlyTheFirstReplicaHostingTheRendezvous() throws Exception {
        // Stands in for a torchrun that works (Debian's does not): checks what it is given, then runs the
        // script as its one worker process with the pod's rank, as torchrun with one process per node would.
        Run run = runTorchrunJob("""
                #!/usr/bin/env python3
                import os, sys
                args = sys.argv[1:]
                if "--standalone" in args:  # the local mode checking that torchrun starts at all
                    os.execvp(sys.executable, [sys.executable, args[-1]])
                options = [a for a in args if a.startswith("--")]
                endpoint = next(a for a in options if a.startswith("--rdzv_endpoint="))
                conf = next(a for a in options if a.startswith("--rdzv_conf="))
                print("stand-in torchrun:", endpoint, conf, flush=True)
                if endpoint != "--rdzv_endpoint=127.0.0.1:" + os.environ["MASTER_PORT"]:
                    sys.exit("endpoint not local: " + endpoint)
                os.execvp(sys.executable, [sys.executable] + [a for a in args if not a.startswith("--")])
                """);
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("[ddp-torchrun-worker-0] stand-in torchrun: --rdzv_endpoint=127.0.0.1:23456 --rdzv_conf=is_host=true\n"), run.out());
        assertTrue(run.out().contains("[ddp-torchrun-worker-1] stand-in torchrun: --rdzv_endpoint=127.0.0.1:23456 --rdzv_conf=is_host=false\n"), run.out());
        assertTrue(run.out().contains("[ddp-torchrun-worker-1] all-reduce check: rank 1 of 2 got 3, expected 3"), run.out());
        assertTrue(Pattern.compile("(?m)^\\[local\\] ddp-torchrun Succeeded in [0-9.]+ s, 0 restarts$").matcher(run.out()).find(), run.out());
    }

    @Test
    void aTorchrunThatCannotStartEndsTheRunAtOnceWithTheReason() throws Exception {
        Run run = runTorchrunJob("""
                #!/usr/bin/env python3
                import sys
                print("AttributeError: 'NoneType' object has no attribute 'get'")
                sys.exit(1)
                """);
        assertEquals(2, run.exitCode(), run.out() + run.err());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("the job's replicas start with torchrun, and this machine's torchrun does not work: it exits with code 1"
                + " on a one-process job: AttributeError: 'NoneType' object has no attribute 'get'"), run.err());
        assertTrue(run.took().compareTo(Duration.ofSeconds(20)) < 0, "at once: " + run.took());
        assertFalse(run.out().contains("[operator]"), "nothing started: " + run.out());
    }

    static List<ProcessHandle> trainingProcesses(String marker) {
        return ProcessHandle.allProcesses()
                .filter(p -> p.info().arguments().map(a -> List.of(a).contains(marker)).orElse(false))
                .toList();
    }

    @Test
    void badInputGetsOneLineErrorAndNoStackTrace() throws Exception {
        Files.writeString(dir.resolve("broken.yaml"), "apiVersion: [unclosed\n", StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("pod.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n");
        Files.writeString(dir.resolve("two-masters.yaml"), """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: bad}
                spec:
                  replicaSpecs:
                  - type: master
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python3]}]}}
                """);
        String example = Files.readString(dir.resolve("ddp-job.yaml"));
        Files.writeString(dir.resolve("misspelled.yaml"), example.replace("backoffLimit", "backofLimit"));
        Files.writeString(dir.resolve("enum.yaml"), example.replaceFirst("restartPolicy: ExitCode", "restartPolicy: Sometimes"));
        Files.writeString(dir.resolve("two-jobs.yaml"), example + "---\n" + example);
        Files.writeString(dir.resolve("scope.yaml"), example.replace("  name: ddp-local", "  name: ddp-local\n  annotations: {torchjob.dev/restart-scope: pod}"));
        record Case(String file, String says) {
        }
        for (Case c : List.of(new Case("broken.yaml", "line 2, column 1: not valid YAML"),
                new Case("pod.yaml", "kind Pod (v1) is neither PyTorchTrainingJob (batch.tensorstack.dev/v1beta1) nor PyTorchJob (kubeflow.org/v1)"),
                new Case("two-masters.yaml", "spec.replicaSpecs[0].replicas must be 1"), new Case("missing.yaml", "no such file"),
                new Case("misspelled.yaml", ": unknown field \"spec.runPolicy.backofLimit\" (did you mean backoffLimit?)"),
                new Case("enum.yaml", "spec.replicaSpecs[0].restartPolicy: \"Sometimes\" is not one of Always, ExitCode, Never, OnFailure"),
                new Case("two-jobs.yaml", "the file holds 2 YAML documents"),
                new Case("scope.yaml", "metadata.annotations[torchjob.dev/restart-scope] \"pod\" must be Job or Replica"))) {
            Run run = run(dir.resolve(c.file()).toString());
            assertEquals(2, run.exitCode(), c.file());
            List<String> lines = run.err().lines().toList();
            assertEquals(1, lines.size(), c.file() + ": " + run.err());
            assertTrue(lines.get(0).startsWith("error: ") && lines.get(0).contains(c.says()), lines.get(0));
            assertFalse(run.err().contains("Exception") || run.out().contains("\tat "), run.err());
        }
    }
}
