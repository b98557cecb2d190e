package dev.torchjob.operator.cluster.realnode;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.torchjob.operator.cluster.ControlPlane;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.OnTheSharedOperator;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.ReplicaPhase;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.testing.ListenPorts;
import dev.torchjob.operator.testing.PackagedOperator;
import io.fabric8.kubernetes.api.model.rbac.PolicyRuleBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBuilder;

/**
 * {@code kubectl torchjob} as a user runs it, through the real kubectl (our executable on PATH as
 * kubectl-torchjob), against the real API server and the operator, kwok playing the kubelet: get
 * and describe of both kinds, wait's exit codes, and each bad input's one line and exit 3. Following
 * logs needs a kubelet that serves them: RealNodeIT.
 */
class KubectlTorchjobIT extends OnTheSharedOperator {
    static Kubectl plugin;
    static Duration firstCall;

    @BeforeAll
    static void cluster() {
        plugin = install.kubectlWithPlugin();
        // In the JVM the launcher's first call writes its class-data archive as it exits: timed apart.
        Instant asked = Instant.now();
        plugin.run("torchjob", "get", "-n", "default").orFail();
        firstCall = Duration.between(asked, Instant.now());
    }

    @Test
    void getAndDescribeShowBothKindsWithRestartsAgainstTheLimit() {
        OperatorHarness cluster = install.harness("cli-get");
        cluster.runJob("OnFailure", "{backoffLimit: 3}");
        String failed = cluster.pod("j-worker-1").getMetadata().getUid();
        cluster.kubelet.exit("j-worker-1", 1);
        cluster.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        cluster.awaitEvent("JobRestarting", "j-worker-1");
        // The new group is created once every old pod is gone: describe is asked about it running, not about the gap.
        cluster.awaitNewPod("j-worker-1", failed);
        cluster.runAll();
        cluster.awaitJob("j", j -> j.getStatus().tasks.stream().flatMap(t -> t.replicas.stream())
                .allMatch(r -> r.phase == ReplicaPhase.Running));
        cluster.submitPyTorchJob("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: kf, labels: {kueue.x-k8s.io/queue-name: team-a}}
                spec:
                  runPolicy: {backoffLimit: 4}
                  pytorchReplicaSpecs:
                    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """);

        Instant asked = Instant.now();
        Kubectl.Result got = plugin.run("torchjob", "get", "-n", cluster.namespace).orFail();
        Duration getTook = Duration.between(asked, Instant.now());
        List<String> lines = got.out().lines().toList();
        assertEquals(List.of("NAME", "KIND", "PHASE", "REPLICAS", "RESTARTS", "QUEUE", "AGE"), Kubectl.columns(lines.get(0)));
        assertEquals(List.of("j", "PyTorchTrainingJob", "Running", "3", "1/3", "<none>"), Kubectl.columns(lines.get(1)).subList(0, 6));
        assertEquals(List.of("kf", "PyTorchJob"), Kubectl.columns(lines.get(2)).subList(0, 2));
        assertEquals(List.of("1", "0/4", "team-a"), Kubectl.columns(lines.get(2)).subList(3, 6));
        assertEquals(List.of("j", "PyTorchTrainingJob"), Kubectl.columns(plugin.run("torchjob", "get", "pj/j", "-n", cluster.namespace)
                .orFail().out().lines().toList().get(1)).subList(0, 2));

        asked = Instant.now();
        String described = plugin.run("torchjob", "describe", "j", "-n", cluster.namespace).orFail().out();
        Duration describeTook = Duration.between(asked, Instant.now());
        assertTrue(described.contains("Restarts:  1/3 (counted / runPolicy.backoffLimit)"), described);
        List<String> history = described.lines().dropWhile(l -> !l.equals("History:")).takeWhile(l -> !l.equals("Pods:")).toList();
        assertTrue(history.get(1).endsWith("Created"), described);
        assertTrue(history.stream().anyMatch(l -> l.contains("JobRestarting") && l.contains("pod j-worker-1 (container pytorch) exited with code 1")
                && l.contains("restart 1 of backoffLimit 3")), described);
        assertTrue(described.lines().anyMatch(l -> l.matches("\\s+worker-1\\s+j-worker-1\\s+kwok-node-\\d\\s+Running\\s+0")), described);
        System.out.printf("[kubectl torchjob] first call %d ms, get %d ms, describe %d ms (%s, through kubectl)%n", firstCall.toMillis(),
                getTook.toMillis(), describeTook.toMillis(), PackagedOperator.isNative() ? "native" : "JVM");
        install.cluster.admin().namespaces().withName(cluster.namespace).delete();
    }

    /**
     * The JVM launcher on Java 25 or later, where the machine has one, chosen by JAVA_HOME as a user would: nothing on
     * stderr (Java 24 and later warn at every start about Netty's sun.misc.Unsafe use unless told not to), the
     * first call answers and an AOT cache is made from it in the background, and later calls answer with it.
     */
    @Test
    void onJava25TheLauncherKeepsAnAotCacheAndPrintsOnlyTheAnswer(@TempDir Path cache) throws IOException {
        assumeFalse(PackagedOperator.isNative(), "the native executable has no launcher");
        Path javaHome = javaHomeOfAtLeast(25);
        assumeTrue(javaHome != null, "no Java 25 or later in /usr/lib/jvm");
        Kubectl onJava25 = plugin.withEnvironment(Map.of("JAVA_HOME", javaHome.toString(), "XDG_CACHE_HOME", cache.toString()));
        OperatorHarness cluster = install.harness("cli-java25");
        cluster.runJob("Never", "{backoffLimit: 0}");

        for (String call : List.of("first", "after the cache")) {
            Kubectl.Result got = onJava25.run("torchjob", "get", "-n", cluster.namespace);
            assertEquals(0, got.exitCode(), call + ": " + got.err());
            assertEquals("", got.err(), call);
            assertEquals(List.of("j", "PyTorchTrainingJob"), Kubectl.columns(got.out().lines().toList().get(1)).subList(0, 2), call);
            if (call.equals("first")) {
                Instant answered = Instant.now();
                await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200)).until(() -> {
                    try (var files = Files.list(cache.resolve("torchjob"))) {
                        return files.map(f -> f.getFileName().toString()).toList();
                    }
                }, files -> files.size() == 1 && files.get(0).endsWith(".aot"));
                System.out.printf("[kubectl torchjob] Java 25: the AOT cache made %d ms after the first call answered%n",
                        Duration.between(answered, Instant.now()).toMillis());
            }
        }
        String described = onJava25.run("torchjob", "describe", "j", "-n", cluster.namespace).orFail().out();
        assertTrue(described.contains("Kind:      PyTorchTrainingJob"), described);
        install.cluster.admin().namespaces().withName(cluster.namespace).delete();
    }

    /** A Java runtime of this feature version or later among the machine's (Debian's /usr/lib/jvm), or null. */
    private static Path javaHomeOfAtLeast(int feature) throws IOException {
        Path jvms = Path.of("/usr/lib/jvm");
        if (!Files.isDirectory(jvms)) {
            return null;
        }
        try (var homes = Files.list(jvms)) {
            return homes.filter(home -> Files.isExecutable(home.resolve("bin/java")) && Files.isRegularFile(home.resolve("release")))
                    .filter(home -> {
                        try {
                            Matcher version = Pattern.compile("JAVA_VERSION=\"(\\d+)")
                                    .matcher(Files.readString(home.resolve("release")));
                            return version.find() && Integer.parseInt(version.group(1)) >= feature;
                        } catch (IOException e) {
                            return false;
                        }
                    }).findFirst().orElse(null);
        }
    }

    @Test
    void waitExitsZeroWhenReachedOneWhenTheJobEndedOtherwiseTwoOnTimeout() throws InterruptedException, IOException {
        OperatorHarness cluster = install.harness("cli-wait");
        cluster.runJob("Never", "{backoffLimit: 0}");
        String ns = cluster.namespace;
        assertEquals(0, plugin.run("torchjob", "wait", "j", "-n", ns, "--for", "Running").exitCode());
        assertEquals(0, plugin.run("torchjob", "wait", "j", "-n", ns, "--for", "Admitted").exitCode(), "no queue: admitted at once");
        Kubectl.Result timedOut = plugin.run("torchjob", "wait", "j", "-n", ns, "--timeout", "2s");
        assertEquals(2, timedOut.exitCode(), timedOut.err());
        assertEquals("timed out after 2s waiting for job j to be Succeeded (it is Running)", timedOut.err().strip());

        Kubectl.Watch waiting = plugin.watch("torchjob", "wait", "j", "-n", ns, "--for", "Succeeded");
        cluster.kubelet.exit("j-worker-0", 1);
        assertEquals(1, waiting.awaitExit(Duration.ofSeconds(60)), waiting.printed());
        assertTrue(waiting.printed().strip().startsWith("job j Failed: ") && waiting.printed().contains("j-worker-0")
                && waiting.printed().strip().endsWith("; not Succeeded"), waiting.printed());
        cluster.awaitPhase("j", JobPhase.Failed);
        assertEquals(0, plugin.run("torchjob", "wait", "j", "-n", ns, "--for", "Failed").exitCode());
        install.cluster.admin().namespaces().withName(ns).delete();
    }

    @Test
    void eachMistakeIsOneLineAndExitThree() throws IOException {
        OperatorHarness cluster = install.harness("cli-bad");
        cluster.runJob("OnFailure", "{backoffLimit: 3}");
        String ns = cluster.namespace;
        assertOneLine("error: no PyTorchTrainingJob or PyTorchJob named nope in namespace " + ns,
                plugin.run("torchjob", "describe", "nope", "-n", ns));
        assertOneLine("error: job j has no replica type launcher: it has master, worker",
                plugin.run("torchjob", "logs", "j", "-n", ns, "--type", "launcher"));
        assertOneLine("error: job j has 2 worker replica(s): --index 2 is not one of them (0-1)",
                plugin.run("torchjob", "logs", "j", "-n", ns, "--type", "worker", "--index", "2"));
        assertOneLine("error: pod j-master-0 has no container sidecar: it has pytorch",
                plugin.run("torchjob", "logs", "j", "-n", ns, "-c", "sidecar"));
        assertOneLine("error: unknown command \"delete\": get, describe, wait or logs (see kubectl torchjob --help)",
                plugin.run("torchjob", "delete", "j"));

        Path work = install.cluster.work;
        Kubectl noConfig = install.cluster.kubectl().withPlugins(work.resolve("plugins"), work.resolve("no-such.kubeconfig"));
        assertOneLine("error: no kubeconfig: " + work.resolve("no-such.kubeconfig") + " does not exist (set KUBECONFIG or --kubeconfig to your cluster's)",
                noConfig.run("torchjob", "get"));
        Path down = work.resolve("down.kubeconfig");
        ControlPlane.writeKubeconfig(down, "https://127.0.0.1:" + ListenPorts.free(), install.cluster.certificateAuthority(), "x");
        Kubectl.Result unreachable = install.cluster.kubectl().withPlugins(work.resolve("plugins"), down).run("torchjob", "get");
        assertEquals(3, unreachable.exitCode());
        assertTrue(unreachable.err().startsWith("error: cannot reach the cluster at https://127.0.0.1:") && unreachable.err().lines().count() == 1,
                unreachable.err());
        assertOneLine("error: context \"elsewhere\" is not in your kubeconfig", plugin.run("torchjob", "get", "--context", "elsewhere"));

        // A user who may read jobs, pods and events but not the pods' logs.
        var admin = install.cluster.admin();
        admin.rbac().roles().inNamespace(ns).resource(new RoleBuilder().withNewMetadata().withName("reader").endMetadata()
                .addToRules(new PolicyRuleBuilder().withApiGroups("batch.tensorstack.dev", "kubeflow.org")
                        .withResources("pytorchtrainingjobs", "pytorchjobs").withVerbs("get", "list").build())
                .addToRules(new PolicyRuleBuilder().withApiGroups("").withResources("pods", "events").withVerbs("get", "list").build())
                .build()).create();
        Kubectl asReader = install.kubectlAs(ns, "reader", "Role/reader");
        assertEquals(0, asReader.run("torchjob", "get", "-n", ns).exitCode(), "reading jobs is allowed");
        assertOneLine("error: not allowed to get pods/log in namespace " + ns + " (RBAC: your user needs the verb \"get\" on \"pods/log\")",
                asReader.run("torchjob", "logs", "j", "-n", ns));
        admin.namespaces().withName(ns).delete();
    }

    /**
     * Ctrl-C ends a follow at once. The job is paused (no pods): kwok's pods have no kubelet behind
     * them, and asking their logs would send the API server to an address off this machine.
     */
    @Test
    void ctrlCStopsAFollowAtOnce() throws IOException, InterruptedException {
        OperatorHarness cluster = install.harness("cli-interrupt");
        cluster.submit(OperatorHarness.job("j", "OnFailure", "{backoffLimit: 3}")
                .replace("spec:\n", "spec:\n  runMode: {pause: {enabled: true}}\n"));
        cluster.awaitPhase("j", JobPhase.Paused);
        Kubectl.Watch following = plugin.watch("torchjob", "logs", "j", "-f", "-n", cluster.namespace);
        Thread.sleep(PackagedOperator.isNative() ? 1000 : 4000); // started and looking
        assertTrue(following.process().isAlive(), "still following a paused job: " + following.printed());
        Instant interrupted = Instant.now();
        new ProcessBuilder("kill", "-INT", String.valueOf(following.process().pid())).start().waitFor();
        int exit = following.awaitExit(Duration.ofSeconds(5));
        Duration took = Duration.between(interrupted, Instant.now());
        assertEquals(130, exit, "ended by SIGINT: " + following.printed());
        assertTrue(took.compareTo(Duration.ofSeconds(2)) < 0, "stopped at once, not after " + took);
        install.cluster.admin().namespaces().withName(cluster.namespace).delete();
    }

    private static void assertOneLine(String expected, Kubectl.Result result) {
        assertEquals(3, result.exitCode(), result.out() + result.err());
        assertEquals(expected, result.err().strip());
        assertEquals("", result.out());
    }
}
