package dev.torchjob.operator.local;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.time.Instant;

import jakarta.inject.Inject;

import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.kubeflow.KubeflowModel;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.t9k.T9kModel;
import dev.torchjob.operator.t9k.T9kPlanner;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.runtime.QuarkusApplication;

/**
 * The local mode once the operator runs: submits the job to the embedded API server, runs its
 * pods as local processes ({@link LocalNode}), reports what the operator decides, and ends
 * with the job in one summary line: exit 0 when it Succeeded, 1 when it Failed, 130 when interrupted.
 */
public class LocalRun implements QuarkusApplication {
    static final String JOB_FILE_PROPERTY = "torchjob.local.job-file";
    /** yaml: the job's whole status after the summary line. */
    static final String OUTPUT_PROPERTY = "torchjob.local.output";
    /** true: replicas may share GPUs (run --share-gpus). */
    static final String SHARE_GPUS_PROPERTY = "torchjob.local.share-gpus";
    static final int EXIT_INTERRUPTED = 130;
    private static final Duration POLL = Duration.ofMillis(200);
    private static final Logger LOG = Logger.getLogger(LocalRun.class);

    @Inject
    KubernetesClient client;

    /** Set by Ctrl-C or SIGTERM: from then on the API server may go away under the loop. */
    private volatile boolean interrupted;
    /** The job ended: a later signal has nothing to interrupt. */
    private volatile boolean finished;
    /** The job's last phase seen, for the line an interruption prints. */
    private volatile JobPhase phase;

