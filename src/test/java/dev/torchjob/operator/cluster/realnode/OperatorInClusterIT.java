package dev.torchjob.operator.cluster.realnode;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.cluster.ControlPlane;
import dev.torchjob.operator.cluster.DocumentedHelm;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.NodeContainer;
import dev.torchjob.operator.cluster.OperatorContainer;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.RealNode;
import dev.torchjob.operator.cluster.RealNodeJobs;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The operator as shipped, in the cluster: its JVM image (native/Containerfile.jvm, or the native
 * image under -Dnative) imported into the real node's runtime under the Deployment's image name, and
 * installed with the README's `kubectl apply --server-side -k kubernetes/`. The kubelet runs the pods as
 * the Deployment says (user 1001, read-only root, no capabilities, the projected ServiceAccount token),
 * probes them Ready, and the one that leads runs a job on the same node to Succeeded, reaching the API
 * server as every in-cluster client does (https://10.96.0.1 through kube-proxy).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OperatorInClusterIT {
    static final String NAMESPACE = OperatorInstall.OPERATOR_NAMESPACE;
    /** The Deployment's image, as containerd names it. */
    static final String SHIPPED_IMAGE = "docker.io/library/torchjob-operator:0.1.0";
    static final String CRD = "pytorchtrainingjobs.batch.tensorstack.dev";
    static OperatorInstall install;
    static KubernetesClient admin;
    static Kubectl kubectl;
    static RealNode node;
    static AutoCloseable exclusive;
    static AutoCloseable workloads;

    @BeforeAll
    static void operatorImageOnTheNode() throws Exception {
        install = OperatorInstall.get();
        admin = install.cluster.admin();
        kubectl = install.cluster.kubectl();
        // The Deployment's pods are the operator here: the process the other tests share must not compete.
        install.stopSharedOperator();
        node = RealNode.get();
        exclusive = node.exclusive();
        OperatorContainer.build();
        node.importImage(OperatorContainer.IMAGE, SHIPPED_IMAGE);
        workloads = node.workloads();
    }

    @AfterEach
    void freeTheNode() {
        RealNodeJobs.freeTheNode();
    }

    @AfterAll
    static void back() throws Exception {
        try {
            if (kubectl != null) {
                // Its pods go (their Lease handed back), then the install as the other tests found it.
                kubectl.run("scale", "deployment/torchjob-operator", "-n", NAMESPACE, "--replicas=0");
                await().atMost(Duration.ofMinutes(1)).until(() -> operatorPods().isEmpty());
            }
        } finally {
            if (workloads != null) {
                workloads.close();
            }
            if (kubectl != null) {
                kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "kubernetes/kubeflow/").orFail();
            }
            if (exclusive != null) {
                exclusive.close();
            }
        }
    }

    @Test
    @Order(1)
    void theReadmesInstallRunsTheOperatorAsHardenedPodsThatLeadAndTrainAJob() {
        Instant applied = Instant.now();
        kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "kubernetes/").orFail();
        kubectl.run("rollout", "status", "deployment/torchjob-operator", "-n", NAMESPACE, "--timeout=180s").orFail();
        List<Pod> pods = operatorPods();
        assertEquals(2, pods.size(), "the Deployment's two replicas");
        for (Pod pod : pods) {
            assertEquals(RealNode.NAME, pod.getSpec().getNodeName());
            assertTrue(pod.getStatus().getConditions().stream().anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus())),
                    "Ready through its probes: " + pod.getMetadata().getName());
            // Enforced by the runtime, read off the container's process from the machine (the native image has
            // no shell to ask): the user, no capability, the read-only root, the token the kubelet projected.
            NodeContainer container = NodeContainer.of(node, pod);
            assertTrue(container.status("Uid").matches("1001\\s+1001\\s+1001\\s+1001"), container.status("Uid"));
            assertTrue(container.status("Gid").matches("1001\\s+1001\\s+1001\\s+1001"), container.status("Gid"));
            assertEquals("0000000000000000", container.status("CapEff"), "no capabilities");
            assertTrue(container.rootMountOptions().contains("ro"), "read-only root: " + container.rootMountOptions());
            var write = assertThrows(IOException.class, () -> Files.createFile(container.file("/opt/x")));
            assertTrue(String.valueOf(write.getMessage()).contains("Read-only file system"), write.toString());
            assertTrue(readString(container.file("/var/run/secrets/kubernetes.io/serviceaccount/token")).startsWith("ey"), "the projected token");
        }
        await().atMost(Duration.ofMinutes(1)).until(() -> leadingPod(pods) != null);
        System.out.printf("in-cluster operator: apply -> both pods Ready %d ms; leader %s%n",
                Duration.between(applied, Instant.now()).toMillis(), holder());
        for (Pod pod : pods) {
            System.out.printf("in-cluster operator %s: at ready RSS %d MiB%n", pod.getMetadata().getName(), rssMiB(pod.getMetadata().getName()));
        }

        String ns = install.namespace("in-cluster");
        RealNodeJobs.submitT9k(ns, "trained", "backoffLimit: 1",
                RealNodeJobs.training("master", "OnFailure", 3) + RealNodeJobs.training("worker", "OnFailure", 3));
        PyTorchTrainingJob done = RealNodeJobs.awaitT9k(ns, "trained", JobPhase.Succeeded);
        assertEquals(0, done.getStatus().backoffCount);

        String logs = kubectl.run("logs", "deploy/torchjob-operator", "-n", NAMESPACE).orFail().out();
        assertTrue(logs.contains("torchjob-operator") && logs.contains("started in"), logs);
        for (Pod pod : operatorPods()) {
            System.out.printf("in-cluster operator %s: container start -> Ready %s; after a job RSS %s MiB%n", pod.getMetadata().getName(),
                    startToReady(pod), rssMiB(pod.getMetadata().getName()));
        }
    }

    /**
     * `kubectl rollout restart` while jobs run and fail: see {@link #jobsRunAndFailThrough}.
     */
    @Test
    @Order(2)
    void aRollingRestartMovesTheLeaseAndCountsEveryRestartOnceWithoutTouchingTheJobs() {
        kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "kubernetes/").orFail();
        kubectl.run("rollout", "status", "deployment/torchjob-operator", "-n", NAMESPACE, "--timeout=180s").orFail();
        jobsRunAndFailThrough("rollout restart", () -> kubectl.run("rollout", "restart", "deployment/torchjob-operator", "-n", NAMESPACE).orFail());
    }

    /**
     * The operator rolled ({@code upgrade}) while jobs run and fail: the Lease moves to a pod of the new
     * ReplicaSet; each job whose worker exits 137 during the handover (ExitCode: recreated) counts that
     * restart once and says it once; a job training through the whole upgrade is not touched (same pods,
     * nothing counted); all succeed.
     */
    static void jobsRunAndFailThrough(String upgradeName, Runnable upgrade) {
        String leaderBefore = await().atMost(Duration.ofMinutes(1)).until(OperatorInClusterIT::holder, java.util.Objects::nonNull);
        String ns = install.namespace(upgradeName.replace(' ', '-'));
        RealNodeJobs.submitT9k(ns, "through", "backoffLimit: 1",
                RealNodeJobs.training("master", "OnFailure", 12) + RealNodeJobs.training("worker", "OnFailure", 12));
        await().atMost(Duration.ofMinutes(2)).until(() -> RealNodeJobs.t9k(ns, "through").getStatus() != null
                && RealNodeJobs.t9k(ns, "through").getStatus().phase == JobPhase.Running);
        List<String> podsBefore = admin.pods().inNamespace(ns).list().getItems().stream().map(p -> p.getMetadata().getUid()).sorted().toList();

        upgrade.run();
        for (String job : List.of("fails-a", "fails-b")) {
            RealNodeJobs.submitT9k(ns, job, "backoffLimit: 2", RealNodeJobs.training("master", "ExitCode", 3)
                    + RealNodeJobs.workerFailingOnce(137, RealNode.STATE.resolve("markers").resolve(ns + "-" + job)));
        }
        kubectl.run("rollout", "status", "deployment/torchjob-operator", "-n", NAMESPACE, "--timeout=180s").orFail();
        await().atMost(Duration.ofMinutes(1)).until(() -> {
            Pod leading = leadingPod(operatorPods());
            return leading != null && !leaderBefore.startsWith(leading.getMetadata().getName());
        });

        for (String job : List.of("fails-a", "fails-b")) {
            PyTorchTrainingJob done = RealNodeJobs.awaitT9k(ns, job, JobPhase.Succeeded);
            assertEquals(1, done.getStatus().backoffCount, job + ": its worker's exit 137, counted once across the handover");
        }
        List<String> restarted = RealNodeJobs.events(ns, "JobRestarting");
        assertEquals(2, restarted.size(), "said once per job: " + restarted);
        PyTorchTrainingJob through = RealNodeJobs.awaitT9k(ns, "through", JobPhase.Succeeded);
        assertEquals(0, through.getStatus().backoffCount, "the upgrade restarted nothing");
        List<String> throughPods = admin.pods().inNamespace(ns).list().getItems().stream()
                .filter(p -> p.getMetadata().getName().startsWith("through-")).map(p -> p.getMetadata().getUid()).sorted().toList();
        assertEquals(podsBefore, throughPods, "the same pods from start to end");
        System.out.printf("in-cluster %s: Lease %s -> %s%n", upgradeName, leaderBefore, holder());
    }

    /**
     * A real Prometheus (3.x, built from its module with Kubernetes service discovery, which Debian's
     * lacks), outside the cluster, discovers the operator's pods through the API server with
     * the scrape configuration docs/metrics.md gives users without the Prometheus Operator (plus where the
     * API server is and the credentials, which a Prometheus in the cluster has from its ServiceAccount), after
     * `kubectl apply -f kubernetes/monitoring/service.yaml`; it scrapes both replicas at their pod addresses on
     * the node's bridge and nothing else, and every shipped alert and dashboard query has data once jobs
     * have restarted, succeeded, failed, been deleted and waited.
     */
    @Test
    @Order(3)
    void prometheusFindsTheOperatorsPodsAsTheDocsSayAndEveryShippedQueryHasData() throws Exception {
        kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "kubernetes/").orFail();
        kubectl.run("rollout", "status", "deployment/torchjob-operator", "-n", NAMESPACE, "--timeout=180s").orFail();
        kubectl.run("apply", "-f", "kubernetes/monitoring/service.yaml").orFail();
        Path dir = Files.createTempDirectory("prometheus-sd-");
        Path ca = Files.write(dir.resolve("ca.crt"), install.cluster.certificateAuthority());
        // Prometheus's own ServiceAccount, with only what the docs say it needs.
        kubectl.runWithInput("""
                apiVersion: v1
                kind: ServiceAccount
                metadata: {name: prometheus, namespace: %1$s}
                ---
                apiVersion: rbac.authorization.k8s.io/v1
                kind: Role
                metadata: {name: prometheus, namespace: %1$s}
                rules:
                - {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
                - {apiGroups: [""], resources: [services, pods], verbs: [list, watch]}
                ---
                apiVersion: rbac.authorization.k8s.io/v1
                kind: RoleBinding
                metadata: {name: prometheus, namespace: %1$s}
                roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: prometheus}
                subjects: [{kind: ServiceAccount, name: prometheus, namespace: %1$s}]
                """.formatted(NAMESPACE), "apply", "-f", "-").orFail();
        Path token = Files.writeString(dir.resolve("token"), OperatorInstall.token(install.cluster, "prometheus"));
        String documented = documentedScrapeConfig().replace("      - role: endpointslice\n", """
                      - role: endpointslice
                        api_server: %s
                        authorization: {credentials_file: %s}
                        tls_config: {ca_file: %s}
                """.formatted(admin.getConfiguration().getMasterUrl(), token, ca));
        List<String> built = ControlPlane.provisioned("monitoring/prometheus.sh");
        Path withKubernetesDiscovery = Path.of(built.get(built.size() - 1));
        try (var prometheus = dev.torchjob.operator.testing.PrometheusServer.start(withKubernetesDiscovery, documented)) {
            await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500)).ignoreExceptions()
                    .until(() -> prometheus.value("count(up{job=\"torchjob-operator\"} == 1)") == 2.0);
            var targets = admin.getKubernetesSerialization().unmarshal(prometheus.get("/api/v1/targets").body(), java.util.Map.class);
            List<?> active = (List<?>) ((java.util.Map<?, ?>) targets.get("data")).get("activeTargets");
            for (Object target : active) {
                String url = (String) ((java.util.Map<?, ?>) target).get("scrapeUrl");
                assertTrue(url.startsWith("http://10.250.0.") && url.endsWith(":8080/q/metrics"), "only the node's pods: " + url);
            }
            assertEquals(2, active.size());

            String ns = install.namespace("observed");
            RealNodeJobs.submitT9k(ns, "restarted", "backoffLimit: 2", RealNodeJobs.training("master", "ExitCode", 3)
                    + RealNodeJobs.workerFailingOnce(137, RealNode.STATE.resolve("markers").resolve(ns)));
            RealNodeJobs.submitT9k(ns, "failed", "backoffLimit: 2", RealNodeJobs.training("master", "ExitCode", 3)
                    + RealNodeJobs.workerExiting(1));
            RealNodeJobs.submitT9k(ns, "waiting", "backoffLimit: 2", RealNodeJobs.replica("worker", "ExitCode",
                    "command: [python, train.py]\n", "nodeSelector: {test.torchjob.dev/pool: none}\n"));
            RealNodeJobs.awaitT9k(ns, "restarted", JobPhase.Succeeded);
            RealNodeJobs.awaitT9k(ns, "failed", JobPhase.Failed);
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500)).until(() -> prometheus.value(
                    "sum(training_operator_jobs_restarted_total{job_namespace=\"" + ns + "\"})") == 1.0);
            admin.resources(PyTorchTrainingJob.class).inNamespace(ns).withName("restarted").delete();
            String deleted = "sum(training_operator_jobs_deleted_total{job_namespace=\"" + ns + "\"})";
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500)).until(() -> prometheus.value(deleted) >= 1.0);
            // Both replicas watch the jobs; summed over them (as the dashboard does) the one deletion is one,
            // through several scrapes of each (every second).
            await("one deletion, summed over both replicas").atMost(Duration.ofSeconds(30)).during(Duration.ofSeconds(4))
                    .pollInterval(Duration.ofMillis(500)).until(() -> prometheus.value(deleted) == 1.0);
            System.out.printf("in-cluster Prometheus: %s = %s; per instance %s%n", deleted, prometheus.value(deleted),
                    prometheus.query("training_operator_jobs_deleted_total{job_namespace=\"" + ns + "\"}"));
            assertEquals(List.of(), prometheus.shippedQueriesWithoutData(dev.torchjob.operator.metrics.MonitoringRulesTest.shippedQueries()),
                    "queries without data");
            prometheus.rules().forEach(rule -> assertEquals("ok", rule.get("health").asText(), rule.toString()));
        }
    }

    /**
     * The leading operator killed by its own memory limit (a test-only 192Mi): a process put into its
     * container's memory cgroup from the machine takes 160 MiB of it, the OOM killer takes the operator
     * (first in its line), and the kubelet restarts the container (OOMKilled). Meanwhile a job's
     * worker exits 137: the restart is counted once, said once, and the job succeeds under whichever
     * replica leads next.
     */
    @Test
    @Order(4)
    void theOperatorKilledByItsMemoryLimitIsRestartedAndLosesNoCount() throws IOException {
        kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "kubernetes/").orFail();
        kubectl.run("patch", "deployment/torchjob-operator", "-n", NAMESPACE, "--type=json", "-p",
                "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/resources/limits/memory\",\"value\":\"192Mi\"}]").orFail();
        kubectl.run("rollout", "status", "deployment/torchjob-operator", "-n", NAMESPACE, "--timeout=180s").orFail();
        Pod leading = await().atMost(Duration.ofMinutes(1)).until(() -> leadingPod(operatorPods()), java.util.Objects::nonNull);
        String leader = leading.getMetadata().getName();

        String ns = install.namespace("operator-oom");
        NodeContainer operator = NodeContainer.of(node, leading);
        // The operator first in the OOM killer's line (the kubelet gave it a middling score; raising one needs
        // no privilege), then 160 MiB held in its memory cgroup by a process put there from the machine, its
        // score 0 rather than whatever the test runner's is: tail keeps what it reads until a newline, and
        // /dev/zero has none.
        operator.firstForTheOomKiller();
        Path hogOutput = Files.createTempFile("memory-hog-", ".log");
        Process hog = new ProcessBuilder("sh", "-c", "echo 0 > /proc/self/oom_score_adj && echo $$ > "
                + operator.memoryCgroup().resolve("cgroup.procs") + " && head -c 160M /dev/zero | tail > /dev/null")
                .redirectErrorStream(true).redirectOutput(hogOutput.toFile()).start();
        RealNodeJobs.submitT9k(ns, "survives", "backoffLimit: 2", RealNodeJobs.training("master", "ExitCode", 3)
                + RealNodeJobs.workerFailingOnce(137, RealNode.STATE.resolve("markers").resolve(ns)));
        // The holder may be killed too, right after the operator (the operator's memory not yet given back):
        // only a holder that failed with no kill of the operator to show for it fails the test.
        var hogEnded = hog.onExit().thenApply(ended -> Instant.now());
        await().atMost(Duration.ofMinutes(1)).failFast("the process holding memory in the operator's cgroup failed", () -> {
            Instant ended = hogEnded.getNow(null);
            assertTrue(ended == null || hog.exitValue() == 0 || Duration.between(ended, Instant.now()).toSeconds() < 20,
                    () -> "exit " + hog.exitValue() + ", printed: " + readString(hogOutput) + "; the operator's container: "
                            + admin.pods().inNamespace(NAMESPACE).withName(leader).get().getStatus().getContainerStatuses());
        }).until(() -> {
            Pod pod = admin.pods().inNamespace(NAMESPACE).withName(leader).get();
            var status = pod.getStatus().getContainerStatuses().get(0);
            return status.getRestartCount() > 0 && status.getLastState().getTerminated() != null;
        });
        var killed = admin.pods().inNamespace(NAMESPACE).withName(leader).get().getStatus().getContainerStatuses().get(0);
        assertEquals("OOMKilled", killed.getLastState().getTerminated().getReason(), "killed by its memory limit: " + killed);

        PyTorchTrainingJob done = RealNodeJobs.awaitT9k(ns, "survives", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "the worker's exit 137, counted once across the kill");
        assertEquals(1, RealNodeJobs.events(ns, "JobRestarting").size(), "said once");
        System.out.printf("in-cluster operator OOM-killed: %s restarted %d time(s), Lease now %s%n", leader, killed.getRestartCount(), holder());
    }

    /**
     * The README's {@code helm install} on the cluster the kustomize install ran on, moved over as
     * docs/install.md says (the kustomize operator, its RBAC, users' roles and metrics Service deleted, the CRD adopted by the release so
     * no job goes), with the image the README names: two Ready pods, one leads. Then the documented
     * {@code helm upgrade} with a new image tag rolls them while jobs run and fail
     * ({@link #jobsRunAndFailThrough}), and the documented {@code helm uninstall} leaves the CRD.
     */
    @Test
    @Order(5)
    void theReadmesHelmReleaseRunsTheOperatorAndAnUpgradeOfItsImageTagRollsItWithoutTouchingTheJobs() throws IOException {
        kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "kubernetes/").orFail();
        kubectl.run("delete", "-f", "kubernetes/base/deployment.yaml", "-f", "kubernetes/base/rbac.yaml", "-f", "kubernetes/base/user-roles.yaml",
                "-f", "kubernetes/monitoring/service.yaml", "--ignore-not-found").orFail();
        await().atMost(Duration.ofMinutes(1)).until(() -> operatorPods().isEmpty());
        kubectl.run("annotate", "crd", CRD, "meta.helm.sh/release-name=torchjob-operator",
                "meta.helm.sh/release-namespace=" + NAMESPACE, "--overwrite").orFail();
        kubectl.run("label", "crd", CRD, "app.kubernetes.io/managed-by=Helm", "--overwrite").orFail();

        List<String> readme = DocumentedHelm.documented("install").get(0);
        String repository = readme.stream().filter(a -> a.startsWith("image.repository=")).findFirst().orElseThrow().split("=", 2)[1];
        node.tagImage(OperatorContainer.IMAGE, repository + ":0.1.0");
        node.tagImage(OperatorContainer.IMAGE, repository + ":0.1.1");
        Path kubeconfig = install.cluster.adminKubeconfig;
        try {
            assertEquals("deployed", DocumentedHelm.install(readme, kubeconfig).call().getStatus(), String.join(" ", readme));
            kubectl.run("rollout", "status", "deployment/torchjob-operator", "-n", NAMESPACE, "--timeout=180s").orFail();
            assertEquals(List.of(repository + ":0.1.0", repository + ":0.1.0"), operatorImages(), "the README's image, the chart's appVersion");
            assertEquals("Helm", kubectl.run("get", "clusterrole", "torchjob-operator-edit", "-o", "jsonpath={.metadata.labels['app\\.kubernetes\\.io/managed-by']}")
                    .orFail().out(), "the users' roles are the release's");

            List<String> upgrade = DocumentedHelm.documented("upgrade").get(0);
            jobsRunAndFailThrough("helm upgrade", () -> assertEquals("2",
                    DocumentedHelm.upgrade(upgrade, kubeconfig).set("image.tag", "0.1.1").call().getRevision()));
            assertEquals(List.of(repository + ":0.1.1", repository + ":0.1.1"), operatorImages(),
                    "the new tag, and the repository the install set kept by the documented upgrade");
        } finally {
            DocumentedHelm.uninstall(DocumentedHelm.documented("uninstall").get(0), kubeconfig);
        }
        await().atMost(Duration.ofMinutes(1)).until(() -> operatorPods().isEmpty());
        assertTrue(kubectl.run("get", "crd", CRD).exitCode() == 0, "the CRD, and with it every job, stays");
    }

    static List<String> operatorImages() {
        return operatorPods().stream().map(p -> p.getSpec().getContainers().get(0).getImage()).sorted().toList();
    }

    /** The scrape configuration docs/metrics.md gives, as the list under its scrape_configs. */
    static String documentedScrapeConfig() throws IOException {
        String doc = Files.readString(Path.of("docs/metrics.md"));
        int start = doc.indexOf("```yaml\nscrape_configs:\n");
        assertTrue(start >= 0, "docs/metrics.md gives a scrape configuration");
        String block = doc.substring(start + "```yaml\nscrape_configs:\n".length(), doc.indexOf("```", start + 7));
        return block.stripIndent();
    }

    /** From the training container's start to the pod's Ready condition, as the kubelet reports them (seconds). */
    static Duration startToReady(Pod pod) {
        String started = pod.getStatus().getContainerStatuses().get(0).getState().getRunning().getStartedAt();
        String ready = pod.getStatus().getConditions().stream().filter(c -> "Ready".equals(c.getType())).findFirst().orElseThrow()
                .getLastTransitionTime();
        return Duration.between(Instant.parse(started), Instant.parse(ready));
    }

    /** The operator container's resident memory, from the kubelet's summary API. */
    static long rssMiB(String pod) {
        String summary = kubectl.run("get", "--raw", "/api/v1/nodes/" + RealNode.NAME + "/proxy/stats/summary").orFail().out();
        var json = admin.getKubernetesSerialization().unmarshal(summary, java.util.Map.class);
        for (Object p : (List<?>) json.get("pods")) {
            var podStats = (java.util.Map<?, ?>) p;
            if (pod.equals(((java.util.Map<?, ?>) podStats.get("podRef")).get("name"))) {
                var container = (java.util.Map<?, ?>) ((List<?>) podStats.get("containers")).get(0);
                return ((Number) ((java.util.Map<?, ?>) container.get("memory")).get("rssBytes")).longValue() >> 20;
            }
        }
        return -1;
    }

    static List<Pod> operatorPods() {
        return admin.pods().inNamespace(NAMESPACE).withLabel("app.kubernetes.io/name", "torchjob-operator").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
    }

    /**
     * The pod among these that holds the Lease, or null. The holder is read once: between two reads a
     * leader handing the Lease back (a rollout) empties it.
     */
    static Pod leadingPod(List<Pod> pods) {
        String holder = holder();
        return holder == null ? null : pods.stream().filter(p -> holder.startsWith(p.getMetadata().getName())).findFirst().orElse(null);
    }

    static String holder() {
        Lease lease = admin.leases().inNamespace(NAMESPACE).withName("torchjob-operator-leader").get();
        return lease == null || lease.getSpec() == null ? null : lease.getSpec().getHolderIdentity();
    }

    static String readString(Path path) {
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
