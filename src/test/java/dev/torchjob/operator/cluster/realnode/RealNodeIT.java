package dev.torchjob.operator.cluster.realnode;

import static dev.torchjob.operator.cluster.RealNodeJobs.TRAINING;
import static dev.torchjob.operator.cluster.RealNodeJobs.awaitLogged;
import static dev.torchjob.operator.cluster.RealNodeJobs.awaitT9k;
import static dev.torchjob.operator.cluster.RealNodeJobs.events;
import static dev.torchjob.operator.cluster.RealNodeJobs.finalAccuracy;
import static dev.torchjob.operator.cluster.RealNodeJobs.logs;
import static dev.torchjob.operator.cluster.RealNodeJobs.markerVolume;
import static dev.torchjob.operator.cluster.RealNodeJobs.replica;
import static dev.torchjob.operator.cluster.RealNodeJobs.submitT9k;
import static dev.torchjob.operator.cluster.RealNodeJobs.t9k;
import static dev.torchjob.operator.cluster.RealNodeJobs.training;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.TaskStatus;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.KueueInstall;
import dev.torchjob.operator.cluster.OnTheRealNode;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.RealNode;
import dev.torchjob.operator.cluster.RealNodeJobs;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * Jobs on a real node (RealNode): a kubelet runs their pods in containerd, the pods find the master
 * through cluster DNS, train with gloo DDP, fail for real (exit codes, OOM kills, in-place restarts)
 * and are read with kubectl as users read them. The manifests are the README's and the seeds', as
 * written, except where a test says what it changed.
 */
@ExtendWith(OnTheRealNode.class)
class RealNodeIT {
    static final OperatorInstall install = OperatorInstall.get();
    static final KubernetesClient admin = install.cluster.admin();
    static final Kubectl kubectl = install.cluster.kubectl();
    static final RealNode node = RealNode.get();

    /**
     * The README's "Submit and watch a job" on a real node: the example image built as the README says
     * (on Debian's PyTorch), `kubectl get pj -w` watching, `kubectl apply -f kubernetes/examples/master-worker-ddp.yaml` with each
     * replica's CPU request cut from 2 to 250m (the node has 2 cores; the limits stay), then every rank's
     * log. All four ranks rendezvous at MASTER_ADDR, the master's Service name resolved by cluster DNS,
     * and end with the same accuracy; the master saves the model.
     */
    @Test
    void theReadmeExampleTrainsWithDdpOnTheRealNode() throws IOException {
        String ns = install.namespace("readme");
        // The checkpoints' claim: the tier has no storage provisioner, so the master's volume is a folder on the node's disk.
        String manifest = Files.readString(Path.of("kubernetes/examples/master-worker-ddp.yaml"))
                .replace("requests: {cpu: \"2\", memory: 4Gi}", "requests: {cpu: 250m, memory: 1Gi}")
                .replace("persistentVolumeClaim: {claimName: ddp-mnist-checkpoints}",
                        "hostPath: {path: " + RealNode.STATE.resolve("markers").resolve(ns) + ", type: DirectoryOrCreate}");
        assertTrue(manifest.contains("cpu: 250m") && manifest.contains("hostPath"), "the example's lines are as this test expects");
        Kubectl.Watch watching = kubectl.watch("get", "pj", "-n", ns, "-w");
        kubectl.runWithInput(manifest, "apply", "-n", ns, "-f", "-").orFail();
        // Every rank's log, followed while it runs: the example's cleanUpPolicy Unfinished deletes a worker still
        // running when the master succeeds, and its log with it.
        List<String> ranks = List.of("ddp-mnist-master-0", "ddp-mnist-worker-0", "ddp-mnist-worker-1", "ddp-mnist-worker-2");
        await().atMost(TRAINING).pollInterval(Duration.ofMillis(500)).until(() -> ranks.stream().allMatch(pod -> {
            Pod p = admin.pods().inNamespace(ns).withName(pod).get();
            return p != null && p.getStatus() != null && !"Pending".equals(p.getStatus().getPhase());
        }));
        List<Kubectl.Watch> followed = new ArrayList<>();
        for (String pod : ranks) {
            followed.add(kubectl.watch("logs", "-f", "-n", ns, pod));
        }
        PyTorchTrainingJob done = awaitT9k(ns, "ddp-mnist", JobPhase.Succeeded);
        assertEquals(0, done.getStatus().backoffCount);
        await().atMost(Duration.ofSeconds(30)).until(() -> watching.printed().contains("Succeeded")
                && followed.stream().allMatch(f -> f.printed().contains("final accuracy")));
        String watched = watching.stop();
        assertTrue(watched.lines().anyMatch(l -> l.startsWith("ddp-mnist") && l.contains("Running"))
                && watched.lines().anyMatch(l -> l.startsWith("ddp-mnist") && l.contains("Succeeded")), "kubectl get pj -w:\n" + watched);
        assertEquals("Succeeded", kubectl.run("get", "pj", "ddp-mnist", "-n", ns, "-o", "jsonpath={.status.phase}").orFail().out());

        List<String> logs = followed.stream().map(Kubectl.Watch::stop).toList();
        Set<String> accuracies = logs.stream().map(RealNodeJobs::finalAccuracy).collect(Collectors.toSet());
        assertEquals(1, accuracies.size(), "every rank ends with the same model: " + accuracies);
        for (int rank = 0; rank < ranks.size(); rank++) {
            assertTrue(logs.get(rank).contains("got 10, expected 10"), ranks.get(rank) + " took part in the all-reduce of 4 ranks");
        }
        assertTrue(logs.get(0).contains("saved model to /workspace/model.pt"));
        Pod master = admin.pods().inNamespace(ns).withName("ddp-mnist-master-0").get();
        assertEquals(RealNode.NAME, master.getSpec().getNodeName());
    }

