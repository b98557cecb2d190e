package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.client.CustomResource;

/** What a local run says about a job: whether it can end here, and how it ended. */
class LocalRunTest {
    @TempDir
    Path dir;

    CustomResource<?, ?> job(String file, String edit) throws Exception {
        String yaml = Files.readString(Path.of("kubernetes/examples/local", file));
        Path edited = dir.resolve(file);
        Files.writeString(edited, edit.isEmpty() ? yaml : yaml.replaceFirst("(?m)^spec:\n", "spec:\n" + edit + "\n"));
        return LocalLauncher.read(edited);
    }

    @Test
    void jobsThatCannotEndLocallySayWhy() throws Exception {
        assertEquals(Optional.empty(), LocalRun.whyItWillNotEnd(job("ddp-job.yaml", "")));
        assertEquals(Optional.empty(), LocalRun.whyItWillNotEnd(job("ddp-pytorchjob.yaml", "")));
        assertEquals(Optional.of("it is paused (spec.runMode.pause); no replica runs until it is resumed"),
                LocalRun.whyItWillNotEnd(job("ddp-job.yaml", "  runMode: {pause: {enabled: true}}")));
        assertEquals(Optional.of("it runs in debug mode (spec.runMode.debug): the replicas run their debug command, not the training"),
                LocalRun.whyItWillNotEnd(job("ddp-job.yaml", "  runMode: {debug: {enabled: true}}")));
        assertEquals(Optional.of("it waits for the T9k scheduler (spec.scheduler.t9kScheduler), and the local mode has none"),
                LocalRun.whyItWillNotEnd(job("ddp-job.yaml", "  scheduler: {t9kScheduler: {queue: default}}")));
        Path suspended = dir.resolve("suspended.yaml");
        Files.writeString(suspended, Files.readString(Path.of("kubernetes/examples/local/ddp-pytorchjob.yaml"))
                .replace("  runPolicy:\n", "  runPolicy:\n    suspend: true\n"));
        assertEquals(Optional.of("it is paused (spec.runPolicy.suspend); no replica runs until it is resumed"),
                LocalRun.whyItWillNotEnd(LocalLauncher.read(suspended)));
        CustomResource<?, ?> queued = job("ddp-job.yaml", "");
        queued.getMetadata().setLabels(java.util.Map.of("kueue.x-k8s.io/queue-name", "team-a"));
        assertEquals(Optional.of("it waits for Kueue to admit it (label kueue.x-k8s.io/queue-name), and the local mode has no Kueue"),
                LocalRun.whyItWillNotEnd(queued));
    }

    @Test
    void theSummaryIsOneLineWithTheCrashIndentedUnderIt() throws Exception {
        PyTorchTrainingJob job = (PyTorchTrainingJob) job("ddp-job.yaml", "");
        PyTorchTrainingJobStatus status = new PyTorchTrainingJobStatus();
        status.phase = JobPhase.Succeeded;
        status.backoffCount = 1;
        job.setStatus(status);
        assertEquals("ddp-local Succeeded in 2.8 s, 1 restart", LocalRun.summary(job, Duration.ofMillis(2800)));
        status.phase = JobPhase.Failed;
        status.backoffCount = 2;
        JobCondition failed = new JobCondition();
        failed.type = JobCondition.FAILED;
        failed.status = "True";
        failed.reason = "BackoffLimitExceeded";
        failed.message = "pod ddp-local-worker-0 exited with code 1; last output:\nTraceback\nValueError: x";
        status.conditions.add(failed);
        assertEquals("ddp-local Failed in 0.5 s, 2 restarts: BackoffLimitExceeded: pod ddp-local-worker-0 exited with code 1; last output:\n"
                + "    Traceback\n    ValueError: x", LocalRun.summary(job, Duration.ofMillis(500)));
    }
}
