package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.torchjob.operator.testing.PackagedOperator;

/**
 * GPUs in the local mode, on a machine without one: a stand-in {@code nvidia-smi} on PATH says which GPUs
 * there are, and real processes print the GPUs they were given (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES).
 * The same job with NCCL on a real GPU: docs/local-mode.md.
 */
class LocalGpusIT {
    static final String[] UUIDS = {"GPU-0a0a0a0a-0000-4000-8000-000000000000", "GPU-1b1b1b1b-0000-4000-8000-000000000000"};
    /** What each replica prints: the GPUs its process sees. */
    static final String PRINT_GPUS = "echo \"sees CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES\"";

    @TempDir
    Path dir;

    record Run(int exitCode, String out, String err) {
        /** The GPUs each run of a replica saw, in order. */
        List<String> seenBy(String pod) {
            List<String> seen = new ArrayList<>();
            Matcher matcher = Pattern.compile("(?m)^\\[" + Pattern.quote(pod) + "\\] sees CUDA_VISIBLE_DEVICES=(\\S*) NVIDIA_VISIBLE_DEVICES=(\\S*)$")
                    .matcher(out);
            while (matcher.find()) {
                seen.add(matcher.group(1) + " " + matcher.group(2));
            }
            return seen;
        }
    }

    /**
     * A stand-in nvidia-smi listing {@code gpus} H100s ({@code -L}; {@code --query-gpu} gives each one's index, name, driver
     * and memory), in a folder put first on the runner's PATH.
     */
    Path machineWith(int gpus) throws IOException {
        Path bin = Files.createDirectories(dir.resolve("bin-" + gpus));
        StringBuilder lines = new StringBuilder();
        StringBuilder query = new StringBuilder();
        for (int i = 0; i < gpus; i++) {
            lines.append("GPU ").append(i).append(": NVIDIA H100 80GB HBM3 (UUID: ").append(UUIDS[i]).append(")\n");
            query.append(i).append(", NVIDIA H100 80GB HBM3, 580.0 (stand-in), 81559 MiB\n");
        }
        Path smi = bin.resolve("nvidia-smi");
        executable(smi, "#!/bin/sh\ncase \"$1\" in\n-L) cat <<'EOF'\n" + lines + "EOF\n;;\n--query-gpu=*) cat <<'EOF'\n" + query
                + "EOF\n;;\n*) exit 2;;\nesac\n");
        return bin;
    }

    /** A T9k job: a master and a worker, each asking for these GPUs and running this shell script. */
    Path job(String name, int masterGpus, String masterScript, int workerGpus, String workerScript) throws IOException {
        Path file = dir.resolve(name + ".yaml");
        Files.writeString(file, """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %s}
                spec:
                  runPolicy: {backoffLimit: 2, cleanUpPolicy: Unfinished}
                  replicaSpecs:
                  %s
                  %s
                """.formatted(name, replica("master", masterGpus, masterScript), replica("worker", workerGpus, workerScript)));
        return file;
    }

    static String replica(String type, int gpus, String script) {
        return """
                - type: %s
                    restartPolicy: ExitCode
                    template: {spec: {containers: [{name: pytorch, image: unused, command: [sh, -c, '%s']%s}]}}
                """.formatted(type, script.replace("'", "''"), gpus == 0 ? "" : ", resources: {limits: {nvidia.com/gpu: " + gpus + "}}").strip();
    }

    Run run(Path bin, Map<String, String> env, String... args) throws Exception {
        Path out = dir.resolve("out-" + UUID.randomUUID() + ".log");
        Path err = dir.resolve("err-" + UUID.randomUUID() + ".log");
        ProcessBuilder builder = LocalModeIT.runner(dir, args).redirectOutput(out.toFile()).redirectError(err.toFile());
        builder.environment().put("PATH", bin + File.pathSeparator + System.getenv("PATH"));
        builder.environment().remove("CUDA_VISIBLE_DEVICES");
        builder.environment().putAll(env);
        Process process = builder.start();
        assertTrue(process.waitFor(LocalModeIT.TIMEOUT.toSeconds(), TimeUnit.SECONDS), "local run did not finish in " + LocalModeIT.TIMEOUT);
        return new Run(process.exitValue(), Files.readString(out), Files.readString(err));
    }

