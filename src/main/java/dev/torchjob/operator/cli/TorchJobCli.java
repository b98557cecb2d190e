package dev.torchjob.operator.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import dev.torchjob.operator.cli.CliArguments.BadInput;
import dev.torchjob.operator.cli.ClusterSession.Failure;

/**
 * {@code kubectl torchjob}: the same executable as the operator, run under the name
 * {@code kubectl-torchjob} (a link or copy on PATH makes it a kubectl plugin) or as
 * {@code torchjob-operator torchjob ...}. It asks the cluster of the user's kubeconfig and never
 * starts the operator.
 */
public final class TorchJobCli {
    public static final String PLUGIN_NAME = "kubectl-torchjob";
    /** The words that ask for help, for every command of this executable. */
    public static final Set<String> HELP = Set.of("--help", "-h", "help");
    static final String USAGE = """
            kubectl torchjob: follow, wait for and read PyTorch training jobs (PyTorchTrainingJob and Kubeflow's PyTorchJob).

            usage:
              kubectl torchjob get [JOB]                       the jobs of the namespace: phase, replicas, restarts/backoffLimit, queue
              kubectl torchjob describe JOB                    the job's history in time order, then its replicas' pods
              kubectl torchjob wait JOB [--for Succeeded|Failed|Running|Admitted] [--timeout 1h]
                                                              exit 0 when reached, 1 when the job ended otherwise, 2 on timeout
              kubectl torchjob logs JOB [-f] [--type TYPE] [--index N] [-c CONTAINER] [--since 10m] [--timestamps]
                                                              every replica's lines after its name; -f follows recreated pods,
                                                              says each counted restart, ends with the job's outcome (0 Succeeded, 1 Failed)

            JOB is a name, or pj/NAME (PyTorchTrainingJob) or pytorchjob/NAME (PyTorchJob) when both kinds have one.
            Cluster flags, as kubectl's: -n/--namespace, --context, --kubeconfig (else KUBECONFIG, else ~/.kube/config).
            Errors (bad input, no cluster, no such job, not allowed) print one line and exit 3.
            The same commands from the jar: java -jar quarkus-run.jar torchjob get ...
            """;

    private TorchJobCli() {
    }

    /** Whether this process was started as the kubectl plugin (its program name, as the kernel has it). */
    public static boolean invokedAsPlugin() {
        try {
            byte[] cmdline = Files.readAllBytes(Path.of("/proc/self/cmdline"));
            int end = 0;
            while (end < cmdline.length && cmdline[end] != 0) {
                end++;
            }
            String program = new String(cmdline, 0, end, StandardCharsets.UTF_8);
            return Path.of(program).getFileName() != null && PLUGIN_NAME.equals(Path.of(program).getFileName().toString());
        } catch (IOException | RuntimeException e) {
            return false; // not Linux, or no /proc: only "torchjob-operator torchjob ..." reaches the command line
        }
    }

    /**
     * Set by the JVM launcher (bin/kubectl-torchjob) on the call that writes its class-data archive: the
     * archive then holds what every verb loads, not only what the first one needed.
     */
    static final String WRITING_CLASS_ARCHIVE = "torchjob.cli.writing-class-archive";

    public static int run(List<String> args, PrintStream out, PrintStream err) {
        if (!args.isEmpty() && HELP.contains(args.get(0))) {
            out.print(USAGE);
            return 0;
        }
        CliArguments parsed;
        try {
            parsed = CliArguments.parse(args);
        } catch (BadInput e) {
            err.println(e.getMessage());
            return ClusterSession.EXIT_ERROR;
        }
        try (ClusterSession cluster = ClusterSession.open(parsed)) {
            int code = switch (parsed.verb()) {
                case GET -> get(cluster, parsed, out, err);
                case DESCRIBE -> describe(cluster, parsed, out);
                case WAIT -> waitFor(cluster, parsed, out, err);
                case LOGS -> new ReplicaLogs(cluster, parsed, out, err).run(cluster.job(parsed.job().orElseThrow()));
            };
            if (Boolean.getBoolean(WRITING_CLASS_ARCHIVE)) {
                cluster.readOnceWhatEveryVerbReads();
            }
            return code;
        } catch (Failure | BadInput e) {
            err.println(e.getMessage());
            return ClusterSession.EXIT_ERROR;
        }
    }

    private static int get(ClusterSession cluster, CliArguments args, PrintStream out, PrintStream err) throws Failure {
        List<JobView> jobs = args.job().isPresent() ? List.of(cluster.job(args.job().get())) : cluster.jobs();
        if (jobs.isEmpty()) {
            err.println("No training jobs found in " + cluster.namespace + " namespace.");
            return 0;
        }
        out.print(JobTable.render(jobs, Instant.now()));
        return 0;
    }

    private static int describe(ClusterSession cluster, CliArguments args, PrintStream out) throws Failure {
        JobView job = cluster.job(args.job().orElseThrow());
        out.print(JobHistory.render(job, cluster.pods(job), cluster.events(job)));
        return 0;
    }

    /** Looks every second; 0 reached, 1 ended otherwise (or deleted), 2 timed out. */
    private static int waitFor(ClusterSession cluster, CliArguments args, PrintStream out, PrintStream err) throws Failure, BadInput {
        WaitTarget target = WaitTarget.named(args.flag("for", "Succeeded"));
        Optional<Instant> deadline = args.flags().containsKey("timeout") ? Optional.of(Instant.now().plus(args.duration("timeout")))
                : Optional.empty();
        JobView job = cluster.job(args.job().orElseThrow());
        while (true) {
            switch (target.judge(job)) {
                case REACHED -> {
                    out.println("job " + job.name() + " " + target.word() + (target == WaitTarget.ADMITTED ? "" : " (" + job.phase() + ")"));
                    return 0;
                }
                case ENDED_OTHERWISE -> {
                    out.println(job.outcome().orElse("job " + job.name() + " " + job.phase()) + "; not " + target.word());
                    return 1;
                }
                case NOT_YET -> {
                }
            }
            if (deadline.isPresent() && !Instant.now().isBefore(deadline.get())) {
                err.println("timed out after " + args.flag("timeout", "") + " waiting for job " + job.name() + " to be " + target.word()
                        + " (it is " + job.phase() + ")");
                return 2;
            }
            try {
                Thread.sleep(Math.min(ReplicaLogs.LOOK_EVERY.toMillis(),
                        deadline.map(d -> Math.max(1, Duration.between(Instant.now(), d).toMillis())).orElse(Long.MAX_VALUE)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 2;
            }
            Optional<JobView> now = cluster.find(job.kind(), job.name());
            if (now.isEmpty()) {
                out.println("job " + job.name() + " was deleted; not " + target.word());
                return 1;
            }
            job = now.get();
        }
    }
}
