package dev.torchjob.operator.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.apiserver.ClosedConnection;
import dev.torchjob.operator.cli.CliArguments.JobKind;
import dev.torchjob.operator.cli.CliArguments.JobReference;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventList;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.ContainerResource;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.kubernetes.client.vertx.VertxHttpClientBuilder;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.file.FileSystemOptions;

/**
 * The cluster as the user's kubectl reaches it (--kubeconfig, KUBECONFIG, ~/.kube/config; --context;
 * -n or the context's namespace), and every question the command line asks of it. A refusal becomes
 * one line that names what was refused: the verb, the resource and the namespace.
 */
final class ClusterSession implements AutoCloseable {
    /** The command could not do its work: bad input, no cluster, no such job, not allowed. */
    static final int EXIT_ERROR = 3;

    /** One line for the user, and the exit code it ends with. */
    static final class Failure extends Exception {
        Failure(String message) {
            super(message);
        }
    }

    private final KubernetesClient client;
    final String namespace;
    private final String server;
    /** The HTTP client's event loops when this session made them; stopped before the command returns. */
    private final Optional<Vertx> eventLoops;

    ClusterSession(KubernetesClient client, String namespace, String server) {
        this(client, namespace, server, Optional.empty());
    }

    private ClusterSession(KubernetesClient client, String namespace, String server, Optional<Vertx> eventLoops) {
        this.client = client;
        this.namespace = namespace;
        this.server = server;
        this.eventLoops = eventLoops;
    }

    static ClusterSession open(CliArguments args) throws Failure {
        Optional<String> kubeconfigFlag = Optional.ofNullable(args.flags().get("kubeconfig"));
        if (kubeconfigFlag.isPresent()) {
            if (!Files.isRegularFile(Path.of(kubeconfigFlag.get()))) {
                throw new Failure("error: --kubeconfig " + kubeconfigFlag.get() + ": no such file");
            }
            System.setProperty(Config.KUBERNETES_KUBECONFIG_FILE, kubeconfigFlag.get());
        } else if (System.getenv("KUBERNETES_SERVICE_HOST") == null) {
            String kubeconfig = Optional.ofNullable(System.getenv("KUBECONFIG")).filter(k -> !k.isBlank())
                    .orElse(Path.of(System.getProperty("user.home"), ".kube", "config").toString());
            if (java.util.Arrays.stream(kubeconfig.split(java.io.File.pathSeparator)).noneMatch(f -> Files.isRegularFile(Path.of(f)))) {
                throw new Failure("error: no kubeconfig: " + kubeconfig + " does not exist (set KUBECONFIG or --kubeconfig to your cluster's)");
            }
        }
        String context = args.flags().get("context");
        Config config = Config.autoConfigure(context);
        if (context != null && (config.getCurrentContext() == null || !context.equals(config.getCurrentContext().getName()))) {
            throw new Failure("error: context \"" + context + "\" is not in your kubeconfig");
        }
        // Fail at once rather than retry for a minute: a person is waiting at the terminal.
        config.setRequestRetryBackoffLimit(0);
        config.setConnectionTimeout(5_000);
        String namespace = Optional.ofNullable(args.flags().get("namespace")).or(() -> Optional.ofNullable(config.getNamespace()))
                .orElse("default");
        Vertx eventLoops = eventLoops();
        KubernetesClient client = new KubernetesClientBuilder().withConfig(config).withHttpClientFactory(new OnEventLoops(eventLoops)).build();
        return new ClusterSession(client, namespace, config.getMasterUrl(), Optional.of(eventLoops));
    }