    /**
     * The README's Kubeflow commands on a real node: `kubectl create -f` of the seed manifests, then
     * `kubectl get pods -l job-name=...` as the guides do. Each with the examples image in place of the
     * seed's (which no registry here serves) and its command (`python train.py`, or `torchrun train.py`
     * for the elastic seed, whose rendezvous Kubeflow's PET_* settings give torchrun); 01 asks for a GPU
     * per replica, which becomes a memory limit here (a CPU limit would be its request too). Not run:
     * 03 (a PersistentVolumeClaim the seed expects to exist) and 04 (GPUs).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"01-mnist-gloo", "02-mnist-gloo-demo", "05-elastic"})
    void theKubeflowSeedsTrainOnTheRealNode(String seed) throws IOException {
        String ns = install.namespace("kubeflow-seed-" + seed.substring(0, 2));
        String manifest = Files.readString(Path.of("kubernetes/examples/kubeflow/" + seed + ".yaml"))
                .replaceAll("image: (kubeflow/pytorch-dist-mnist-test:1.0|k8scc01covidacr.azurecr.io/\\S+)",
                        "image: torchjob-examples:0.1.0\n              command: [python, train.py]")
                .replace("nvidia.com/gpu: 1", "memory: 1Gi")
                .replace("image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727", "image: torchjob-examples:0.1.0")
                .replace("command: [\"torchrun\", \"/opt/pytorch-mnist/mnist.py\", \"--epochs=1\"]", "command: [torchrun, train.py]");
        assertTrue(manifest.contains("image: torchjob-examples:0.1.0") && !manifest.contains("nvidia.com/gpu")
                && !manifest.contains("mnist.py"), "the seed's lines are as this test expects:\n" + manifest);
        Matcher named = Pattern.compile("\n  name: \"?([a-z0-9-]+)\"?\n").matcher(manifest);
        assertTrue(named.find(), manifest);
        String name = named.group(1);
        kubectl.runWithInput(manifest, "create", "-n", ns, "-f", "-").orFail();
        await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1)).until(() -> {
            PyTorchJob job = admin.resources(PyTorchJob.class).inNamespace(ns).withName(name).get();
            return job.getStatus() != null && job.getStatus().conditions.stream()
                    .anyMatch(c -> ("Succeeded".equals(c.type) || "Failed".equals(c.type)) && "True".equals(c.status));
        });
        PyTorchJob job = admin.resources(PyTorchJob.class).inNamespace(ns).withName(name).get();
        String pods = kubectl.run("get", "pods", "-n", ns, "-l", "job-name=" + name, "-o", "name").orFail().out();
        assertTrue(job.getStatus().conditions.stream().anyMatch(c -> "Succeeded".equals(c.type) && "True".equals(c.status)),
                () -> "Succeeded: " + job.getStatus().conditions + "\n" + pods.lines().map(pod -> logs(ns, pod.replace("pod/", "")))
                        .collect(Collectors.joining("\n")));
        int world = (int) pods.lines().count();
        assertEquals(Map.of("01-mnist-gloo", 2, "02-mnist-gloo-demo", 4, "05-elastic", 2).get(seed), world, pods);
        String allReduced = "of %d got %d, expected %d".formatted(world, world * (world + 1) / 2, world * (world + 1) / 2);
        Set<String> accuracies = new java.util.HashSet<>();
        for (String pod : pods.lines().map(p -> p.replace("pod/", "")).toList()) {
            String log = logs(ns, pod);
            assertTrue(log.contains(allReduced), pod + " took part: " + allReduced + "\n" + log);
            accuracies.add(finalAccuracy(log));
        }
        assertEquals(1, accuracies.size(), "every rank ends with the same model: " + accuracies);
    }

    /**
     * The T9k seeds that train, applied as written (02's CPU request cut from 2 to 250m to fit the node;
     * the Secret 04 reads created first): each trains to Succeeded with all its ranks (four; 06, elastic
     * between 4 and 10, the 7 it expects), 05 and 06 through torchrun (the operator's command line, c10d
     * rendezvous at the first worker), 08 as a module.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"01-basic", "02-resources", "03-shared-memory", "04-env", "05-torchrun", "06-elastic", "07-best-practice",
        "08-python-module"})
    void theT9kSeedsTrainOnTheRealNode(String seed) throws IOException {
        String ns = install.namespace("seed-" + seed.substring(0, 2));
        String manifest = Files.readString(Path.of("kubernetes/examples/t9k/" + seed + ".yaml")).replace("cpu: 2\n", "cpu: 250m\n");
        if (seed.equals("04-env")) {
            kubectl.run("create", "secret", "generic", "secret-name", "-n", ns, "--from-literal=key-in-secret=s3cret").orFail();
        }
        kubectl.runWithInput(manifest, "apply", "-n", ns, "-f", "-").orFail();
        String name = admin.resources(PyTorchTrainingJob.class).inNamespace(ns).list().getItems().get(0).getMetadata().getName();
        PyTorchTrainingJob done = awaitT9k(ns, name, JobPhase.Succeeded);
        int world = done.getStatus().tasks.get(0).replicas.size();
        assertEquals(seed.equals("06-elastic") ? 7 : 4, world, "the replicas the seed asks for (06: expectedReplicas)");
        String allReduced = "of %d got %d, expected %d".formatted(world, world * (world + 1) / 2, world * (world + 1) / 2);
        for (int index = 0; index < world; index++) {
            assertTrue(logs(ns, name + "-worker-" + index).contains(allReduced), "worker " + index + " took part: " + allReduced);
        }
    }

    /**
     * A worker killed by its memory limit (a real OOM kill of the container's process: it allocates past
     * its 512Mi limit the first time, the marker on the node's disk keeps it from doing so again) under ExitCode: 137 is in T9k's
     * retryable set, so the pod is recreated, the restart counted once and said once, and the job
     * trains to the end.
     */
    @Test
    void aReplicaOomKilledByItsLimitIsRecreatedCountedOnceAndTheJobSucceeds() {
        String ns = install.namespace("oom");
        Path marker = RealNode.STATE.resolve("markers").resolve(ns);
        String worker = replica("worker", "ExitCode", """
                command: [sh, -c]
                args: ["if [ ! -e /marker/oom ]; then touch /marker/oom; exec python -c \\"x = b'1' * (1536 << 20)\\"; fi; exec python train.py"]
                env: [{name: EPOCHS, value: "3"}]
                resources: {requests: {cpu: 250m}, limits: {memory: 512Mi}}
                volumeMounts: [{name: marker, mountPath: /marker}]
                """, markerVolume(marker));
        submitT9k(ns, "oom", "backoffLimit: 2", training("master", "ExitCode", 3) + worker);
        PyTorchTrainingJob done = awaitT9k(ns, "oom", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "the OOM kill counted once");
        TaskStatus workers = done.getStatus().tasks.stream().filter(t -> "worker".equals(t.type)).findFirst().orElseThrow();
        assertEquals(1, workers.restartCount);
        List<String> restarted = events(ns, "JobRestarting");
        assertEquals(1, restarted.size(), restarted.toString());
        assertTrue(restarted.get(0).contains("exited with code 137 (OOMKilled)"), restarted.get(0));
    }

