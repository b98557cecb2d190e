package dev.torchjob.operator.cluster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.reconciler.OperatorHarness;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * A Kubeflow user's day on a real API server with kubectl: the seed's manifest created unchanged,
 * the seed's own kubectl commands, the State column, kubectl wait and kubectl scale.
 */
class KubeflowIT {
    static OperatorInstall install;
    static Kubectl kubectl;
    static KubernetesClient admin;

    @BeforeAll
    static void cluster() {
        install = OperatorInstall.get();
        install.operator();
        kubectl = install.cluster.kubectl();
        admin = install.cluster.admin();
    }

    @Test
    void theSeedManifestRunsUnchangedAndTheGuidesKubectlCommandsWork() {
        OperatorHarness cluster = install.harness("kubeflow");
        String ns = cluster.namespace;
        String job = "pytorch-dist-mnist-gloo-demo";
        Kubectl.Result created = kubectl.run("create", "-n", ns, "-f", "kubernetes/examples/kubeflow/02-mnist-gloo-demo.yaml").orFail();
        assertEquals("pytorchjob.kubeflow.org/" + job + " created", created.out().strip());
        cluster.awaitPodNames(job + "-master-0", job + "-worker-0", job + "-worker-1", job + "-worker-2");
        cluster.awaitState(job, "Running");

        // The seeds' own commands.
        List<String> pods = kubectl.run("get", "pods", "-n", ns, "-l", "job-name=" + job, "-o", "name").orFail().out().lines().sorted().toList();
        assertEquals(List.of("pod/" + job + "-master-0", "pod/" + job + "-worker-0", "pod/" + job + "-worker-1", "pod/" + job + "-worker-2"), pods);
        String table = kubectl.run("get", "pytorchjob", "-n", ns).orFail().out();
        assertTrue(table.lines().findFirst().orElse("").matches("NAME\\s+STATE\\s+AGE"), table);
        assertTrue(table.contains(job) && table.contains("Running"), table);
        String wide = kubectl.run("get", "ptj", "-n", ns, "-o", "wide").orFail().out();
        assertTrue(wide.lines().findFirst().orElse("").matches("NAME\\s+STATE\\s+RESTARTS\\s+AGE\\s+STARTED\\s+COMPLETED\\s+QUEUE"), wide);
        assertEquals(4, admin.services().inNamespace(ns).list().getItems().size(), "one Service per replica");

        cluster.kubelet.exit(job + "-master-0", 0);
        kubectl.run("wait", "-n", ns, "--for=condition=Succeeded", "pytorchjob/" + job, "--timeout=60s").orFail();
        assertTrue(kubectl.run("get", "pytorchjob", job, "-n", ns).orFail().out().contains("Succeeded"));
        admin.namespaces().withName(ns).delete();
    }

    @Test
    void kubectlScaleChangesTheNumberOfWorkersThroughTheScaleSubresource() {
        OperatorHarness cluster = install.harness("kubeflow-scale");
        String ns = cluster.namespace;
        kubectl.run("create", "-n", ns, "-f", "kubernetes/examples/kubeflow/05-elastic.yaml").orFail();
        cluster.awaitPodNames("elastic-example-worker-0", "elastic-example-worker-1");
        await().atMost(Duration.ofSeconds(30)).until(() -> "2".equals(kubectl.run("get", "pytorchjob", "elastic-example", "-n", ns,
                "--subresource=scale", "-o", "jsonpath={.status.replicas}").out().strip()));
        assertEquals("PyTorchJob/elastic-example", kubectl.run("get", "hpa", "elastic-example", "-n", ns, "-o",
                "jsonpath={.spec.scaleTargetRef.kind}/{.spec.scaleTargetRef.name}").orFail().out().strip(),
                "elasticPolicy.metrics: an autoscaler scales the workers through the scale subresource");
        kubectl.run("scale", "pytorchjob/elastic-example", "-n", ns, "--replicas=3").orFail();
        cluster.awaitPodNames("elastic-example-worker-0", "elastic-example-worker-1", "elastic-example-worker-2");
        assertEquals("training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/job-name=elastic-example,"
                + "training.kubeflow.org/replica-type=worker", kubectl.run("get", "pytorchjob", "elastic-example", "-n", ns,
                        "--subresource=scale", "-o", "jsonpath={.status.selector}").orFail().out().strip());
        admin.namespaces().withName(ns).delete();
    }
}