    /**
     * fabric8's Vert.x HTTP client on event loops this session owns, so that {@link #close} can wait
     * for them to stop. Left running, they sit in epoll_wait, native code, and a JVM exiting waits
     * 300 ms for such threads: a third of a {@code get}. One loop is plenty for one person's requests.
     */
    private static Vertx eventLoops() {
        // As fabric8 makes its own: names resolved by the JDK (/etc/hosts, search domains), no file cache.
        if (System.getProperty("vertx.disableDnsResolver") == null) {
            System.setProperty("vertx.disableDnsResolver", "true");
        }
        return Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setUseDaemonThread(true)
                .setFileSystemOptions(new FileSystemOptions().setFileCachingEnabled(false).setClassPathResolvingEnabled(false)));
    }

    /** fabric8's Vert.x client on the given event loops (Quarkus removes fabric8's own factory from native executables). */
    private record OnEventLoops(Vertx eventLoops) implements HttpClient.Factory {
        @Override
        public HttpClient.Builder newBuilder() {
            return new VertxHttpClientBuilder<>(this, eventLoops);
        }
    }

    /** The job the user named: its kind if given, else whichever kind has a job of that name. */
    JobView job(JobReference reference) throws Failure {
        List<JobView> found = new ArrayList<>();
        for (JobKind kind : JobKind.values()) {
            if (reference.kind().isPresent() && reference.kind().get() != kind) {
                continue;
            }
            find(kind, reference.name()).ifPresent(found::add);
        }
        if (found.isEmpty()) {
            throw new Failure("error: no " + reference.kind().map(k -> k.kind).orElse("PyTorchTrainingJob or PyTorchJob") + " named "
                    + reference.name() + " in namespace " + namespace);
        }
        if (found.size() > 1) {
            throw new Failure("error: both a PyTorchTrainingJob and a PyTorchJob are named " + reference.name() + " in namespace "
                    + namespace + ": say which, pj/" + reference.name() + " or pytorchjob/" + reference.name());
        }
        return found.get(0);
    }

    /** The job again (it changes while a command follows it); empty once it is deleted. */
    Optional<JobView> find(JobKind kind, String name) throws Failure {
        try {
            return kind == JobKind.T9K
                    ? Optional.ofNullable(ask("get", "pytorchtrainingjobs.batch.tensorstack.dev",
                            () -> client.resources(PyTorchTrainingJob.class).inNamespace(namespace).withName(name).get())).map(JobView::of)
                    : Optional.ofNullable(ask("get", "pytorchjobs.kubeflow.org",
                            () -> client.resources(PyTorchJob.class).inNamespace(namespace).withName(name).get())).map(JobView::of);
        } catch (KindNotInstalled e) {
            return Optional.empty();
        }
    }

    /** Every job of both kinds in the namespace, by name. */
    List<JobView> jobs() throws Failure {
        List<JobView> jobs = new ArrayList<>();
        try {
            ask("list", "pytorchtrainingjobs.batch.tensorstack.dev", () -> client.resources(PyTorchTrainingJob.class).inNamespace(namespace)
                    .list().getItems()).forEach(j -> jobs.add(JobView.of(j)));
        } catch (KindNotInstalled e) {
            // the T9k CRD is not installed: no jobs of that kind
        }
        try {
            ask("list", "pytorchjobs.kubeflow.org", () -> client.resources(PyTorchJob.class).inNamespace(namespace).list().getItems())
                    .forEach(j -> jobs.add(JobView.of(j)));
        } catch (KindNotInstalled e) {
            // Kubeflow's CRD is not installed
        }
        jobs.sort(Comparator.comparing(JobView::name).thenComparing(j -> j.kind().kind));
        return jobs;
    }

    List<Pod> pods(JobView job) throws Failure {
        return asked("list", "pods", () -> client.pods().inNamespace(namespace).withLabels(job.podSelector()).list().getItems());
    }

    /** The job's own events (the operator's: queued, pods created, restarts, outcome), oldest first. */
    List<Event> events(JobView job) throws Failure {
        List<Event> events = asked("list", "events", () -> client.v1().events().inNamespace(namespace)
                .withField("involvedObject.name", job.name()).withField("involvedObject.kind", job.kind().kind).list().getItems());
        events.sort(Comparator.comparing(JobHistory::eventTime, Comparator.nullsFirst(Comparator.naturalOrder())));
        return events;
    }

    /**
     * Reads, from text, one of each resource the verbs read (jobs of both kinds, pods, events), so
     * that the classes the cluster's answers need are loaded; nothing is asked of the cluster.
     */
    void readOnceWhatEveryVerbReads() {
        KubernetesSerialization serialization = client.getKubernetesSerialization();
        serialization.unmarshal("{\"apiVersion\": \"v1\", \"kind\": \"PodList\", \"items\": [{}]}", PodList.class);
        serialization.unmarshal("{\"apiVersion\": \"v1\", \"kind\": \"EventList\", \"items\": [{}]}", EventList.class);
        serialization.unmarshal("{}", PyTorchTrainingJob.class);
        serialization.unmarshal("{}", PyTorchJob.class);
    }

    /** One container's log, as {@code kubectl logs} reads it; a refusal while it is read is {@link #refusal}. */
    ContainerResource log(Pod pod, String container) {
        return client.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).inContainer(container);
    }

    /**
     * A request already under way (a log being followed) that the cluster refused (401, 403), as one line;
     * empty for anything else: the pod went away, or the stream was cut, and the next look says what came instead.
     */
    Optional<Failure> refusal(String verb, String resource, KubernetesClientException e) {
        return e.getCode() == 401 || e.getCode() == 403 ? Optional.of(failure(verb, resource, e)) : Optional.empty();
    }

    /** A question whose resource always exists (pods, events, logs). */
    <T> T asked(String verb, String resource, Supplier<T> question) throws Failure {
        try {
            return ask(verb, resource, question);
        } catch (KindNotInstalled e) {
            throw new Failure("error: the cluster has no " + resource);
        }
    }

    /** Thrown when a job kind's CRD is not installed (404 on the whole collection). */
    static final class KindNotInstalled extends Exception {
    }

    /** A read on a kept-alive connection the server closed gets a new one; a cluster that refuses connections is told at once. */
    static final int ATTEMPTS_ON_A_CLOSED_CONNECTION = 3;

    /**
     * Every question is a read, so one whose connection was closed under it is asked again on a new
     * connection, as kubectl does: the HTTP client may hand out a kept-alive connection the API server
     * has just closed, and a follow that asks every second meets that sooner or later.
     */
    <T> T ask(String verb, String resource, Supplier<T> question) throws Failure, KindNotInstalled {
        for (int attempt = 1;; attempt++) {
            try {
                return question.get();
            } catch (KubernetesClientException e) {
                if (e.getCode() == 404) {
                    throw new KindNotInstalled();
                }
                if (attempt < ATTEMPTS_ON_A_CLOSED_CONNECTION && ClosedConnection.underTheCall(e)) {
                    continue;
                }
                throw failure(verb, resource, e);
            }
        }
    }

    /** The one line a refused or failed request becomes. */
    Failure failure(String verb, String resource, KubernetesClientException e) {
        return switch (e.getCode()) {
            case 403 -> new Failure("error: not allowed to " + verb + " " + resource + " in namespace " + namespace
                    + " (RBAC: your user needs the verb \"" + verb + "\" on \"" + resource + "\")");
            case 401 -> new Failure("error: the cluster at " + server + " refused your credentials (401): log in again or check your kubeconfig's user");
            default -> answered(e) ? new Failure("error: " + verb + " " + resource + " in namespace " + namespace + ": " + e.getMessage())
                    : new Failure("error: cannot reach the cluster at " + server + " (" + rootMessage(e)
                            + "): check KUBECONFIG, --context and that the cluster is up");
        };
    }

    /** Whether the API server answered at all: no status and an I/O failure underneath mean the connection failed. */
    private static boolean answered(KubernetesClientException e) {
        if (e.getStatus() != null && e.getCode() > 0) {
            return true;
        }
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (cause instanceof IOException) {
                return false;
            }
        }
        return e.getCode() > 0;
    }

    private static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName() + (root.getMessage() == null ? "" : ": " + root.getMessage());
    }

    @Override
    public void close() {
        client.close();
        eventLoops.ifPresent(loops -> {
            try {
                loops.close().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
            } catch (ExecutionException | TimeoutException e) {
                // the command's work is done; the JVM exits all the same
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }
}
