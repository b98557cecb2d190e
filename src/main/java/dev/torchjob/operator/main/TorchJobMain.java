package dev.torchjob.operator.main;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import dev.torchjob.operator.cli.TorchJobCli;
import dev.torchjob.operator.local.LocalLauncher;
import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.annotations.QuarkusMain;

/**
 * Entry point. Without arguments: the operator, against the cluster of the kubeconfig (or the
 * in-cluster service account), once {@link OperatorPreflight} found that cluster and its port free.
 * With {@code run JOB.yaml}: the local mode (see {@link LocalLauncher}). Help and version answer at
 * once, without starting anything.
 */
@QuarkusMain
public class TorchJobMain {
    static final String USAGE = """
            torchjob-operator: runs PyTorchTrainingJob (batch.tensorstack.dev/v1beta1) and, when enabled,
            Kubeflow's PyTorchJob (kubeflow.org/v1) on Kubernetes.

            usage:
              torchjob-operator                        the operator, against the cluster of your kubeconfig
                                                       (KUBECONFIG, else ~/.kube/config) or, in a pod, its ServiceAccount
              torchjob-operator run JOB.yaml [--metrics-port PORT] [--output yaml] [--dry-run] [--share-gpus]
                                                       one job on this machine, no cluster needed: the operator,
                                                       an embedded API server, replicas as local processes;
                                                       ends with a one-line summary (--output yaml: the whole status);
                                                       --dry-run: only the pods, commands and env it would create;
                                                       each replica gets the NVIDIA GPUs its limits ask for
                                                       (nvidia.com/gpu), distinct ones; --share-gpus: replicas may
                                                       share them when the job asks for more than there are
              torchjob-operator torchjob get|describe|wait|logs ...
                                                       follow, wait for and read jobs in your cluster; the same as
                                                       kubectl torchjob ... with this executable on PATH as kubectl-torchjob
                                                       (torchjob-operator torchjob --help)
              torchjob-operator --help | -h | help     this text
              torchjob-operator --version              the version

            (torchjob-operator is the native executable, or java -jar target/quarkus-app/quarkus-run.jar)

            The operator's settings are environment variables (or -D properties), read at start:
              QUARKUS_HTTP_PORT                        health and metrics port (8080; 0 for any free one)
              TORCHJOB_KUBEFLOW_ENABLED                also run kubeflow.org/v1 PyTorchJob (false)
              TORCHJOB_GANG_SCHEDULER_NAME             gang-schedule PyTorchJobs: volcano, kubernetes (its own,
                                                       1.37+), or a scheduler-plugins scheduler's name (none)
              TORCHJOB_LEADER_ELECTION_ENABLED         one of several replicas works at a time (false)
              QUARKUS_OPERATOR_SDK_CONTROLLERS_PYTORCHTRAININGJOB_NAMESPACES
                                                       namespaces to watch (all)
            All settings: docs/user-guide.md. The local mode: docs/local-mode.md.
            """;

    public static void main(String... args) {
        // kubectl torchjob: a command line against the user's cluster, nothing of the operator started.
        if (TorchJobCli.invokedAsPlugin()) {
            System.exit(TorchJobCli.run(List.of(args), System.out, System.err));
        }
        if (args.length > 0 && "torchjob".equals(args[0])) {
            System.exit(TorchJobCli.run(List.of(args).subList(1, args.length), System.out, System.err));
        }
        if (args.length > 0 && TorchJobCli.HELP.contains(args[0])) {
            System.out.print(USAGE);
            System.exit(0);
        }
        if (args.length > 0 && "--version".equals(args[0])) {
            System.out.println("torchjob-operator " + version().orElse("(version unknown)"));
            System.exit(0);
        }
        // Before anything starts, in both modes: what only the JVM would honour is refused by both.
        List<String> buildTime = BuildTimeSettings.givenAtRunTime(System.getenv(), systemProperties());
        if (!buildTime.isEmpty()) {
            buildTime.forEach(System.err::println);
            System.exit(LocalLauncher.EXIT_BAD_INPUT);
        }
        if (args.length > 0 && "run".equals(args[0])) {
            System.exit(LocalLauncher.launch(Arrays.copyOfRange(args, 1, args.length)));
        }
        // -Dname=value are settings (the container image passes one); anything else is a mistake.
        Optional<String> unknown = Arrays.stream(args).filter(arg -> !arg.startsWith("-D")).findFirst();
        if (unknown.isPresent()) {
            System.err.println("error: unknown argument " + unknown.get() + "; see --help");
            System.exit(LocalLauncher.EXIT_BAD_INPUT);
        }
        Optional<String> problem = OperatorPreflight.problem();
        if (problem.isPresent()) {
            System.err.println(problem.get());
            System.exit(1);
        }
        Quarkus.run(args);
    }

    private static Map<String, String> systemProperties() {
        Map<String, String> properties = new HashMap<>();
        System.getProperties().stringPropertyNames().forEach(name -> properties.put(name, System.getProperty(name)));
        return properties;
    }

    static Optional<String> version() {
        try (InputStream in = TorchJobMain.class.getResourceAsStream("/torchjob-version.properties")) {
            if (in == null) {
                return Optional.empty();
            }
            Properties properties = new Properties();
            properties.load(in);
            return Optional.ofNullable(properties.getProperty("version"));
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
