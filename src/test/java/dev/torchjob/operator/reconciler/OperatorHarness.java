package dev.torchjob.operator.reconciler;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.awaitility.core.ConditionTimeoutException;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * What integration tests do to and read from an API server, each in its own namespace: the mock
 * (the test writes pod status) or a real control plane (kwok runs the pods).
 */
public final class OperatorHarness {
    static final Duration WAIT = Duration.ofSeconds(30);

    public final KubernetesClient client;
    public final String namespace;
    public final Kubelet kubelet;

    OperatorHarness(KubernetesClient client, String namespace) {
        this(client, namespace, new StatusWritingKubelet(client, namespace));
    }

    public OperatorHarness(KubernetesClient client, String namespace, Kubelet kubelet) {
        this.client = client;
        this.namespace = namespace;
        this.kubelet = kubelet;
    }

    /** A master and two workers, both groups under one restart policy, with the given runPolicy (YAML flow map). */
    public static String job(String name, String policy, String runPolicy) {
        return """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %s}
                spec:
                  runPolicy: %s
                  replicaSpecs:
                  - type: master
                    restartPolicy: %s
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                  - type: worker
                    restartPolicy: %s
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                """.formatted(name, runPolicy, policy, policy);
    }

    /** Submits {@link #job} as "j" and returns once its three pods run and the job is Running. */
    public OperatorHarness runJob(String policy, String runPolicy) {
        submit(job("j", policy, runPolicy));
        awaitPodNames("j-master-0", "j-worker-0", "j-worker-1");
        runAll();
        awaitPhase("j", JobPhase.Running);
        return this;
    }

    /** An elastic torchrun job "el" with one replica group "node". */
    public static String elasticJob(int minReplicas, int maxReplicas, int expectedReplicas) {
        return """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: el}
                spec:
                  torchrunConfig: {enabled: true}
                  elastic: {enabled: true, minReplicas: %d, maxReplicas: %d, expectedReplicas: %d}
                  replicaSpecs:
                  - type: node
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]}}
                """.formatted(minReplicas, maxReplicas, expectedReplicas);
    }

    public PyTorchTrainingJob submit(String yaml) {
        PyTorchTrainingJob job = client.getKubernetesSerialization().unmarshal(yaml, PyTorchTrainingJob.class);
        return client.resources(PyTorchTrainingJob.class).inNamespace(namespace).resource(job).create();
    }

    public PyTorchTrainingJob job(String name) {
        return client.resources(PyTorchTrainingJob.class).inNamespace(namespace).withName(name).get();
    }

    public Pod pod(String name) {
        return client.pods().inNamespace(namespace).withName(name).get();
    }

    /**
     * The Eviction API stops the pod (a drain, a preemption): it marks it DisruptionTarget, then deletes it. The mock
     * API server removes it at once, as a kubelet does a pod whose process ends on SIGTERM: what the operator's cache
     * last held of it is all that says who stopped it.
     */
    public void evictThroughTheApi(String podName) {
        client.pods().inNamespace(namespace).withName(podName).editStatus(pod -> new io.fabric8.kubernetes.api.model.PodBuilder(pod)
                .editStatus().addNewCondition().withType("DisruptionTarget").withStatus("True").withReason("EvictionByEvictionAPI")
                .withMessage("Eviction API: evicting").withLastTransitionTime(java.time.Instant.now().toString()).endCondition()
                .endStatus().build());
        client.pods().inNamespace(namespace).withName(podName).delete();
    }

    public List<Pod> pods() {
        return client.pods().inNamespace(namespace).list().getItems();
    }

    public List<Event> events() {
        return client.v1().events().inNamespace(namespace).list().getItems();
    }

    public JobCondition condition(String job, String type) {
        return job(job).getStatus().conditions.stream().filter(c -> c.type.equals(type)).findFirst().orElse(null);
    }

    public void awaitPods(int count) {
        awaitOr(count + " pods", this::podsSeen, () -> pods().size() == count);
    }

    public void awaitPodNames(String... names) {
        awaitOr("pods " + List.of(names), this::podsSeen,
                () -> pods().stream().map(p -> p.getMetadata().getName()).sorted().toList().equals(List.of(names)));
    }

    /** Waits for the pod to be replaced by a pod with another UID. */
    public Pod awaitNewPod(String name, String oldUid) {
        awaitOr("pod " + name + " replaced", this::podsSeen, () -> {
            Pod pod = pod(name);
            return pod != null && !pod.getMetadata().getUid().equals(oldUid);
        });
        return pod(name);
    }

    public PyTorchTrainingJob awaitPhase(String name, JobPhase phase) {
        return awaitJob(name, "phase " + phase, j -> j.getStatus() != null && j.getStatus().phase == phase);
    }

    public PyTorchTrainingJob awaitJob(String name, Predicate<PyTorchTrainingJob> condition) {
        return awaitJob(name, "as awaited", condition);
    }

    private PyTorchTrainingJob awaitJob(String name, String awaited, Predicate<PyTorchTrainingJob> condition) {
        awaitOr("job " + name + " " + awaited, () -> jobSeen(name), () -> {
            PyTorchTrainingJob job = job(name);
            return job != null && condition.test(job);
        });
        return job(name);
    }

    public void awaitEvent(String reason, String messagePart) {
        awaitOr("event " + reason + " saying \"" + messagePart + "\"", this::namespaceSeen, () -> events().stream()
                .anyMatch(e -> reason.equals(e.getReason()) && e.getMessage().contains(messagePart)));
    }