    /**
     * {@code kubectl torchjob} on the real node (docs/user-guide.md "Follow a job"): a master and two
     * workers, worker-0 OOM-killed by its limit once. {@code logs -f}, started as the job is submitted,
     * prints every rank's lines after its replica name (the recreated worker-0's too), one line for the
     * counted restart with 137, and ends with the outcome, exit 0; then {@code wait} answers at once,
     * {@code describe} lists the restart and the pods, and {@code logs --type worker --index 1} one replica.
     */
    @Test
    void kubectlTorchjobFollowsEveryRankAcrossAnOomKillAndEndsWithTheOutcome() throws IOException, InterruptedException {
        String ns = install.namespace("cli");
        Path marker = RealNode.STATE.resolve("markers").resolve(ns);
        String workers = replica("worker", "ExitCode", """
                command: [sh, -c]
                args: ["if [ \\"$HOSTNAME\\" = follow-worker-0 ] && [ ! -e /marker/oom ]; then touch /marker/oom; exec python -c \\"x = b'1' * (1536 << 20)\\"; fi; exec python train.py"]
                env: [{name: EPOCHS, value: "3"}]
                resources: {requests: {cpu: 250m}, limits: {memory: 512Mi}}
                volumeMounts: [{name: marker, mountPath: /marker}]
                """, markerVolume(marker)).replace("replicas: 1", "replicas: 2");
        Kubectl plugin = install.kubectlWithPlugin();
        submitT9k(ns, "follow", "backoffLimit: 2", training("master", "ExitCode", 3) + workers);
        Kubectl.Watch following = plugin.watch("torchjob", "logs", "follow", "-f", "-n", ns);
        Kubectl.Result timedOut = plugin.run("torchjob", "wait", "follow", "-n", ns, "--for", "Succeeded", "--timeout", "1s");
        assertEquals(2, timedOut.exitCode(), timedOut.out() + timedOut.err());

        assertEquals(0, following.awaitExit(TRAINING), following.printed());
        List<String> lines = following.printed().lines().toList();
        for (String replica : List.of("master-0", "worker-0", "worker-1")) {
            assertTrue(lines.stream().anyMatch(l -> l.startsWith("[" + replica + "] ") && l.contains("final accuracy")),
                    replica + " trained to the end:\n" + following.printed());
        }
        List<String> restarts = lines.stream().filter(l -> l.startsWith("[torchjob] ") && l.contains("restarts as a group")).toList();
        assertEquals(1, restarts.size(), following.printed());
        assertTrue(restarts.get(0).startsWith("[torchjob] worker-0: pod follow-worker-0 (container pytorch) exited with code 137 (OOMKilled)")
                && restarts.get(0).contains("restart 1 of backoffLimit 2"), restarts.get(0));
        assertTrue(lines.get(lines.size() - 1).startsWith("[torchjob] job follow Succeeded"), following.printed());
        System.out.println("[kubectl torchjob logs -f] " + lines.stream().collect(Collectors.groupingBy(l -> l.substring(0, l.indexOf(']') + 1),
                java.util.TreeMap::new, Collectors.counting())) + " lines; " + String.join(" | ",
                lines.stream().filter(l -> l.startsWith("[torchjob]")).toList()));

        Kubectl.Result waited = plugin.run("torchjob", "wait", "follow", "-n", ns, "--for", "Succeeded", "--timeout", "10s");
        assertEquals(0, waited.exitCode(), waited.out() + waited.err());
        String described = plugin.run("torchjob", "describe", "follow", "-n", ns).orFail().out();
        assertTrue(described.contains("Restarts:  1/2"), described);
        assertTrue(described.lines().anyMatch(l -> l.contains("JobRestarting") && l.contains("follow-worker-0") && l.contains("137")), described);
        assertTrue(described.lines().anyMatch(l -> l.matches("\\s+worker-0\\s+follow-worker-0\\s+" + RealNode.NAME + "\\s+Succeeded.*")), described);
        String one = plugin.run("torchjob", "logs", "follow", "-n", ns, "--type", "worker", "--index", "1").orFail().out();
        assertTrue(!one.isBlank() && one.lines().allMatch(l -> l.startsWith("[worker-1] ")), one);
        String stamped = plugin.run("torchjob", "logs", "follow", "-n", ns, "--type", "master", "--timestamps").orFail().out();
        assertTrue(!stamped.isBlank() && stamped.lines().allMatch(l -> l.matches("\\[master-0\\] \\d{4}-\\d\\d-\\d\\dT\\S+Z .*")), stamped);
        Thread.sleep(2000); // the last line is older than a second now
        assertEquals("", plugin.run("torchjob", "logs", "follow", "-n", ns, "--since", "1s").orFail().out(),
                "nothing in the last second of a job that has ended");
    }