    @Test
    void eachReplicaSeesOnlyItsOwnGpuAsInItsPod() throws Exception {
        Path job = job("two-gpus", 1, PRINT_GPUS + "; sleep 1", 1, PRINT_GPUS);
        Run run = run(machineWith(2), Map.of(), job.toString());
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("[local] this machine has 2 GPUs: GPU 0 (NVIDIA H100 80GB HBM3), GPU 1 (NVIDIA H100 80GB HBM3);"
                + " each replica gets the nvidia.com/gpu its limits ask for"), run.out());
        assertEquals(List.of(UUIDS[0] + " " + UUIDS[0]), run.seenBy("two-gpus-master-0"), run.out());
        assertEquals(List.of(UUIDS[1] + " " + UUIDS[1]), run.seenBy("two-gpus-worker-0"), "distinct GPUs: " + run.out());
        assertTrue(run.out().contains("[two-gpus-worker-0] given GPU 1 (NVIDIA H100 80GB HBM3) (nvidia.com/gpu: 1)"), run.out());
    }

    @Test
    void aJobAskingForMoreGpusThanTheMachineHasIsRefusedBeforeAnythingStarts() throws Exception {
        Path job = job("too-many", 1, PRINT_GPUS, 1, PRINT_GPUS);
        Run run = run(machineWith(1), Map.of(), job.toString());
        assertEquals(LocalLauncher.EXIT_BAD_INPUT, run.exitCode(), run.out() + run.err());
        assertEquals("error: " + job + ": the job asks for 2 GPUs (nvidia.com/gpu: too-many-master-0 1, too-many-worker-0 1) and this"
                + " machine has 1 GPU: GPU 0 (NVIDIA H100 80GB HBM3); --share-gpus lets replicas share them for a small test",
                run.err().strip(), "one line");
        assertFalse(run.out().contains("submitted"), "nothing started: " + run.out());

        Run hidden = run(machineWith(2), Map.of("CUDA_VISIBLE_DEVICES", "1"), job.toString());
        assertEquals(LocalLauncher.EXIT_BAD_INPUT, hidden.exitCode(), hidden.out() + hidden.err());
        assertTrue(hidden.err().contains("this machine has 1 GPU: GPU 1 (NVIDIA H100 80GB HBM3)"),
                "only the GPUs the operator's own CUDA_VISIBLE_DEVICES allows: " + hidden.err());
    }

    @Test
    void sharedReplicasRunOnTheSameGpu() throws Exception {
        Path job = job("shared", 1, PRINT_GPUS + "; sleep 1", 1, PRINT_GPUS);
        Run run = run(machineWith(1), Map.of(), job.toString(), "--share-gpus");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("this machine has 1 GPU: GPU 0 (NVIDIA H100 80GB HBM3); replicas share them (--share-gpus)"), run.out());
        assertEquals(List.of(UUIDS[0] + " " + UUIDS[0]), run.seenBy("shared-master-0"), run.out());
        assertEquals(List.of(UUIDS[0] + " " + UUIDS[0]), run.seenBy("shared-worker-0"), run.out());
    }

    @Test
    void aGroupRestartGivesEachReplicaItsGpusAgain() throws Exception {
        // The worker is killed once (exit 137, a marker remembers it); the job restarts as a group.
        Path job = job("restart", 1, PRINT_GPUS + "; sleep 4", 1,
                PRINT_GPUS + "; [ -f worker-failed-once ] || { touch worker-failed-once; exit 137; }");
        Run run = run(machineWith(2), Map.of(), job.toString());
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("restart 1 of backoffLimit 2"), run.out());
        assertEquals(List.of(UUIDS[0] + " " + UUIDS[0], UUIDS[0] + " " + UUIDS[0]), run.seenBy("restart-master-0"), run.out());
        assertEquals(List.of(UUIDS[1] + " " + UUIDS[1], UUIDS[1] + " " + UUIDS[1]), run.seenBy("restart-worker-0"),
                "the same GPU again: " + run.out());
    }

    @Test
    void aDryRunShowsEachReplicasGpusAndAReplicaAskingNoneSeesNone() throws Exception {
        Path job = job("dry", 2, PRINT_GPUS, 0, PRINT_GPUS);
        Run run = run(machineWith(2), Map.of(), job.toString(), "--dry-run");
        assertEquals(0, run.exitCode(), run.out() + run.err());
        assertTrue(run.out().contains("""
                locally, on this machine (2 GPUs: GPU 0 (NVIDIA H100 80GB HBM3), GPU 1 (NVIDIA H100 80GB HBM3)):
                  dry-master-0: GPU 0 (NVIDIA H100 80GB HBM3), GPU 1 (NVIDIA H100 80GB HBM3), CUDA_VISIBLE_DEVICES=%s,%s, NVIDIA_VISIBLE_DEVICES=%s,%s
                  dry-worker-0: no GPU, CUDA_VISIBLE_DEVICES='', NVIDIA_VISIBLE_DEVICES=void
                """.formatted(UUIDS[0], UUIDS[1], UUIDS[0], UUIDS[1])), run.out());
        Run refused = run(machineWith(1), Map.of(), job.toString(), "--dry-run");
        assertEquals(LocalLauncher.EXIT_BAD_INPUT, refused.exitCode(), refused.out() + refused.err());
        assertTrue(refused.err().contains("dry-master-0 asks for 2 GPUs (nvidia.com/gpu) and this machine has 1 GPU"), refused.err());
    }

    /**
     * tools/gpu/local-mode-gpus.sh, the checks a machine with a GPU runs by hand, here on a stand-in machine of one GPU, so
     * that the script, its cuts of the GPU example and the verdicts it reads from the operator's output stay in step with
     * the operator. The GPU is nvidia-smi's stand-in; python3 and torchrun are stand-ins that answer as the example's
     * script does on CUDA (docs/local-mode.md says how a real GPU is checked).
     */
    @Test
    void theGpuCheckScriptFindsEveryCheckAsExpectedOnAOneGpuMachine() throws Exception {
        Path bin = machineWith(1);
        executable(bin.resolve("python3"), """
                #!/bin/sh
                # python3 with a CUDA PyTorch, as far as the script and the example's train.py show it.
                if [ "$1" = -c ]; then echo "Python 3 (stand-in), torch (stand-in), cuda available: True"; exit 0; fi
                [ "$1" = train.py ] || exec /usr/bin/python3 "$@"
                [ "${DEVICE:-$([ "$BACKEND" = nccl ] && echo cuda)}" = cuda ] && echo "rank $RANK: training on NVIDIA H100 80GB HBM3"
                if [ "$BACKEND" = nccl ]; then  # NCCL refuses two ranks on one GPU
                  echo "$CUDA_VISIBLE_DEVICES" > "gpu-of-rank-$RANK"
                  i=0; while [ "$(ls gpu-of-rank-* | wc -l)" -lt "$WORLD_SIZE" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
                  [ "$(sort -u gpu-of-rank-* | wc -l)" -lt "$WORLD_SIZE" ] && { echo "ncclInvalidUsage: Duplicate GPU detected: rank $RANK"; exit 1; }
                fi
                sum=$((WORLD_SIZE * (WORLD_SIZE + 1) / 2))
                echo "all-reduce check: rank $RANK of $WORLD_SIZE got $sum, expected $sum"
                """);
        executable(bin.resolve("torchrun"), """
                #!/bin/sh
                # torchrun of one process per node: the script as rank 0 of 1 (the local mode's one-process check too).
                for arg; do script=$arg; done
                RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 exec python3 "$script"
                """);
        Path logs = dir.resolve("logs");
        Path out = dir.resolve("gpu-check.log");
        ProcessBuilder builder = new ProcessBuilder("bash", "tools/gpu/local-mode-gpus.sh").redirectErrorStream(true).redirectOutput(out.toFile());
        builder.environment().put("PATH", bin + File.pathSeparator + System.getenv("PATH"));
        builder.environment().remove("CUDA_VISIBLE_DEVICES");
        builder.environment().put("TORCHJOB_RUNNER", PackagedOperator.RUNNER.toString());
        builder.environment().put("GPU_CHECK_LOGS", logs.toString());
        Process process = builder.start();
        assertTrue(process.waitFor(5, TimeUnit.MINUTES), "the script did not finish in 5 minutes: " + Files.readString(out));
        String report = Files.readString(out);
        assertEquals(0, process.exitValue(), report);
        for (String check : List.of("one", "example", "share-gloo", "share-nccl", "dry-run", "torchrun")) {
            assertTrue(Pattern.compile("(?m)^\\| " + check + " \\| .* \\| as-expected \\|").matcher(report).find(), check + ": " + report);
        }
        assertTrue(Files.readString(logs.resolve("example.log")).contains("and this machine has 1 GPU: GPU 0 (NVIDIA H100 80GB HBM3)"),
                "the refusal is the operator's: " + report);
        assertTrue(Files.readString(logs.resolve("share-nccl.log")).contains("Duplicate GPU detected"), report);
    }

    static void executable(Path file, String script) throws IOException {
        Files.writeString(file, script);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
}
