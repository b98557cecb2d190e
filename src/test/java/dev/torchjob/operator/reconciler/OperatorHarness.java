package dev.torchjob.operator.reconciler;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.JobPhase;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/** What integration tests do to and read from the mock API server, each in its own namespace. */
final class OperatorHarness {
    static final Duration WAIT = Duration.ofSeconds(30);

    final KubernetesClient client;
    final String namespace;
    final Kubelet kubelet;

    OperatorHarness(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
        this.kubelet = new Kubelet(client, namespace);
    }

    PyTorchTrainingJob submit(String yaml) {
        PyTorchTrainingJob job = client.getKubernetesSerialization().unmarshal(yaml, PyTorchTrainingJob.class);
        return client.resources(PyTorchTrainingJob.class).inNamespace(namespace).resource(job).create();
    }

    PyTorchTrainingJob job(String name) {
        return client.resources(PyTorchTrainingJob.class).inNamespace(namespace).withName(name).get();
    }

    Pod pod(String name) {
        return client.pods().inNamespace(namespace).withName(name).get();
    }

    List<Pod> pods() {
        return client.pods().inNamespace(namespace).list().getItems();
    }

    List<Event> events() {
        return client.v1().events().inNamespace(namespace).list().getItems();
    }

    JobCondition condition(String job, String type) {
        return job(job).getStatus().conditions.stream().filter(c -> c.type.equals(type)).findFirst().orElse(null);
    }

    void awaitPods(int count) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> pods().size() == count);
    }

    void awaitPodNames(String... names) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100))
                .until(() -> pods().stream().map(p -> p.getMetadata().getName()).sorted().toList().equals(List.of(names)));
    }

    /** Waits for the pod to be replaced by a pod with another UID. */
    Pod awaitNewPod(String name, String oldUid) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
            Pod pod = pod(name);
            return pod != null && !pod.getMetadata().getUid().equals(oldUid);
        });
        return pod(name);
    }

    PyTorchTrainingJob awaitPhase(String name, JobPhase phase) {
        return awaitJob(name, j -> j.getStatus() != null && j.getStatus().phase == phase);
    }

    PyTorchTrainingJob awaitJob(String name, Predicate<PyTorchTrainingJob> condition) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
            PyTorchTrainingJob job = job(name);
            return job != null && condition.test(job);
        });
        return job(name);
    }

    void awaitEvent(String reason, String messagePart) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> events().stream()
                .anyMatch(e -> reason.equals(e.getReason()) && e.getMessage().contains(messagePart)));
    }

    void runAll() {
        pods().forEach(p -> kubelet.run(p.getMetadata().getName()));
    }
}
