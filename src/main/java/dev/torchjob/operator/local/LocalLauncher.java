package dev.torchjob.operator.local;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.kubeflow.KubeflowSpecValidator;
import io.fabric8.kubernetes.client.CustomResource;
import dev.torchjob.operator.t9k.SpecValidator;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.quarkus.runtime.Quarkus;

/**
 * The local mode: checks the job file, starts an embedded Kubernetes API server (the fabric8
 * mock server in CRUD mode, the one the tests use) on loopback, installs the CRD into it, points
 * the operator's client at it, and boots the unchanged operator with {@link LocalRun}.
 */
public final class LocalLauncher {
    public static final int EXIT_SUCCEEDED = 0;
    public static final int EXIT_FAILED = 1;
    public static final int EXIT_BAD_INPUT = 2;
    static final String NAMESPACE = "default";
    static final List<String> CRD_RESOURCES = List.of("/crd/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml",
            "/crd/pytorchjobs.kubeflow.org-v1.yml");
    static final String USAGE = "usage: run JOB.yaml [--metrics-port PORT] [--output yaml] [--dry-run] [" + GpuAssignment.SHARE_OPTION + "]";

    private LocalLauncher() {
    }

    public static int launch(String[] args) {
        PrintStream err = System.err;
        Path jobFile = null;
        String metricsPort = "8080";
        String output = "summary";
        boolean dryRun = false;
        boolean shareGpus = false;
        for (int i = 0; i < args.length; i++) {
            if ("--metrics-port".equals(args[i]) && i + 1 < args.length) {
                metricsPort = args[++i];
            } else if ("--dry-run".equals(args[i])) {
                dryRun = true;
            } else if (GpuAssignment.SHARE_OPTION.equals(args[i])) {
                shareGpus = true;
            } else if (("--output".equals(args[i]) || "-o".equals(args[i])) && i + 1 < args.length) {
                output = args[++i];
                if (!output.equals("yaml")) {
                    err.println("error: --output " + output + " is not known; the only output format is yaml; " + USAGE);
                    return EXIT_BAD_INPUT;
                }
            } else if (jobFile == null && !args[i].startsWith("--")) {
                jobFile = Path.of(args[i]).toAbsolutePath().normalize();
            } else {
                err.println("error: unexpected argument " + args[i] + "; " + USAGE);
                return EXIT_BAD_INPUT;
            }
        }
        if (jobFile == null) {
            err.println("error: no job file given; " + USAGE);
            return EXIT_BAD_INPUT;
        }
        CheckedFile checked = check(jobFile);
        if (!checked.problems().isEmpty()) {
            Path file = jobFile;
            checked.problems().forEach(problem -> err.println("error: " + file + ": " + problem));
            return EXIT_BAD_INPUT;
        }
        CustomResource<?, ?> submitted = checked.job();
        // What the cluster would fill in: the placeholder shows where the job's uid goes (torchrun's rendezvous id).
        submitted.getMetadata().setUid("<uid>");
        submitted.getMetadata().setGeneration(1L);
        submitted.getMetadata().setNamespace(NAMESPACE);
        List<Pod> pods = DryRun.firstPlan(submitted, java.time.Instant.now()).podsToCreate();
        MachineGpus gpus = MachineGpus.discover(System.getenv());
        Optional<String> gpusRefused = GpuAssignment.refusal(gpus, pods, shareGpus);
        if (dryRun) {
            System.out.print(DryRun.describe(submitted, java.time.Instant.now()));
            System.out.print(DryRun.gpus(pods, new GpuAssignment(gpus, shareGpus)));
            if (gpusRefused.isPresent()) {
                err.println("error: " + jobFile + ": " + gpusRefused.get());
                return EXIT_BAD_INPUT;
            }
            return EXIT_SUCCEEDED;
        }
        if (gpusRefused.isPresent()) {
            err.println("error: " + jobFile + ": " + gpusRefused.get());
            return EXIT_BAD_INPUT;
        }
        // Never a run that hangs: a torchrun this machine cannot start ends it here, with the reason.
        Optional<String> torchrun = TorchrunOnOneHost.cannotRun(pods, jobFile.getParent());
        if (torchrun.isPresent()) {
            err.println("error: " + jobFile + ": " + torchrun.get());
            return EXIT_BAD_INPUT;
        }
        Optional<String> portTaken = HealthPort.taken(metricsPort, "127.0.0.1",
                "Give another with --metrics-port PORT, or --metrics-port 0 for any free one.");
        if (portTaken.isPresent()) {
            err.println(portTaken.get());
            return EXIT_BAD_INPUT;
        }

        KubernetesMockServer apiServer = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
                new KubernetesCrudDispatcher(List.of()), false);
        try {
            apiServer.init(InetAddress.getLoopbackAddress(), 0);
            installCrd(apiServer);
        } catch (IOException | RuntimeException e) {
            err.println("error: could not start the embedded API server: " + e.getMessage());
            return EXIT_FAILED;
        }
        String url = "http://" + apiServer.getHostName() + ":" + apiServer.getPort();
        runTimeSettings(url, metricsPort, jobFile).forEach(System::setProperty);
        System.setProperty(LocalRun.OUTPUT_PROPERTY, output);
        System.setProperty(LocalRun.SHARE_GPUS_PROPERTY, Boolean.toString(shareGpus));
        if (pods.stream().anyMatch(pod -> GpuAssignment.asked(pod) > 0)) {
            System.out.println("[local] this machine has " + gpus.said() + (shareGpus ? "; replicas share them (" + GpuAssignment.SHARE_OPTION
                    + ")" : "") + "; each replica gets the " + GpuAssignment.NVIDIA_GPU + " its limits ask for");
        }
        GpuAssignment.notGiven(pods).forEach(line -> System.out.println("[local] " + line));
        Quarkus.run(LocalRun.class, args);
        return EXIT_FAILED; // not reached: Quarkus exits with LocalRun's code
    }

    /**
     * The system properties a local run sets before it boots the operator. Every one is read at run
     * time: a setting Quarkus fixes at build time (such as {@code quarkus.kubernetes-client.*}) would be
     * honoured by the JVM and silently ignored by the native executable (RunTimeSettingsTest).
     */
    public static Map<String, String> runTimeSettings(String apiServerUrl, String metricsPort, Path jobFile) {
        Map<String, String> settings = new LinkedHashMap<>();
        // The client's own keys: the embedded API server, never the user's kubeconfig or credentials.
        settings.put(Config.KUBERNETES_MASTER_SYSTEM_PROPERTY, apiServerUrl);
        settings.put(Config.KUBERNETES_NAMESPACE_SYSTEM_PROPERTY, NAMESPACE);
        settings.put(Config.KUBERNETES_AUTH_TRYKUBECONFIG_SYSTEM_PROPERTY, "false");
        settings.put(Config.KUBERNETES_AUTH_TRYSERVICEACCOUNT_SYSTEM_PROPERTY, "false");
        settings.put("torchjob.server-side-apply", "false"); // the embedded mock server has none
        settings.put("torchjob.kubeflow.enabled", "true"); // a PyTorchJob file runs too
        // A crash loop on a laptop is watched live: a short back-off (still doubling) keeps it readable.
        settings.put("torchjob.restart-backoff.initial", System.getProperty("torchjob.restart-backoff.initial", "1s"));
        settings.put("torchjob.restart-backoff.max", System.getProperty("torchjob.restart-backoff.max", "30s"));
        settings.put("torchjob.restart-backoff.dns-cache", "0s"); // one machine: the master is reached without DNS
        settings.put("quarkus.http.port", metricsPort);
        settings.put("quarkus.http.host", "127.0.0.1");
        settings.put("quarkus.banner.enabled", "false");
        // The run's own output is the replicas' and the operator's decisions; logs only for problems.
        String logLevel = System.getProperty("quarkus.log.level", "WARN");
        settings.put("quarkus.log.level", logLevel);
        // The operator's own category may be turned up alone (DEBUG: each pass, each event recorded and printed).
        String operatorCategory = "quarkus.log.category.\"dev.torchjob\".level";
        settings.put(operatorCategory, System.getProperty(operatorCategory, logLevel));
        settings.put(LocalRun.JOB_FILE_PROPERTY, jobFile.toString());
        return settings;
    }

    /** The job in a file, or why the file is not a job this operator can run (a line per problem). */
    record CheckedFile(CustomResource<?, ?> job, List<String> problems) {
        static CheckedFile refused(List<String> problems) {
            return new CheckedFile(null, problems);
        }
    }

    /**
     * Reads and checks the job file once: first what the API server would refuse (strict field
     * validation against the CRD), then the operator's own checks.
     */
    static CheckedFile check(Path jobFile) {
        if (!Files.isRegularFile(jobFile)) {
            return CheckedFile.refused(List.of("no such file"));
        }
        CustomResource<?, ?> job;
        try {
            String text = Files.readString(jobFile);
            List<JobFileCheck.Problem> refused = JobFileCheck.problemsWith(text);
            if (!refused.isEmpty()) {
                return CheckedFile.refused(refused.stream().map(JobFileCheck.Problem::toString).toList());
            }
            job = parse(text);
        } catch (IOException | RuntimeException e) {
            return CheckedFile.refused(List.of(firstLine(e)));
        }
        if (job == null || job.getMetadata() == null || job.getMetadata().getName() == null) {
            return CheckedFile.refused(List.of("metadata.name is missing"));
        }
        Optional<String> refused = job instanceof PyTorchJob kubeflow ? KubeflowSpecValidator.problemWith(kubeflow)
                : SpecValidator.problemWith((PyTorchTrainingJob) job);
        return new CheckedFile(job, refused.stream().toList());
    }

    /** The job in the file: a T9k PyTorchTrainingJob or a Kubeflow PyTorchJob. */
    static CustomResource<?, ?> read(Path jobFile) throws IOException {
        return parse(Files.readString(jobFile));
    }

    private static CustomResource<?, ?> parse(String text) {
        KubernetesSerialization serialization = new KubernetesSerialization();
        GenericKubernetesResource object = serialization.unmarshal(text, GenericKubernetesResource.class);
        if (object == null) {
            throw new IllegalArgumentException("the file is empty");
        }
        String t9k = PyTorchTrainingJob.GROUP + "/" + PyTorchTrainingJob.VERSION;
        String kubeflow = PyTorchJob.GROUP + "/" + PyTorchJob.VERSION;
        if (PyTorchTrainingJob.KIND.equals(object.getKind()) && t9k.equals(object.getApiVersion())) {
            return serialization.unmarshal(text, PyTorchTrainingJob.class);
        }
        if (PyTorchJob.KIND.equals(object.getKind()) && kubeflow.equals(object.getApiVersion())) {
            return serialization.unmarshal(text, PyTorchJob.class);
        }
        throw new IllegalArgumentException("kind " + object.getKind() + " (" + object.getApiVersion() + ") is neither PyTorchTrainingJob ("
                + t9k + ") nor PyTorchJob (" + kubeflow + ")");
    }

    private static void installCrd(KubernetesMockServer apiServer) throws IOException {
        try (KubernetesClient client = apiServer.createClient()) {
            for (String resource : CRD_RESOURCES) {
                try (InputStream crd = LocalLauncher.class.getResourceAsStream(resource)) {
                    if (crd == null) {
                        throw new IOException("CRD " + resource + " is missing from the application");
                    }
                    client.load(crd).create();
                }
            }
        }
    }

    private static String firstLine(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null && cause.getMessage() != null && cause.getMessage().startsWith(cause.getCause().getClass().getName())) {
            cause = cause.getCause();
        }
        String message = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
        int cut = message.indexOf(" at [Source");
        message = cut > 0 ? message.substring(0, cut) : message;
        return message.lines().findFirst().orElse(message).trim();
    }
}
