package dev.torchjob.operator.cluster.kwok;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.OnTheSharedOperator;
import dev.torchjob.operator.cluster.PrometheusOperatorCrds;
import dev.torchjob.operator.reconciler.OperatorHarness;

/** How an ML engineer works with a job: the real kubectl against the real API server and the operator. */
class KubectlIT extends OnTheSharedOperator {

    /**
     * Every install command the README and docs give (kubectl apply of this repository's kustomize
     * directories and manifests), run as written, after the install: kustomize builds each one and the
     * server takes it again. The examples and monitoring manifests are run where what they need exists
     * (KueueIT, the monitoring tests).
     */
    @Test
    void everyInstallCommandInTheReadmeAndDocsRunsAsWritten() throws java.io.IOException {
        everyInstallCommandRunsAsWritten(kubectl);
    }

    static void everyInstallCommandRunsAsWritten(Kubectl kubectl) throws java.io.IOException {
        List<String> commands = kubectlApplyLines(l -> l.contains(" kubernetes/base") || l.matches(".* -k kubernetes/\\S*.*"));
        assertTrue(commands.contains("kubectl apply -k kubernetes/kubeflow/") && commands.contains("kubectl apply -k kubernetes/"),
                "the README's and user guide's: " + commands);
        for (String command : commands) {
            Kubectl.Result result = kubectl.run(command.substring("kubectl ".length()).split("\\s+"));
            assertEquals(0, result.exitCode(), command + ": " + result.err());
        }
    }

    /**
     * The monitoring commands of the README and docs ({@code kubectl apply -f kubernetes/monitoring/…}),
     * run as written in a cluster that has the Prometheus Operator's CRDs: accepted without a warning
     * (kubectl's default strict field validation against the real CRDs' schemas).
     */
    @Test
    void theMonitoringCommandsOfTheDocsRunAsWritten() throws java.io.IOException {
        PrometheusOperatorCrds.install(install.cluster);
        List<String> commands = kubectlApplyLines(l -> l.contains("kubernetes/monitoring/"));
        assertTrue(commands.stream().anyMatch(c -> c.contains("servicemonitor.yaml"))
                && commands.stream().anyMatch(c -> c.contains("prometheusrule.yaml")), "the docs' monitoring commands: " + commands);
        for (String command : commands) {
            Kubectl.Result result = kubectl.run(command.substring("kubectl ".length()).split("\\s+"));
            assertEquals(0, result.exitCode(), command + ": " + result.err());
            assertEquals("", result.err().strip(), command + ": no warning");
        }
        var rule = admin.genericKubernetesResources("monitoring.coreos.com/v1", "PrometheusRule")
                .inNamespace("torchjob-system").withName("torchjob-operator").get();
        assertTrue(rule != null && rule.getAdditionalProperties().get("spec").toString().contains("TorchJobOperatorReconcileErrorsHigh"),
                "the alert rules are stored as written");
        assertTrue(admin.genericKubernetesResources("monitoring.coreos.com/v1", "ServiceMonitor")
                .inNamespace("torchjob-system").withName("torchjob-operator").get() != null);
    }

