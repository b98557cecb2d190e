package dev.torchjob.operator.cli;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import dev.torchjob.operator.apiserver.ClosedConnection;
import dev.torchjob.operator.cli.CliArguments.BadInput;
import dev.torchjob.operator.cli.ClusterSession.Failure;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.TrainingContainer;
import dev.torchjob.operator.engine.TrainingJob;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.ContainerResource;
import io.fabric8.kubernetes.client.dsl.LogWatch;
import io.fabric8.kubernetes.client.dsl.Loggable;
import io.fabric8.kubernetes.client.dsl.TimeTailPrettyLoggable;

/**
 * {@code kubectl torchjob logs}: every replica's lines, each after its replica's name. Following
 * ({@code -f}), it looks at the job's pods every second and opens a stream for each container it has
 * not read yet (a recreated pod has a new UID, a container restarted in place a new restart count),
 * says each counted restart once (the operator's JobRestarting event for a group restart, ReplicaRestarted
 * for one replica's), and ends with the job's
 * outcome once the job has ended and its streams have.
 */
final class ReplicaLogs {
    static final Duration LOOK_EVERY = Duration.ofSeconds(1);
    /** After the job ends, how long its streams may take to deliver their last lines. */
    static final Duration DRAIN = Duration.ofSeconds(10);
    private static final Pattern POD = Pattern.compile("pod (\\S+)");
    /** The operator's events that say a counted restart: the group's, or one replica's. */
    private static final java.util.Set<String> RESTARTS = java.util.Set.of("JobRestarting", "ReplicaRestarted");

    private final ClusterSession cluster;
    private final CliArguments args;
    private final PrintStream out;
    private final PrintStream err;
    private final AtomicReference<Failure> streamFailure = new AtomicReference<>();

    ReplicaLogs(ClusterSession cluster, CliArguments args, PrintStream out, PrintStream err) {
        this.cluster = cluster;
        this.args = args;
        this.out = out;
        this.err = err;
    }

    /** The lines so far of each selected replica (exit 0), or with -f until the job ends (0 Succeeded, 1 Failed). */
    int run(JobView job) throws Failure, BadInput {
        Selection selection = Selection.of(job, args);
        return args.on("follow") ? follow(job, selection) : printOnce(job, selection);
    }

    /** Which replicas: one group, one replica of it, or all. */
    record Selection(Optional<String> typeLabelValue, Optional<Integer> index, Optional<String> container) {
        static Selection of(JobView job, CliArguments args) throws BadInput {
            Optional<String> type = Optional.ofNullable(args.flags().get("type"));
            Optional<String> typeLabel = Optional.empty();
            Optional<Integer> index = Optional.ofNullable(args.flags().get("index")).map(Integer::parseInt);
            if (type.isPresent()) {
                TrainingJob.ReplicaGroup group = job.group(type.get()).orElseThrow(() -> new BadInput("error: job " + job.name()
                        + " has no replica type " + type.get() + ": it has " + job.groups().stream().map(TrainingJob.ReplicaGroup::type)
                                .collect(Collectors.joining(", "))));
                if (index.isPresent() && index.get() >= group.replicas()) {
                    throw new BadInput("error: job " + job.name() + " has " + group.replicas() + " " + group.type()
                            + " replica(s): --index " + index.get() + " is not one of them (0-" + (group.replicas() - 1) + ")");
                }
                typeLabel = Optional.of(job.typeLabelValue(group));
            }
            return new Selection(typeLabel, index, Optional.ofNullable(args.flags().get("container")));
        }

        boolean picks(JobView job, Pod pod) {
            var labels = pod.getMetadata().getLabels();
            if (typeLabelValue.isPresent() && (labels == null || !typeLabelValue.get().equals(labels.get(job.replicaTypeLabel())))) {
                return false;
            }
            return index.isEmpty() || pod.getMetadata().getName().endsWith("-" + index.get());
        }

        String containerOf(Pod pod) throws BadInput {
            if (container.isEmpty()) {
                return TrainingContainer.of(pod).getName();
            }
            List<String> names = new ArrayList<>();
            pod.getSpec().getContainers().forEach(c -> names.add(c.getName()));
            Optional.ofNullable(pod.getSpec().getInitContainers()).ifPresent(list -> list.forEach(c -> names.add(c.getName())));
            if (!names.contains(container.get())) {
                throw new BadInput("error: pod " + pod.getMetadata().getName() + " has no container " + container.get() + ": it has "
                        + String.join(", ", names));
            }
            return container.get();
        }
    }

    private int printOnce(JobView job, Selection selection) throws Failure, BadInput {
        List<Pod> pods = cluster.pods(job).stream().filter(p -> selection.picks(job, p))
                .sorted(Comparator.comparing(p -> p.getMetadata().getName())).toList();
        if (pods.isEmpty()) {
            err.println("[torchjob] job " + job.name() + " has no pods now (" + job.phase() + ")");
        }
        for (Pod pod : pods) {
            String container = selection.containerOf(pod);
            if (!started(pod, container)) {
                err.println("[" + job.replicaOf(pod.getMetadata().getName()) + "] container " + container + " has not started");
                continue;
            }
            String log = cluster.asked("get", "pods/log", () -> stream(pod, container).getLog());
            String prefix = "[" + job.replicaOf(pod.getMetadata().getName()) + "] ";
            log.lines().forEach(line -> out.println(prefix + line));
        }
        return 0;
    }