    /** Exit 1 under ExitCode is permanent: the job fails at once, naming the pod and the code, and counts nothing. */
    @Test
    void aReplicaExitingWithOneFailsTheJob() throws IOException, InterruptedException {
        String ns = install.namespace("exit1");
        String worker = RealNodeJobs.workerExiting(1);
        submitT9k(ns, "exit1", "backoffLimit: 2", training("master", "ExitCode", 3) + worker);
        // kubectl torchjob, as a script would use it: a follow and a wait, both ending with the failure.
        Kubectl plugin = install.kubectlWithPlugin();
        Kubectl.Watch following = plugin.watch("torchjob", "logs", "exit1", "-f", "-n", ns);
        Kubectl.Watch waiting = plugin.watch("torchjob", "wait", "exit1", "-n", ns, "--for", "Succeeded");
        PyTorchTrainingJob failed = awaitT9k(ns, "exit1", JobPhase.Failed);
        assertEquals(1, following.awaitExit(Duration.ofSeconds(30)), following.printed());
        List<String> followed = following.printed().lines().toList();
        assertTrue(followed.get(followed.size() - 1).startsWith("[torchjob] job exit1 Failed: ")
                && followed.get(followed.size() - 1).contains("pod exit1-worker-0 (container pytorch) exited with code 1"), following.printed());
        assertTrue(followed.stream().anyMatch(l -> l.startsWith("[worker-0] ") && l.contains("exiting with code 1 as asked")), following.printed());
        assertEquals(1, waiting.awaitExit(Duration.ofSeconds(30)), waiting.printed());
        assertTrue(waiting.printed().strip().endsWith("; not Succeeded"), waiting.printed());
        assertEquals(0, failed.getStatus().backoffCount);
        String message = failed.getStatus().conditions.stream().filter(c -> "Failed".equals(c.type)).findFirst().orElseThrow().message;
        assertTrue(message.contains("pod exit1-worker-0 (container pytorch) exited with code 1"), message);
        assertTrue(message.contains("exiting with code 1 as asked"), "the crash's last output: " + message);
    }