    @Override
    public int run(String... args) throws Exception {
        PrintStream out = System.out;
        // Read here, not injected: this bean exists in every mode, the properties only in the local one.
        Path file = Path.of(ConfigProvider.getConfig().getValue(JOB_FILE_PROPERTY, String.class));
        boolean yaml = "yaml".equals(ConfigProvider.getConfig().getOptionalValue(OUTPUT_PROPERTY, String.class).orElse(""));
        CustomResource<?, ?> job = LocalLauncher.read(file);
        job.getMetadata().setNamespace(LocalLauncher.NAMESPACE);
        String name = job.getMetadata().getName();

        boolean shareGpus = ConfigProvider.getConfig().getOptionalValue(SHARE_GPUS_PROPERTY, Boolean.class).orElse(false);
        LocalNode node = new LocalNode(client, LocalLauncher.NAMESPACE, file.getParent(), out,
                new GpuAssignment(MachineGpus.discover(System.getenv()), shareGpus));
        // Ctrl-C or SIGTERM: no training process may outlive us. Said here, in the hook: the JVM may halt
        // before the main loop notices.
        Instant submitted = Instant.now();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (finished) {
                return;
            }
            interrupted = true;
            node.stopAll();
            out.println("[local] interrupted: " + name + " was " + (phase == null ? "not started" : phase)
                    + " after " + seconds(Duration.between(submitted, Instant.now())) + "; every replica process is stopped");
            out.flush();
        }, "local-node-shutdown"));
        node.start();

        out.println("[local] embedded API server " + client.getMasterUrl() + "; metrics http://127.0.0.1:"
                + ConfigProvider.getConfig().getOptionalValue("quarkus.http.port", String.class).orElse("8080") + "/q/metrics");
        @SuppressWarnings("unchecked")
        Class<CustomResource<?, ?>> kind = (Class<CustomResource<?, ?>>) job.getClass();
        client.resources(kind).inNamespace(LocalLauncher.NAMESPACE).resource(job).create();
        out.println("[local] submitted " + job.getKind() + " " + name + " from " + file);
        whyItWillNotEnd(job).ifPresent(why -> out.println("[local] this job will not end by itself: " + why + ". Ctrl-C stops it."));

        Set<String> reported = new HashSet<>();
        CustomResource<?, ?> current = job;
        try {
            while (true) {
                current = client.resources(kind).inNamespace(LocalLauncher.NAMESPACE).withName(name).get();
                reportEvents(reported, out);
                JobPhase now = phaseOf(current);
                if (now != null && now != phase) {
                    out.println("[operator] job " + name + " is " + now);
                    phase = now;
                }
                if (now != null && now.isTerminal()) {
                    break;
                }
                Thread.sleep(POLL.toMillis());
            }
            Thread.sleep(POLL.toMillis()); // let the terminal events land
            reportEvents(reported, out);
        } catch (RuntimeException | InterruptedException e) {
            if (!interrupted) {
                throw e;
            }
            // The shutdown closed the client under the loop: that is the interruption, already said.
            return EXIT_INTERRUPTED;
        }
        finished = true;
        node.stopAll();
        out.println("[local] " + summary(current, Duration.between(submitted, Instant.now())));
        if (yaml) {
            out.println("[local] final status of " + name + ":");
            out.print(client.getKubernetesSerialization().asYaml(current.getStatus()).replaceFirst("^---\\n", ""));
        }
        return phase == JobPhase.Succeeded ? LocalLauncher.EXIT_SUCCEEDED : LocalLauncher.EXIT_FAILED;
    }

    /**
     * The run in one line: outcome, reason, duration, restarts; for a failure also what failed, whose
     * last output (the crash context the operator put in the message) follows, indented.
     */
    static String summary(CustomResource<?, ?> job, Duration took) {
        String name = job.getMetadata().getName();
        JobPhase phase = phaseOf(job);
        Integer restarts = job.getStatus() instanceof PyTorchJobStatus kubeflow ? kubeflow.backoffCount
                : job.getStatus() instanceof PyTorchTrainingJobStatus t9k ? t9k.backoffCount : null;
        int counted = restarts == null ? 0 : restarts;
        String line = name + " " + phase + " in " + seconds(took) + ", " + counted + (counted == 1 ? " restart" : " restarts");
        if (phase != JobPhase.Failed) {
            return line;
        }
        return failure(job).map(failed -> line + ": " + failed.reason() + ": "
                + failed.message().lines().collect(Collectors.joining("\n    "))).orElse(line);
    }

    private record Failure(String reason, String message) {
    }

    /** The Failed condition's reason and message, in either kind's status. */
    private static Optional<Failure> failure(CustomResource<?, ?> job) {
        if (job.getStatus() instanceof PyTorchJobStatus kubeflow) {
            return kubeflow.conditions.stream().filter(c -> JobCondition.FAILED.equals(c.type) && "True".equals(c.status))
                    .map(c -> new Failure(c.reason, String.valueOf(c.message))).findFirst();
        }
        if (job.getStatus() instanceof PyTorchTrainingJobStatus t9k) {
            return t9k.conditions.stream().filter(c -> JobCondition.FAILED.equals(c.type) && c.isTrue())
                    .map(c -> new Failure(c.reason, String.valueOf(c.message))).findFirst();
        }
        return Optional.empty();
    }

    /**
     * Why the job cannot end in a local run, if it cannot: it runs until edited, or waits for something
     * a cluster has and the local mode does not.
     */
    static Optional<String> whyItWillNotEnd(CustomResource<?, ?> job) {
        if (KueueWorkload.queueOf(job).isPresent()) {
            return Optional.of("it waits for Kueue to admit it (label " + KueueWorkload.QUEUE_LABEL + "), and the local mode has no Kueue");
        }
        // The engine's own reading of the job: what pauses or debugs it is decided in one place.
        TrainingJob.RunMode runMode = (job instanceof PyTorchJob kubeflow ? KubeflowModel.job(kubeflow)
                : T9kModel.job((PyTorchTrainingJob) job)).runMode();
        String field = job instanceof PyTorchJob ? "spec.runPolicy.suspend" : "spec.runMode.pause";
        if (runMode == TrainingJob.RunMode.PAUSE) {
            return Optional.of("it is paused (" + field + "); no replica runs until it is resumed");
        }
        if (runMode == TrainingJob.RunMode.DEBUG) {
            return Optional.of("it runs in debug mode (spec.runMode.debug): the replicas run their debug command, not the training");
        }
        if (job instanceof PyTorchTrainingJob t9k && T9kPlanner.usesT9kScheduler(t9k)) {
            return Optional.of("it waits for the T9k scheduler (spec.scheduler.t9kScheduler), and the local mode has none");
        }
        return Optional.empty();
    }

    private static String seconds(Duration took) {
        return String.format(java.util.Locale.ROOT, "%.1f s", took.toMillis() / 1000.0);
    }

    /** The phase either kind's status keeps (T9k's own field; this operator's beside Kubeflow's). */
    private static JobPhase phaseOf(CustomResource<?, ?> job) {
        if (job == null || job.getStatus() == null) {
            return null;
        }
        return job.getStatus() instanceof PyTorchJobStatus kubeflow ? kubeflow.phase
                : ((PyTorchTrainingJobStatus) job.getStatus()).phase;
    }

    private void reportEvents(Set<String> reported, PrintStream out) {
        for (Event event : client.v1().events().inNamespace(LocalLauncher.NAMESPACE).list().getItems()) {
            if (reported.add(event.getMetadata().getName())) {
                // Which object each line is: a line seen twice is then two events, or one printed twice.
                LOG.debugf("event %s (uid %s, resourceVersion %s)", event.getMetadata().getName(), event.getMetadata().getUid(),
                        event.getMetadata().getResourceVersion());
                // A message's later lines (a replica's last output) indented under it, as in the summary.
                out.println("[operator] " + event.getType() + " " + event.getReason() + ": "
                        + String.valueOf(event.getMessage()).lines().collect(Collectors.joining("\n    ")));
            }
        }
    }
}