    private int follow(JobView first, Selection selection) throws Failure, BadInput {
        Set<String> read = ConcurrentHashMap.newKeySet();
        Set<String> said = new HashSet<>();
        List<Thread> streams = new ArrayList<>();
        JobView job = first;
        while (true) {
            for (Pod pod : cluster.pods(job)) {
                if (!selection.picks(job, pod)) {
                    continue;
                }
                String container = selection.containerOf(pod);
                Optional<ContainerStatus> status = status(pod, container);
                if (status.isEmpty() || !hasRun(status.get())) {
                    continue;
                }
                String instance = pod.getMetadata().getUid() + "#" + status.get().getRestartCount();
                if (read.add(instance)) {
                    streams.add(startStream(job, pod, container, () -> read.remove(instance)));
                }
            }
            for (Event event : cluster.events(job)) {
                if (RESTARTS.contains(event.getReason()) && said.add(event.getMetadata().getUid() + "#" + event.getCount())) {
                    out.println("[torchjob] " + replicaNamed(job, event.getMessage()) + JobHistory.firstLine(event.getMessage()));
                }
            }
            Failure failed = streamFailure.get();
            if (failed != null) {
                throw failed;
            }
            if (job.ended()) {
                Instant deadline = Instant.now().plus(DRAIN);
                for (Thread stream : streams) {
                    try {
                        stream.join(Math.max(1, Duration.between(Instant.now(), deadline).toMillis()));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
                out.println("[torchjob] " + job.outcome().orElse("job " + job.name() + " " + job.phase()));
                return job.phase() == JobPhase.Succeeded ? 0 : 1;
            }
            sleep();
            Optional<JobView> now = cluster.find(job.kind(), job.name());
            if (now.isEmpty()) {
                out.println("[torchjob] job " + job.name() + " was deleted");
                return 1;
            }
            job = now.get();
        }
    }

    /** "worker-1: " for an event about pod JOB-worker-1. */
    private static String replicaNamed(JobView job, String message) {
        Matcher pod = POD.matcher(message == null ? "" : message);
        return pod.find() ? job.replicaOf(pod.group(1)) + ": " : "";
    }

    /**
     * Reads one container's log on a thread of its own. A stream whose connection was closed before
     * its first line (a kept-alive connection the server had just closed) calls {@code readAgain}, so
     * that the next look opens it again: nothing of it was printed, so nothing is printed twice.
     */
    private Thread startStream(JobView job, Pod pod, String container, Runnable readAgain) {
        String prefix = "[" + job.replicaOf(pod.getMetadata().getName()) + "] ";
        Thread thread = new Thread(() -> {
            boolean printed = false;
            try (LogWatch watch = stream(pod, container).watchLog();
                    BufferedReader lines = new BufferedReader(new InputStreamReader(watch.getOutput(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    out.println(prefix + line);
                    printed = true;
                }
            } catch (java.io.IOException | RuntimeException e) {
                // Anything but a refusal: the pod went away while being read (a new one is found on the next
                // look), the stream was cut, or the cluster went away (the next look's list says so).
                if (e instanceof KubernetesClientException refused) {
                    cluster.refusal("get", "pods/log", refused).ifPresent(failure -> streamFailure.compareAndSet(null, failure));
                }
                if (!printed && ClosedConnection.underTheCall(e)) {
                    readAgain.run();
                }
            }
        }, "logs-" + pod.getMetadata().getName());
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    private Loggable stream(Pod pod, String container) {
        ContainerResource logs = cluster.log(pod, container);
        TimeTailPrettyLoggable timed = args.on("timestamps") ? logs.usingTimestamps() : logs;
        try {
            return args.flags().containsKey("since") ? timed.sinceSeconds((int) args.duration("since").toSeconds()) : timed;
        } catch (BadInput e) {
            throw new IllegalStateException(e); // checked when the arguments were read
        }
    }

    private static Optional<ContainerStatus> status(Pod pod, String container) {
        if (pod.getStatus() == null) {
            return Optional.empty();
        }
        List<ContainerStatus> all = new ArrayList<>();
        Optional.ofNullable(pod.getStatus().getContainerStatuses()).ifPresent(all::addAll);
        Optional.ofNullable(pod.getStatus().getInitContainerStatuses()).ifPresent(all::addAll);
        return all.stream().filter(s -> container.equals(s.getName())).findFirst();
    }

    /** Whether the container has run (running now, or ended): only then does the kubelet have a log. */
    private static boolean started(Pod pod, String container) {
        return status(pod, container).map(ReplicaLogs::hasRun).orElse(false);
    }

    private static boolean hasRun(ContainerStatus status) {
        return status.getState() != null && (status.getState().getRunning() != null || status.getState().getTerminated() != null);
    }

    private static void sleep() {
        try {
            Thread.sleep(LOOK_EVERY.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