    /**
     * The downward API as the real kubelet gives a container its env: the values the local mode gives
     * (LocalModeIT, docs/local-mode.md) come from the same rules — a CPU limit of 700m is 1 thread (rounded up),
     * a memory request not set is the limit (the API server's defaulting), units by the divisor.
     */
    @Test
    void theKubeletsDownwardApiGivesWhatTheLocalModeGives() {
        String ns = install.namespace("downward");
        submitT9k(ns, "downward", "", replica("master", "Never", """
                command: [sh, -c, 'echo "pod=$POD_NAME ns=$NAMESPACE threads=$OMP_NUM_THREADS mem=$MEMORY cpu-request=$CPU_REQUEST mem-request=$MEMORY_REQUEST"']
                resources: {requests: {cpu: 100m}, limits: {cpu: 700m, memory: 256Mi}}
                env:
                - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
                - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
                - {name: OMP_NUM_THREADS, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
                - {name: MEMORY, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
                - {name: CPU_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
                - {name: MEMORY_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
                """, ""));
        awaitT9k(ns, "downward", JobPhase.Succeeded);
        assertEquals("pod=downward-master-0 ns=" + ns + " threads=1 mem=256 cpu-request=100 mem-request=256",
                logs(ns, "downward-master-0").strip());
    }