    public void runAll() {
        pods().forEach(p -> kubelet.run(p.getMetadata().getName()));
    }

    // ---- kubeflow.org/v1 PyTorchJob --------------------------------------------------------------

    public PyTorchJob submitPyTorchJob(String yaml) {
        PyTorchJob job = client.getKubernetesSerialization().unmarshal(yaml, PyTorchJob.class);
        return client.resources(PyTorchJob.class).inNamespace(namespace).resource(job).create();
    }

    public PyTorchJob pytorchJob(String name) {
        return client.resources(PyTorchJob.class).inNamespace(namespace).withName(name).get();
    }

    public PyTorchJob awaitPyTorchJob(String name, Predicate<PyTorchJob> condition) {
        awaitOr("PyTorchJob " + name + " as awaited", () -> pytorchJobSeen(name), () -> {
            PyTorchJob job = pytorchJob(name);
            return job != null && job.getStatus() != null && condition.test(job);
        });
        return pytorchJob(name);
    }

    /** Waits until the job's last condition (the State column) is this type. */
    public PyTorchJob awaitState(String name, String state) {
        return awaitPyTorchJob(name, j -> !j.getStatus().conditions.isEmpty()
                && state.equals(j.getStatus().conditions.get(j.getStatus().conditions.size() - 1).type));
    }

    /**
     * Waits up to {@link #WAIT} for {@code condition}; past it, fails with what was awaited and what was last
     * seen, on one line: the summary of a CI run shows that line, and a flaky wait is understood from it.
     */
    private void awaitOr(String awaited, Supplier<String> lastSeen, Callable<Boolean> condition) {
        try {
            await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(condition);
        } catch (ConditionTimeoutException e) {
            String seen;
            try {
                seen = lastSeen.get();
            } catch (RuntimeException unread) {
                seen = "(could not be read: " + unread.getMessage() + ")";
            }
            throw new AssertionError(awaited + ", not within " + WAIT.toSeconds() + " s; last seen: " + seen, e);
        }
    }

    private String jobSeen(String name) {
        PyTorchTrainingJob job = job(name);
        if (job == null) {
            return "no job " + name + "; " + podsSeen();
        }
        String conditions = job.getStatus() == null ? "no status" : "phase " + job.getStatus().phase + ", "
                + job.getStatus().conditions.stream().filter(c -> "True".equals(c.status))
                        .map(c -> conditionSeen(c.type, c.reason, c.message)).toList();
        return conditions + "; " + podsSeen() + "; " + eventsSeen();
    }

    private String pytorchJobSeen(String name) {
        PyTorchJob job = pytorchJob(name);
        if (job == null) {
            return "no PyTorchJob " + name + "; " + podsSeen();
        }
        String conditions = job.getStatus() == null ? "no status" : job.getStatus().conditions.stream()
                .filter(c -> "True".equals(c.status)).map(c -> conditionSeen(c.type, c.reason, c.message)).toList().toString();
        return conditions + "; " + podsSeen() + "; " + eventsSeen();
    }

    private static String conditionSeen(String type, String reason, String message) {
        String said = message == null ? "" : message.lines().findFirst().orElse("");
        return type + "/" + reason + (said.isEmpty() ? "" : " \"" + (said.length() > 160 ? said.substring(0, 160) + "…" : said) + "\"");
    }

    private String podsSeen() {
        return "pods " + pods().stream().map(p -> p.getMetadata().getName() + " " + (p.getStatus() == null ? null : p.getStatus().getPhase()))
                .sorted().toList();
    }

    /** Every job of the namespace (either kind) as {@link #jobSeen} says one, its pods, and its last events of any type. */
    private String namespaceSeen() {
        List<String> jobs = new java.util.ArrayList<>();
        client.resources(PyTorchTrainingJob.class).inNamespace(namespace).list().getItems().forEach(j -> jobs.add(j.getMetadata().getName()
                + ": " + (j.getStatus() == null ? "no status" : "phase " + j.getStatus().phase + " " + j.getStatus().conditions.stream()
                        .filter(c -> "True".equals(c.status)).map(c -> conditionSeen(c.type, c.reason, c.message)).toList())));
        client.resources(PyTorchJob.class).inNamespace(namespace).list().getItems().forEach(j -> jobs.add(j.getMetadata().getName()
                + ": " + (j.getStatus() == null ? "no status" : j.getStatus().conditions.stream()
                        .filter(c -> "True".equals(c.status)).map(c -> conditionSeen(c.type, c.reason, c.message)).toList())));
        List<String> said = events().stream().sorted(java.util.Comparator.comparing(e -> String.valueOf(e.getLastTimestamp()))).map(e -> e.getType() + " " + e.getReason() + " x" + (e.getCount() == null ? 1 : e.getCount()))
                .toList();
        return "jobs " + jobs + "; " + podsSeen() + "; events " + (said.size() > 8 ? said.subList(said.size() - 8, said.size()) : said);
    }

    /** The namespace's last Warning events: what the operator said went wrong. */
    private String eventsSeen() {
        List<String> warnings = events().stream().filter(e -> "Warning".equals(e.getType()))
                .map(e -> e.getReason() + " x" + (e.getCount() == null ? 1 : e.getCount())).toList();
        return "warnings " + (warnings.size() > 8 ? warnings.subList(warnings.size() - 8, warnings.size()) : warnings);
    }

    public List<String> serviceNames() {
        return client.services().inNamespace(namespace).list().getItems().stream().map(s -> s.getMetadata().getName()).sorted().toList();
    }
}
