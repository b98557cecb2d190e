package dev.torchjob.operator.cluster.kwok;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.OnTheSharedOperator;
import dev.torchjob.operator.kubeflow.KubeflowPlanner;
import dev.torchjob.operator.reconciler.OperatorHarness;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;

/**
 * A Kubeflow user's day on a real API server with kubectl: the seed's manifest created unchanged,
 * the seed's own kubectl commands, the State column, kubectl wait and kubectl scale.
 */
class KubeflowIT extends OnTheSharedOperator {

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
        assertEquals("training.kubeflow.org/job-name=elastic-example,training.kubeflow.org/operator-name=pytorchjob-controller,"
                + "training.kubeflow.org/replica-type=worker", kubectl.run("get", "pytorchjob", "elastic-example", "-n", ns,
                        "--subresource=scale", "-o", "jsonpath={.status.selector}").orFail().out().strip());
        admin.namespaces().withName(ns).delete();
    }

    /**
     * docs/kubeflow.md's migration: a PyTorchJob another controller started (pods, Services and status
     * written under its field manager, as Kubeflow's training-operator does) is taken over: its pods are
     * kept, and its status says only what this operator computes (no field the other one wrote stays).
     */
    @Test
    void aJobStartedByAnotherControllerIsTakenOverWithItsPodsKeptAndItsStatusMadeOurs() throws Exception {
        install.stopSharedOperator();
        OperatorHarness cluster = install.harness("kubeflow-takeover");
        String ns = cluster.namespace;
        PyTorchJob job = cluster.submitPyTorchJob("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: taken}
                spec:
                  pytorchReplicaSpecs:
                    Master: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                    Worker: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """);
        // The other controller: Kubeflow's pods and Services (the same names and labels), and its status.
        var started = KubeflowPlanner.plan(job, List.of(), java.util.Set.of(), java.time.Instant.now(), java.util.Map.of(),
                dev.torchjob.operator.engine.RestartBackoff.NONE);
        started.podsToCreate().forEach(p -> admin.pods().inNamespace(ns).resource(p).create());
        started.servicesToCreate().forEach(svc -> admin.services().inNamespace(ns).resource(svc).create());
        cluster.runAll();
        try (KubernetesClient kubeflow = new KubernetesClientBuilder().withConfig(new ConfigBuilder(admin.getConfiguration())
                .withUserAgent("training-operator/v1.9.4").build()).build()) {
            PyTorchJob current = kubeflow.resources(PyTorchJob.class).inNamespace(ns).withName("taken").get();
            current.setStatus(admin.getKubernetesSerialization().unmarshal("""
                    conditions:
                    - {type: Created, status: "True", reason: PyTorchJobCreated, message: "PyTorchJob taken is created."}
                    - {type: Running, status: "True", reason: PyTorchJobRunning, message: "PyTorchJob taken is running."}
                    replicaStatuses:
                      Master: {active: 1, selector: "training.kubeflow.org/job-name=taken"}
                      Worker: {active: 1, selector: "training.kubeflow.org/job-name=taken"}
                    lastReconcileTime: "2026-01-01T00:00:00Z"
                    """, PyTorchJobStatus.class));
            kubeflow.resources(PyTorchJob.class).inNamespace(ns).resource(current).updateStatus();
        }
        java.util.Set<String> uids = new java.util.HashSet<>(cluster.pods().stream().map(p -> p.getMetadata().getUid()).toList());

        install.operator(); // ours starts
        cluster.kubelet.exit("taken-master-0", 0);
        cluster.awaitState("taken", "Succeeded");
        assertEquals(uids, new java.util.HashSet<>(cluster.pods().stream().map(p -> p.getMetadata().getUid()).toList()),
                "the pods the other controller made are kept");
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            PyTorchJobStatus status = cluster.pytorchJob("taken").getStatus();
            return status.replicaStatuses.get("Master").active == null && Integer.valueOf(1).equals(status.replicaStatuses.get("Master").succeeded);
        });
        PyTorchJobStatus status = cluster.pytorchJob("taken").getStatus();
        assertEquals(null, status.lastReconcileTime, "no field the other controller wrote stays");
        assertTrue(status.replicaStatuses.get("Master").selector.contains("operator-name=pytorchjob-controller"), "our selector");
        admin.namespaces().withName(ns).delete();
    }
}
