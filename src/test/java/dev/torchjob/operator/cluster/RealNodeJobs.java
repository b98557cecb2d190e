package dev.torchjob.operator.cluster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * Jobs on the real node, as the tests that run them write and read them: T9k replica groups on the
 * examples image, submitted with kubectl, awaited to their outcome, their logs and events read.
 */
public final class RealNodeJobs {
    public static final Duration TRAINING = Duration.ofMinutes(4);

    private RealNodeJobs() {
    }

    private static Kubectl kubectl() {
        return OperatorInstall.get().cluster.kubectl();
    }

    private static KubernetesClient admin() {
        return OperatorInstall.get().cluster.admin();
    }

    /**
     * Deletes the namespaces of the pods left on the real node (a failed job's master trains on, a
     * job's pods stay after it ended: cleanUpPolicy None) and waits until they are gone, so that the
     * next test finds the node's two CPUs free. The operator's own namespace is left alone.
     */
    public static void freeTheNode() {
        KubernetesClient admin = admin();
        java.util.Set<String> namespaces = podsOnTheNode(admin).stream().map(p -> p.getMetadata().getNamespace())
                .filter(ns -> !ns.equals(OperatorInstall.OPERATOR_NAMESPACE)).collect(java.util.stream.Collectors.toSet());
        namespaces.forEach(ns -> admin.namespaces().withName(ns).delete());
        // Then each pod again with a grace of 1 s, not its 30 (a terminating namespace takes no new pod, and a
        // grace may be shortened): the kubelet still stops each container (TERM, then KILL) and confirms, so no
        // process is left on the node, but a debug pod sleeping through TERM costs no 30 s.
        namespaces.forEach(ns -> admin.pods().inNamespace(ns).withGracePeriod(1).delete());
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500))
                .until(() -> podsOnTheNode(admin).stream().noneMatch(p -> namespaces.contains(p.getMetadata().getNamespace())));
    }

    private static List<io.fabric8.kubernetes.api.model.Pod> podsOnTheNode(KubernetesClient admin) {
        return admin.pods().inAnyNamespace().withField("spec.nodeName", RealNode.NAME).list().getItems();
    }

    /** The examples' image (kubernetes/examples/local), loaded into the real node's containerd: no registry serves images here. */
    public static final String EXAMPLES_IMAGE = "torchjob-examples:0.1.0";

    /** A replica group of one replica that trains train.py for that many epochs. */
    public static String training(String type, String policy, int epochs) {
        return replica(type, policy, """
                command: [python, train.py]
                env: [{name: EPOCHS, value: "%d"}]
                resources: {requests: {cpu: 250m}}
                """.formatted(epochs), "");
    }

    /** A T9k replica group of one replica on the examples image: {@code container} is the rest of its container, {@code pod} of its pod spec. */
    public static String replica(String type, String policy, String container, String pod) {
        return """
                - type: %s
                  replicas: 1
                  restartPolicy: %s
                  template:
                    spec:
                      containers:
                      - name: pytorch
                        image: torchjob-examples:0.1.0
                %s%s""".formatted(type, policy, container.indent(8), pod.indent(6));
    }

    /**
     * A worker group of one replica (ExitCode) whose training exits with {@code exitCode} the first time,
     * then trains: its marker that it failed once is kept in a folder on the node's disk, named {@code marker}.
     */
    public static String workerFailingOnce(int exitCode, Path marker) {
        return replica("worker", "ExitCode", """
                command: [python, /workspace/train.py]
                workingDir: /marker
                env: [{name: EPOCHS, value: "3"}, {name: FAIL_ONCE_EXIT_CODE, value: "%d"}, {name: FAIL_RANKS, value: "1"}]
                resources: {requests: {cpu: 250m}}
                volumeMounts: [{name: marker, mountPath: /marker}]
                """.formatted(exitCode), markerVolume(marker));
    }

    /** A worker group of one replica (ExitCode) that exits with {@code exitCode} at once, every time. */
    public static String workerExiting(int exitCode) {
        return replica("worker", "ExitCode", """
                command: [python, train.py]
                env: [{name: FAIL_ONCE_EXIT_CODE, value: "%d"}, {name: FAIL_RANKS, value: "1"}]
                resources: {requests: {cpu: 250m}}
                """.formatted(exitCode), "");
    }

    /** A folder on the node's disk that outlives the pods (a replica's marker that it already failed once). */
    public static String markerVolume(Path marker) {
        return "volumes: [{name: marker, hostPath: {path: " + marker + ", type: DirectoryOrCreate}}]\n";
    }

    public static void submitT9k(String ns, String name, String runPolicy, String replicaSpecs) {
        kubectl().runWithInput(t9kJob(name, runPolicy, replicaSpecs), "apply", "-n", ns, "-f", "-").orFail();
    }

    /** A PyTorchTrainingJob: {@code runPolicy} the inside of its flow map, {@code replicaSpecs} its groups ({@link #replica}). */
    public static String t9kJob(String name, String runPolicy, String replicaSpecs) {
        return """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %s}
                spec:
                  runPolicy: {%s}
                  replicaSpecs:
                %s""".formatted(name, runPolicy, replicaSpecs.indent(2));
    }

    /** Kueue's ResourceFlavor of the real node (its node label), applied; returns its name. */
    public static String realNodeFlavor() {
        kubectl().runWithInput("""
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: ResourceFlavor
                metadata: {name: real-node}
                spec: {nodeLabels: {test.torchjob.dev/real-node: "true"}}
                """, "apply", "--server-side", "-f", "-").orFail();
        return "real-node";
    }

    public static PyTorchTrainingJob t9k(String ns, String name) {
        return admin().resources(PyTorchTrainingJob.class).inNamespace(ns).withName(name).get();
    }

    public static PyTorchTrainingJob awaitT9k(String ns, String name, JobPhase phase) {
        return awaitT9k(ns, name, phase, TRAINING);
    }

    /** As {@link #awaitT9k(String, String, JobPhase)}, within {@code within}. */
    public static PyTorchTrainingJob awaitT9k(String ns, String name, JobPhase phase, Duration within) {
        await().atMost(within).pollInterval(Duration.ofSeconds(1)).until(() -> {
            PyTorchTrainingJob job = t9k(ns, name);
            return job != null && job.getStatus() != null && job.getStatus().phase != null && job.getStatus().phase.isTerminal();
        });
        PyTorchTrainingJob job = t9k(ns, name);
        assertEquals(phase, job.getStatus().phase, () -> "conditions " + job.getStatus().conditions + "; pods "
                + kubectl().run("get", "pods", "-n", ns, "-o", "wide").out() + "; events " + events(ns, null));
        return job;
    }

    /** When the kubelet took the first line with {@code text}: `kubectl logs --timestamps`. */
    public static java.time.Instant loggedAt(String ns, String pod, String text) {
        String line = kubectl().run("logs", "--timestamps", "-n", ns, pod).orFail().out().lines().filter(l -> l.contains(text))
                .findFirst().orElseThrow(() -> new AssertionError(text + " not in the log of " + pod));
        return java.time.Instant.parse(line.substring(0, line.indexOf(' ')));
    }

    /**
     * Returns once the pod runs and has logged {@code line}. A container still being created has no log yet
     * (kubectl says so, exit 1): that is waited through, not taken for a failure.
     */
    public static void awaitLogged(String ns, String pod, String line) {
        await().atMost(TRAINING).pollInterval(Duration.ofMillis(200)).until(() -> {
            var p = admin().pods().inNamespace(ns).withName(pod).get();
            return p != null && p.getStatus() != null && "Running".equals(p.getStatus().getPhase())
                    && kubectl().run("logs", "-n", ns, pod).out().contains(line);
        });
    }

    public static String logs(String ns, String pod) {
        return kubectl().run("logs", "-n", ns, pod).orFail().out();
    }

    public static String finalAccuracy(String log) {
        Matcher m = Pattern.compile("final accuracy ([0-9.]+)").matcher(log);
        assertTrue(m.find(), "a final accuracy in " + log);
        return m.group(1);
    }

    /** When the first event of {@code reason} in the namespace was written (to the second, as the operator writes it). */
    public static java.time.Instant eventAt(String ns, String reason) {
        return admin().v1().events().inNamespace(ns).list().getItems().stream().filter(e -> reason.equals(e.getReason()))
                .map(e -> java.time.Instant.parse(e.getFirstTimestamp())).min(java.util.Comparator.naturalOrder())
                .orElseThrow(() -> new AssertionError("no " + reason + " event in " + ns));
    }

    /** The messages of the job events with this reason (all of them for null). */
    public static List<String> events(String ns, String reason) {
        return admin().v1().events().inNamespace(ns).list().getItems().stream()
                .filter(e -> reason == null || reason.equals(e.getReason()))
                .map(e -> reason == null ? e.getReason() + ": " + e.getMessage() : e.getMessage()).toList();
    }
}
