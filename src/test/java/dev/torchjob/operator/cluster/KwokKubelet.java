package dev.torchjob.operator.cluster;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Map;

import dev.torchjob.operator.reconciler.Kubelet;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The real tier's kubelet: kwok starts every pod the scheduler binds to its nodes; a test ends a
 * pod by annotating it, and kwok's Stage (src/test/resources/control-plane/kwok-stages.yaml) writes
 * the terminated status.
 */
public final class KwokKubelet implements Kubelet {
    static final String EXIT_CODE = "test.torchjob.dev/exit-code";
    static final String EXIT_REASON = "test.torchjob.dev/exit-reason";
    static final String EXIT_MESSAGE = "test.torchjob.dev/exit-message";
    static final String EVICT = "test.torchjob.dev/evict";
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final KubernetesClient client;
    private final String namespace;

    public KwokKubelet(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
    }

    /** kwok runs pods by itself: wait until it has. */
    @Override
    public void run(String podName) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
            Pod pod = client.pods().inNamespace(namespace).withName(podName).get();
            return pod != null && pod.getStatus() != null && "Running".equals(pod.getStatus().getPhase());
        });
    }

    @Override
    public void exit(String podName, int exitCode) {
        annotate(podName, Map.of(EXIT_CODE, String.valueOf(exitCode)));
    }

    @Override
    public void fail(String podName, int exitCode, String message) {
        annotate(podName, Map.of(EXIT_CODE, String.valueOf(exitCode), EXIT_MESSAGE, message));
    }

    @Override
    public void oomKill(String podName) {
        annotate(podName, Map.of(EXIT_CODE, "137", EXIT_REASON, "OOMKilled"));
    }

    @Override
    public void evict(String podName) {
        annotate(podName, Map.of(EVICT, "true"));
    }

    private void annotate(String podName, Map<String, String> annotations) {
        run(podName);
        client.pods().inNamespace(namespace).withName(podName).edit(pod -> {
            if (pod.getMetadata().getAnnotations() == null) {
                pod.getMetadata().setAnnotations(new java.util.HashMap<>());
            }
            pod.getMetadata().getAnnotations().putAll(annotations);
            return pod;
        });
    }
}