    /** The {@code kubectl apply} lines of the README, docs/ and kubernetes/monitoring/README.md that {@code wanted} picks, comments dropped. */
    static List<String> kubectlApplyLines(java.util.function.Predicate<String> wanted) throws java.io.IOException {
        List<java.nio.file.Path> texts = new java.util.ArrayList<>(List.of(java.nio.file.Path.of("README.md"),
                java.nio.file.Path.of("kubernetes/monitoring/README.md")));
        try (var docs = java.nio.file.Files.list(java.nio.file.Path.of("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).forEach(texts::add);
        }
        List<String> commands = new java.util.ArrayList<>();
        for (java.nio.file.Path text : texts) {
            java.nio.file.Files.readAllLines(text).stream().map(String::strip)
                    .filter(l -> l.startsWith("kubectl apply ") && wanted.test(l))
                    .map(l -> l.replaceAll("\\s+#.*$", "")).forEach(commands::add);
        }
        return commands;
    }

    /**
     * People as a platform team makes them, with nothing but Kubernetes' own roles bound in their namespace (the
     * install's users' roles aggregated into them): an editor submits a job of each kind with kubectl, scales one,
     * pauses the other, reads them with kubectl torchjob and deletes them; a viewer reads them, and is refused a
     * submit, a scale and a deletion in the API server's words.
     */
    @Test
    void aNamespacesEditorSubmitsAndManagesJobsAndAViewerOnlyReadsThem() {
        String ns = install.namespace("people");
        Kubectl editor = install.kubectlAs(ns, "editor", "ClusterRole/edit");
        Kubectl viewer = install.kubectlAs(ns, "viewer", "ClusterRole/view");
        String t9k = "kubernetes/examples/t9k/01-basic.yaml";
        String kubeflow = "kubernetes/examples/kubeflow/02-mnist-gloo-demo.yaml";

        Kubectl.Result refused = viewer.run("create", "-n", ns, "-f", t9k);
        assertEquals(1, refused.exitCode());
        assertTrue(refused.err().contains("is forbidden: User \"system:serviceaccount:" + ns + ":viewer\" cannot create resource "
                + "\"pytorchtrainingjobs\" in API group \"batch.tensorstack.dev\""), refused.err());
        assertTrue(viewer.run("create", "-n", ns, "-f", kubeflow).err().contains("cannot create resource \"pytorchjobs\""));

        for (String file : List.of(t9k, kubeflow)) {
            Kubectl.Result created = editor.run("create", "-n", ns, "-f", file);
            assertEquals(0, created.exitCode(), file + ": " + created.err());
        }
        assertEquals(0, editor.run("scale", "ptj/pytorch-dist-mnist-gloo-demo", "-n", ns, "--replicas=2").orFail().exitCode());
        assertEquals(0, editor.run("patch", "pj/pytorch-example", "-n", ns, "--type=merge", "-p",
                "{\"spec\":{\"runMode\":{\"pause\":{\"enabled\":true}}}}").orFail().exitCode());
        for (Kubectl person : List.of(editor, viewer)) {
            String jobs = person.run("get", "pj,ptj", "-n", ns, "-o", "name").orFail().out();
            assertTrue(jobs.contains("pytorchtrainingjob.batch.tensorstack.dev/pytorch-example")
                    && jobs.contains("pytorchjob.kubeflow.org/pytorch-dist-mnist-gloo-demo"), jobs);
            Kubectl.Result listed = person.run("torchjob", "get", "-n", ns);
            assertEquals(0, listed.exitCode(), listed.err());
            assertTrue(listed.out().contains("pytorch-example") && listed.out().contains("pytorch-dist-mnist-gloo-demo"), listed.out());
            Kubectl.Result described = person.run("torchjob", "describe", "pytorch-dist-mnist-gloo-demo", "-n", ns);
            assertEquals(0, described.exitCode(), described.err());
        }
        assertTrue(viewer.run("scale", "ptj/pytorch-dist-mnist-gloo-demo", "-n", ns, "--replicas=3").err()
                .contains("cannot patch resource \"pytorchjobs/scale\""));
        assertTrue(viewer.run("delete", "pj/pytorch-example", "-n", ns).err()
                .contains("cannot delete resource \"pytorchtrainingjobs\""));
        assertEquals(Integer.valueOf(2), admin.resources(PyTorchJob.class).inNamespace(ns).withName("pytorch-dist-mnist-gloo-demo").get()
                .getSpec().pytorchReplicaSpecs.get("Worker").replicas, "the editor's scale, not the viewer's");

        assertEquals(0, editor.run("delete", "pj,ptj", "--all", "-n", ns, "--wait=false").orFail().exitCode());
        admin.namespaces().withName(ns).delete();
    }

    @Test
    void getShowsThePrinterColumnsAndWideAddsTheTimes() {
        OperatorHarness cluster = install.harness("get");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}"));
        cluster.awaitPods(3);
        cluster.runAll();
        cluster.awaitJob("j", j -> j.getStatus().aggregate != null && j.getStatus().aggregate.running == 3);

        List<String> lines = kubectl.run("get", "pj", "-n", cluster.namespace).orFail().out().lines().toList();
        assertEquals(List.of("NAME", "PHASE", "RUNNING", "SUCCEEDED", "FAILED", "RESTARTS", "AGE"), Kubectl.columns(lines.get(0)));
        assertEquals(List.of("j", "Running", "3", "0", "0", "0"), Kubectl.columns(lines.get(1)).subList(0, 6));

        List<String> wide = kubectl.run("get", "pytorchtrainingjobs", "-o", "wide", "-n", cluster.namespace).orFail().out().lines().toList();
        assertEquals(List.of("NAME", "PHASE", "RUNNING", "SUCCEEDED", "FAILED", "RESTARTS", "AGE", "STARTED", "COMPLETED", "QUEUE", "LOCALQUEUE"),
                Kubectl.columns(wide.get(0)));
        List<String> category = kubectl.run("get", "t9k", "-n", cluster.namespace).orFail().out().lines().toList();
        assertEquals("j", Kubectl.columns(category.get(1)).get(0), "the t9k category lists the job: " + category);
        admin.namespaces().withName(cluster.namespace).delete();
    }

    @Test
    void scaleGoesThroughTheScaleSubresource() {
        OperatorHarness cluster = install.harness("scale");
        cluster.submit(OperatorHarness.elasticJob(1, 6, 2));
        cluster.awaitPodNames("el-node-0", "el-node-1");
        kubectl.run("scale", "pj/el", "--replicas=4", "-n", cluster.namespace).orFail();
        cluster.awaitPodNames("el-node-0", "el-node-1", "el-node-2", "el-node-3");
        cluster.runAll();
        cluster.awaitJob("el", j -> j.getStatus().elastic != null && j.getStatus().elastic.currentReplicas == 4);
        String scale = kubectl.run("get", "--raw", "/apis/batch.tensorstack.dev/v1beta1/namespaces/" + cluster.namespace
                + "/pytorchtrainingjobs/el/scale").orFail().out();
        assertTrue(scale.contains("\"replicas\":4") && scale.contains("tensorstack.dev/owner-name=el"), scale);
        Kubectl.Result outOfBounds = kubectl.run("scale", "pj/el", "--replicas=9", "-n", cluster.namespace);
        assertTrue(outOfBounds.exitCode() != 0 && outOfBounds.err().contains("between elastic.minReplicas and elastic.maxReplicas"),
                outOfBounds.err());
        admin.namespaces().withName(cluster.namespace).delete();
    }

    @Test
    void waitReturnsWhenTheJobCompletesAndDescribeShowsItsEvents() {
        OperatorHarness cluster = install.harness("wait");
        cluster.runJob("OnFailure", "{backoffLimit: 3}");
        cluster.kubelet.exit("j-master-0", 0);
        kubectl.run("wait", "--for=condition=Completed", "pj/j", "--timeout=60s", "-n", cluster.namespace).orFail();
        kubectl.run("wait", "--for=jsonpath={.status.phase}=Succeeded", "pj/j", "--timeout=10s", "-n", cluster.namespace).orFail();

        String described = kubectl.run("describe", "pj", "j", "-n", cluster.namespace).orFail().out();
        assertTrue(described.contains("Phase:") && described.contains("Succeeded"), described);
        String events = described.substring(described.indexOf("Events:"));
        assertTrue(events.contains("Succeeded") && events.contains("torchjob-operator"), events);
        admin.namespaces().withName(cluster.namespace).delete();
    }

    @Test
    void pauseAndResumeWithKubectlPatch() {
        OperatorHarness cluster = install.harness("pause");
        cluster.runJob("OnFailure", "{backoffLimit: 3}");

        kubectl.run("patch", "pj", "j", "-n", cluster.namespace, "--type=merge",
                "-p", "{\"spec\":{\"runMode\":{\"pause\":{\"enabled\":true}}}}").orFail();
        kubectl.run("wait", "--for=jsonpath={.status.phase}=Paused", "pj/j", "--timeout=60s", "-n", cluster.namespace).orFail();
        assertTrue(cluster.pods().isEmpty(), "a paused job has no pods");

        kubectl.run("patch", "pj", "j", "-n", cluster.namespace, "--type=merge",
                "-p", "{\"spec\":{\"runMode\":{\"pause\":{\"enabled\":false}}}}").orFail();
        cluster.awaitPods(3);
        cluster.runAll();
        kubectl.run("wait", "--for=jsonpath={.status.phase}=Running", "pj/j", "--timeout=60s", "-n", cluster.namespace).orFail();
        assertEquals(0, cluster.job("j").getStatus().backoffCount, "pausing is not a restart");
        admin.namespaces().withName(cluster.namespace).delete();
    }
}