    /**
     * Kubeflow's OnFailure, restarting per replica (restart scope Replica, Kubeflow v1's behaviour): the
     * kubelet restarts the crashed container in place; each restart is counted once, `kubectl logs
     * --previous` shows the crash, and the replica's lastFailure in `status.tasks` has the real termination
     * message. The worker crashes every time (FAIL_ALWAYS) with backoffLimit 2: the second in-place restart
     * reaches it and the job fails (Kubeflow's rule).
     */
    @Test
    void inPlaceRestartsAreCountedPerKubeletRestartUntilTheBudgetIsSpent() {
        String ns = install.namespace("in-place");
        String manifest = """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: inplace, annotations: {torchjob.dev/restart-scope: Replica}}
                spec:
                  runPolicy: {backoffLimit: 2}
                  pytorchReplicaSpecs:
                    Master:
                      restartPolicy: OnFailure
                      template: {spec: {containers: [{name: pytorch, image: torchjob-examples:0.1.0, command: [python, train.py],
                        resources: {requests: {cpu: 250m}}}]}}
                    Worker:
                      replicas: 1
                      restartPolicy: OnFailure
                      template: {spec: {containers: [{name: pytorch, image: torchjob-examples:0.1.0, command: [python, train.py],
                        env: [{name: FAIL_ONCE_EXIT_CODE, value: "3"}, {name: FAIL_RANKS, value: "1"}, {name: FAIL_ALWAYS, value: "1"}],
                        resources: {requests: {cpu: 250m}}}]}}
                """;
        kubectl.runWithInput(manifest, "apply", "-n", ns, "-f", "-").orFail();
        PyTorchJob counted = await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1))
                .until(() -> admin.resources(PyTorchJob.class).inNamespace(ns).withName("inplace").get(),
                        j -> j != null && j.getStatus() != null && j.getStatus().backoffCount != null && j.getStatus().backoffCount >= 1);
        // The crash is in the pod's own logs. When the restarted container fails again within its back-off, the kubelet
        // removes the first one while its status still names it as the last state, until the next start: then
        // `--previous` prints "unable to retrieve container logs for …" (exit 0) and the crash is the current
        // container's log (docs/kubeflow.md). Either way the pod is the same one, restarted in place.
        String asked = "rank 1: exiting with code 3 as asked";
        List<String> answers = new ArrayList<>();
        StringBuilder via = new StringBuilder();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(300)).untilAsserted(() -> {
            String previous = kubectl.run("logs", "--previous", "-n", ns, "inplace-worker-0").out();
            String current = previous.contains(asked) ? "" : kubectl.run("logs", "-n", ns, "inplace-worker-0").out();
            answers.add(previous.trim() + " / " + current.trim());
            assertTrue(previous.contains(asked) || current.contains(asked), answers.toString());
            via.append(previous.contains(asked) ? "--previous" : "the current log");
        });
        assertTrue(admin.pods().inNamespace(ns).withName("inplace-worker-0").get().getStatus().getContainerStatuses().get(0)
                .getRestartCount() >= 1, "restarted in place: the same pod, its container's restart count");
        System.out.printf("the crash of a container the kubelet restarted in place: in its pod's logs (%s), asked %d times%n",
                via, answers.size());
        String lastFailure = counted.getStatus().tasks.stream().filter(t -> "Worker".equalsIgnoreCase(t.type)).findFirst().orElseThrow()
                .replicas.get(0).lastFailure;
        assertTrue(lastFailure != null && lastFailure.contains("exiting with code 3 as asked"), String.valueOf(lastFailure));

        await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1)).until(() -> admin.resources(PyTorchJob.class).inNamespace(ns)
                .withName("inplace").get().getStatus().conditions.stream().anyMatch(c -> "Failed".equals(c.type) && "True".equals(c.status)));
        PyTorchJob failed = admin.resources(PyTorchJob.class).inNamespace(ns).withName("inplace").get();
        assertEquals(2, failed.getStatus().backoffCount, "each of the kubelet's restarts counted once");
        assertEquals(1, events(ns, "ReplicaRestarted").size(), "the first restart said; the second is the failure: "
                + events(ns, null));
        assertTrue(events(ns, "ReplicaFailed").get(0).contains("restart budget is spent"), events(ns, "ReplicaFailed").toString());
    }

    /**
     * The T9k debug seed as written: the pods run `sleep inf` instead of training, and `kubectl exec`
     * reaches the training container, with the operator's environment, to start it by hand.
     */
    @Test
    void aDebugJobsPodsSleepAndKubectlExecReachesTheTrainingContainer() throws IOException {
        String ns = install.namespace("debug");
        kubectl.run("apply", "-n", ns, "-f", "kubernetes/examples/t9k/11-debug-default.yaml").orFail();
        await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1)).until(() -> {
            Pod pod = admin.pods().inNamespace(ns).withName("pytorch-debug-worker-1").get();
            return pod != null && pod.getStatus() != null && "Running".equals(pod.getStatus().getPhase());
        });
        String out = kubectl.run("exec", "-n", ns, "pytorch-debug-worker-1", "--", "sh", "-c",
                "echo rank $RANK of $WORLD_SIZE; python -c 'import torch; print(\"torch\", torch.__version__)'").orFail().out();
        assertTrue(out.contains("rank 1 of 2") && out.contains("torch 1.13"), out);
        assertEquals(List.of("sleep", "inf"), admin.pods().inNamespace(ns).withName("pytorch-debug-worker-0").get().getSpec()
                .getContainers().get(0).getCommand());
    }

    /**
     * A training job deleted while it trains: its processes get SIGTERM (train.py handles it: PID 1 in a
     * container ignores a SIGTERM it does not handle) and the pods are gone within seconds, not after
     * the 30 s grace period; nothing of the job is left.
     */
    @Test
    void aJobDeletedWhileTrainingStopsAtOnceAndLeavesNothing() {
        String ns = install.namespace("deleted");
        submitT9k(ns, "long", "backoffLimit: 2", training("master", "OnFailure", 100_000) + training("worker", "OnFailure", 100_000));
        awaitLogged(ns, "long-master-0", "epoch 2/");
        long start = System.nanoTime();
        kubectl.run("delete", "pj", "long", "-n", ns, "--wait=false").orFail();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
                .until(() -> admin.pods().inNamespace(ns).list().getItems().isEmpty());
        Duration stopped = Duration.ofNanos(System.nanoTime() - start);
        System.out.printf("a training job's pods gone %d ms after its deletion%n", stopped.toMillis());
        assertTrue(stopped.compareTo(Duration.ofSeconds(15)) < 0, "stopped by SIGTERM, not killed after the grace period: " + stopped);
        assertTrue(admin.services().inNamespace(ns).list().getItems().isEmpty(), "no Service left");
    }

    /**
     * A training job paused, and another past its activeDeadlineSeconds: their processes get SIGTERM
     * and the pods are gone within seconds; the paused job says Paused, the other DeadlineExceeded.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"pause", "deadline"})
    void aPausedOrTimedOutJobStopsTrainingAtOnce(String how) {
        String ns = install.namespace(how);
        submitT9k(ns, "long", how.equals("deadline") ? "activeDeadlineSeconds: 30" : "backoffLimit: 2",
                training("master", "OnFailure", 100_000) + training("worker", "OnFailure", 100_000));
        awaitLogged(ns, "long-master-0", "epoch 2/");
        if (how.equals("pause")) {
            kubectl.run("patch", "pj", "long", "-n", ns, "--type=merge", "-p", "{\"spec\":{\"runMode\":{\"pause\":{\"enabled\":true}}}}")
                    .orFail();
        }
        PyTorchTrainingJob stopped = await().atMost(TRAINING).pollInterval(Duration.ofMillis(200)).until(() -> t9k(ns, "long"),
                j -> j.getStatus().phase == (how.equals("pause") ? JobPhase.Paused : JobPhase.Failed));
        long start = System.nanoTime();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
                .until(() -> admin.pods().inNamespace(ns).list().getItems().isEmpty());
        Duration gone = Duration.ofNanos(System.nanoTime() - start);
        System.out.printf("%s: the pods gone %d ms after the job said so%n", how, gone.toMillis());
        assertTrue(gone.compareTo(Duration.ofSeconds(15)) < 0, "stopped by SIGTERM, not killed after the grace period: " + gone);
        if (how.equals("deadline")) {
            assertEquals("DeadlineExceeded", stopped.getStatus().conditions.stream().filter(c -> "Failed".equals(c.type))
                    .findFirst().orElseThrow().reason);
        }
    }

    /**
     * Kueue on the real node: the real Kueue admits a queued job onto a ResourceFlavor whose node labels
     * are the real node's; the operator puts the flavor's labels into the pods' nodeSelector, and the
     * pods land on the real node and train to Succeeded.
     */
    @Test
    void aJobKueueAdmitsLandsOnTheRealNodeThroughItsFlavorsNodeLabels() {
        String ns = install.namespace("kueue-node");
        try (KueueInstall kueue = KueueInstall.start(install.cluster, KueueInstall.DEFAULT_PODS_READY_TIMEOUT)) {
            kueue.queuesOn(ns, RealNodeJobs.realNodeFlavor(), "1");
            String manifest = """
                    apiVersion: batch.tensorstack.dev/v1beta1
                    kind: PyTorchTrainingJob
                    metadata: {name: queued, labels: {kueue.x-k8s.io/queue-name: user-queue}}
                    spec:
                      replicaSpecs:
                    %s""".formatted((training("master", "OnFailure", 3) + training("worker", "OnFailure", 3)).indent(2));
            kubectl.runWithInput(manifest, "apply", "-n", ns, "-f", "-").orFail();
            awaitT9k(ns, "queued", JobPhase.Succeeded);
            Pod worker = admin.pods().inNamespace(ns).withName("queued-worker-0").get();
            assertEquals("true", worker.getSpec().getNodeSelector().get("test.torchjob.dev/real-node"), "the flavor's node label");
            assertEquals(RealNode.NAME, worker.getSpec().getNodeName());
        }
    }

    /**
     * Pods that cannot start, each for a reason only the real scheduler or kubelet gives: the master mounts
     * a ConfigMap that does not exist (FailedMount, said only in the pod's events), the worker asks for a
     * node label no node has (Unschedulable), then, once the node has it, for an image the node does not
     * have and cannot pull (ImagePullBackOff: every registry is closed). The job says which replica and
     * why in its Running condition and its replicas' status, one Warning event per pod and cause, counts
     * nothing with backoffLimit 0, and trains to Succeeded by itself as each cause is fixed (the ConfigMap
     * made, the node labelled, the image arriving on the node).
     */
    @Test
    void podsThatCannotStartAreSaidOnceCountNothingAndStartByThemselvesWhenFixed() {
        String ns = install.namespace("cannot-start");
        String image = "docker.io/library/torchjob-examples:not-yet-" + ns;
        String label = "test.torchjob.dev/pool-" + ns;
        node.forgetImage(image);
        try {
            String master = replica("master", "ExitCode", """
                    command: [python, train.py]
                    env: [{name: EPOCHS, value: "2"}]
                    resources: {requests: {cpu: 250m}}
                    volumeMounts: [{name: settings, mountPath: /settings}]
                    """, "volumes: [{name: settings, configMap: {name: settings}}]\n");
            String worker = replica("worker", "ExitCode", """
                    command: [python, train.py]
                    env: [{name: EPOCHS, value: "2"}]
                    resources: {requests: {cpu: 250m}}
                    """, "nodeSelector: {%s: \"true\"}\n".formatted(label)).replace("image: torchjob-examples:0.1.0", "image: " + image);
            submitT9k(ns, "held", "backoffLimit: 0", master + worker);

            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1))
                    .until(() -> "FailedMount".equals(cannotStart(ns, "held", 0)) && "Unschedulable".equals(cannotStart(ns, "held", 1)));
            var running = t9k(ns, "held").getStatus().conditions.stream().filter(c -> "Running".equals(c.type)).findFirst().orElseThrow();
            assertEquals("False", running.status);
            assertTrue(running.message.contains("pod held-master-0 cannot start: MountVolume.SetUp failed for volume \"settings\" : "
                    + "configmap \"settings\" not found"), running.message);
            assertTrue(running.message.contains("pod held-worker-0 cannot be scheduled: 0/"), running.message);
            assertTrue(running.message.contains("didn't match Pod's node affinity/selector"), running.message);

            kubectl.run("create", "configmap", "settings", "-n", ns, "--from-literal=lr=0.01").orFail();
            kubectl.run("label", "node", RealNode.NAME, label + "=true").orFail();
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1))
                    .until(() -> "ImagePullBackOff".equals(cannotStart(ns, "held", 1)));
            String pull = t9k(ns, "held").getStatus().tasks.get(1).replicas.get(0).cannotStart.message;
            assertTrue(pull.contains(image.substring(image.lastIndexOf('/') + 1)), pull);

            node.tagImage("docker.io/library/torchjob-examples:0.1.0", image);
            PyTorchTrainingJob done = awaitT9k(ns, "held", JobPhase.Succeeded);
            assertEquals(0, done.getStatus().backoffCount, "nothing counted");
            assertTrue(done.getStatus().tasks.stream().allMatch(t -> t.restartCount == null || t.restartCount == 0));
            List<String> said = events(ns, "ReplicaCannotStart");
            assertEquals(3, said.size(), "one per pod and cause: " + said);
            assertEquals(1, said.stream().filter(m -> m.startsWith("pod held-master-0 cannot start: MountVolume.SetUp failed")).count(), said.toString());
            assertEquals(1, said.stream().filter(m -> m.startsWith("pod held-worker-0 cannot be scheduled")).count(), said.toString());
            assertEquals(1, said.stream().filter(m -> m.startsWith("pod held-worker-0 (container pytorch) cannot start: Err")
                    || m.startsWith("pod held-worker-0 (container pytorch) cannot start: ImagePullBackOff")).count(), said.toString());
        } finally {
            kubectl.run("label", "node", RealNode.NAME, label + "-");
            node.forgetImage(image);
        }
    }

    /** Why the replica at this index of the job's replicas (master 0, worker 1) cannot start, as its status says; null if it can. */
    private static String cannotStart(String ns, String name, int task) {
        PyTorchTrainingJob job = t9k(ns, name);
        if (job == null || job.getStatus() == null || job.getStatus().tasks.size() <= task || job.getStatus().tasks.get(task).replicas.isEmpty()) {
            return null;
        }
        var replica = job.getStatus().tasks.get(task).replicas.get(0);
        return replica.cannotStart == null ? null : replica.cannotStart.reason;
    }

    /**
     * Measured (-Dtorchjob.realnode.rounds=5 for the median of 5 in docs/testing.md; one round in CI):
     * from `kubectl apply` to every rank past init_process_group (its all-reduce line, by the kubelet's
     * timestamp), and from a replica's exit (137, under ExitCode: recreated) to its new pod past
     * init_process_group again. Printed, not asserted: a speed goal is a benchmark, not a timed test.
     */
    @Test
    void timeToTrainAndToTrainAgainAfterAFailure() throws IOException {
        List<Long> toTraining = new ArrayList<>();
        List<Long> toTrainingAgain = new ArrayList<>();
        int rounds = Integer.getInteger("torchjob.realnode.rounds", 1); // 5 for the figures in docs/testing.md
        for (int round = 0; round < rounds; round++) {
            String ns = install.namespace("timing");
            Path marker = RealNode.STATE.resolve("markers").resolve(ns);
            String worker = RealNodeJobs.workerFailingOnce(137, marker);
            java.time.Instant submitted = java.time.Instant.now();
            submitT9k(ns, "t", "backoffLimit: 2", training("master", "ExitCode", 3) + worker);
            PyTorchTrainingJob done = awaitT9k(ns, "t", JobPhase.Succeeded);
            assertEquals(1, done.getStatus().backoffCount);
            java.time.Instant masterIn = RealNodeJobs.loggedAt(ns, "t-master-0", "all-reduce check");
            java.time.Instant workerIn = RealNodeJobs.loggedAt(ns, "t-worker-0", "all-reduce check");
            toTraining.add(java.time.Duration.between(submitted, masterIn.isAfter(workerIn) ? masterIn : workerIn).toMillis());
            String failedAt = events(ns, "JobRestarting").get(0);
            assertTrue(failedAt.contains("exited with code 137"), failedAt);
            // The first worker wrote its marker (on the node's disk) right before it exited.
            java.time.Instant exited = Files.getLastModifiedTime(marker.resolve(".failed-once-rank-1")).toInstant();
            toTrainingAgain.add(java.time.Duration.between(exited, workerIn).toMillis());
            if (toTrainingAgain.get(toTrainingAgain.size() - 1) > 20_000) {
                System.out.printf("slow round: worker exited %s%nmaster:%n%s%nworker:%n%s%n", exited,
                        kubectl.run("logs", "--timestamps", "-n", ns, "t-master-0").out(),
                        kubectl.run("logs", "--timestamps", "-n", ns, "t-worker-0").out());
            }
        }
        System.out.printf("real node: apply -> every rank past init_process_group %s ms (median %d); a replica's exit 137 -> its new pod"
                + " past init_process_group %s ms (median %d)%n", toTraining, median(toTraining), toTrainingAgain, median(toTrainingAgain));
    }

    static long median(List<Long> values) {
        return values.stream().sorted().toList().get(values.size() / 2);
    }

}
