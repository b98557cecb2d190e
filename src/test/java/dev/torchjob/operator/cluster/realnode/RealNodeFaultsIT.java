package dev.torchjob.operator.cluster.realnode;

import static dev.torchjob.operator.cluster.RealNodeJobs.TRAINING;
import static dev.torchjob.operator.cluster.RealNodeJobs.awaitLogged;
import static dev.torchjob.operator.cluster.RealNodeJobs.awaitT9k;
import static dev.torchjob.operator.cluster.RealNodeJobs.events;
import static dev.torchjob.operator.cluster.RealNodeJobs.logs;
import static dev.torchjob.operator.cluster.RealNodeJobs.replica;
import static dev.torchjob.operator.cluster.RealNodeJobs.submitT9k;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cluster.AppWrapperController;
import dev.torchjob.operator.cluster.GangSchedulers;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.KubeflowTrainingOperator;
import dev.torchjob.operator.cluster.KueueInstall;
import dev.torchjob.operator.cluster.NodeContainer;
import dev.torchjob.operator.cluster.OnTheRealNode;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.cluster.RealNode;
import dev.torchjob.operator.cluster.RealNodeJobs;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * One rank's fault in the middle of real DDP training on the real node: after the rendezvous, the rank's
 * process is SIGKILLed from the machine by its PID, OOM-killed by its container's memory limit, frozen, cut
 * off from the network, or its pod deleted with kubectl; every other rank then fails in its collective (at
 * once, or once the process group's timeout is over). Each job restarts as a group for one
 * restart, named by its cause, resumes from its checkpoint and succeeds; a rank whose code raises fails the
 * job, named. The time from the fault to every rank past {@code init_process_group} again is printed.
 */
@ExtendWith(OnTheRealNode.class)
class RealNodeFaultsIT {
    static final int EPOCHS = 40;
    /** Epochs enough (about a minute) for a fault that the kubelet notices on its own schedule. */
    static final int KUBELET_PACE_EPOCHS = 300;
    /**
     * Epochs enough (about 15 s) that a stop asked through the API after the third (a pause, a drain, a taint) lands
     * mid-training on a busy machine: with 40 (5 s) the ranks once finished, removing their checkpoint, before a
     * pause's deletions reached them, and once before a freshly started taint eviction controller deleted them.
     */
    static final int STOPPED_THROUGH_THE_API_EPOCHS = 120;
    static final OperatorInstall install = OperatorInstall.get();
    static final KubernetesClient admin = install.cluster.admin();
    static final Kubectl kubectl = install.cluster.kubectl();
    static final RealNode node = RealNode.get();
    /** By the case's namespace (its prefix): the hang cases' figures include the process group's timeout. */
    static final Map<String, Long> faultToTraining = new LinkedHashMap<>();
    static final List<Long> sidecarStopped = new ArrayList<>();
    static final List<Long> nativeSidecarStopped = new ArrayList<>();
    static final List<Long> peerEnded = new CopyOnWriteArrayList<>();

    @AfterAll
    static void figures() {
        System.out.printf("real node: a rank's fault mid-training -> every rank past init_process_group again: %s ms%n", faultToTraining);
        System.out.printf("real node: a finished training's sidecar stopped by its kubelet after: %s ms (native sidecars: %s ms)%n",
                sidecarStopped, nativeSidecarStopped);
        System.out.printf("real node: a torchrun worker killed -> each peer's worker ended after: %s ms%n", peerEnded);
    }

    /** The master: trains, keeps its checkpoint in a folder on the node's disk (the example's CHECKPOINT_PATH). */
    static String master(String policy, Path state) {
        return master(policy, state, EPOCHS);
    }

    static String master(String policy, Path state, int epochs) {
        return master(policy, state, epochs, "");
    }

    /** {@code sidecar}: containers after the training one ({@link #SIDECAR}), fields of the pod, or nothing. */
    static String master(String policy, Path state, int epochs, String sidecar) {
        return master(policy, state, epochs, sidecar, "");
    }

    /** {@code env} adds to the master's environment (YAML flow entries after a comma). */
    static String master(String policy, Path state, int epochs, String sidecar, String env) {
        return replica("master", policy, """
                command: [python, train.py]
                env: [{name: EPOCHS, value: "%d"}, {name: CHECKPOINT_PATH, value: /state/checkpoint.pt}%s]
                resources: {requests: {cpu: 250m}}
                volumeMounts: [{name: state, mountPath: /state}]
                """.formatted(epochs, env), sidecar + state(state));
    }

    /**
     * A container beside the training one, as a service mesh injects its proxy: it runs until it is stopped
     * (SIGTERM ends it at once), so the kubelet keeps its pod Running after the training ended.
     */
    static final String SIDECAR = """
            - name: proxy
              image: torchjob-examples:0.1.0
              command: [python, -c, "import signal, time; signal.signal(signal.SIGTERM, lambda *_: exit(0)); time.sleep(10**6)"]
            """;

    /** {@link #SIDECAR} as Kubernetes' own sidecar: an init container with {@code restartPolicy: Always}, which the kubelet ends itself. */
    static final String NATIVE_SIDECAR = """
            initContainers:
            - name: proxy
              image: torchjob-examples:0.1.0
              restartPolicy: Always
              command: [python, -c, "import signal, time; signal.signal(signal.SIGTERM, lambda *_: exit(0)); time.sleep(10**6)"]
            """;

    /** {@link #SIDECAR} as a YAML flow map, after a comma: for {@link #kubeflowJob}. */
    static final String SIDECAR_FLOW = ", {name: proxy, image: torchjob-examples:0.1.0, command: [python, -c, "
            + "\"import signal, time; signal.signal(signal.SIGTERM, lambda *_: exit(0)); time.sleep(10**6)\"]}";

    /** A worker; {@code env} adds to its environment, {@code limits} are its resource limits (a YAML flow map). */
    static String worker(String policy, Path state, String env, String limits) {
        return worker(policy, state, env, limits, EPOCHS);
    }

    static String worker(String policy, Path state, String env, String limits, int epochs) {
        return worker(policy, state, env, limits, epochs, "");
    }

    static String worker(String policy, Path state, String env, String limits, int epochs, String sidecar) {
        return replica("worker", policy, """
                command: [python, /workspace/train.py]
                workingDir: /state
                env: [{name: EPOCHS, value: "%d"}%s]
                resources: {requests: {cpu: 250m}, limits: %s}
                volumeMounts: [{name: state, mountPath: /state}]
                """.formatted(epochs, env, limits), sidecar + state(state));
    }

    /**
     * Kubeflow's kind: a Master and two Workers under one restart policy, training as {@link #worker} does
     * ({@code env} added, {@code limits} a YAML flow map), their folder on the node's disk.
     */
    static String kubeflowJob(String policy, Path state, String env, String limits) {
        return kubeflowJob(policy, state, env, limits, "");
    }

    /** {@code sidecar}: containers after the training one, each a YAML flow map after a comma ({@link #SIDECAR_FLOW}), or nothing. */
    static String kubeflowJob(String policy, Path state, String env, String limits, String sidecar) {
        String container = """
                      template: {spec: {containers: [{name: pytorch, image: torchjob-examples:0.1.0, command: [python, /workspace/train.py],
                        workingDir: /state, env: [{name: EPOCHS, value: "%d"}%s],
                        resources: {requests: {cpu: 250m}, limits: %s}, volumeMounts: [{name: state, mountPath: /state}]}%s],
                        volumes: [{name: state, hostPath: {path: %s, type: DirectoryOrCreate}}]}}
                """.formatted(EPOCHS, env, limits, sidecar, state);
        return """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: kf}
                spec:
                  runPolicy: {backoffLimit: 2}
                  pytorchReplicaSpecs:
                    Master:
                      restartPolicy: %s
                %s    Worker:
                      replicas: 2
                      restartPolicy: %s
                %s""".formatted(policy, container, policy, container);
    }

    static String state(Path folder) {
        return "volumes: [{name: state, hostPath: {path: " + folder + ", type: DirectoryOrCreate}}]\n";
    }

    static Set<String> podUids(String ns) {
        return admin.pods().inNamespace(ns).list().getItems().stream().map(p -> p.getMetadata().getUid()).collect(Collectors.toSet());
    }

    /** SIGKILL to the pod's training process, from the machine, as the kernel or a kubelet would send it. */
    static Instant killFromTheMachine(String ns, String pod) {
        long pid = NodeContainer.of(node, admin.pods().inNamespace(ns).withName(pod).get()).pid();
        Instant at = Instant.now();
        assertTrue(ProcessHandle.of(pid).orElseThrow().destroyForcibly(), "SIGKILL to " + pod + " (pid " + pid + ")");
        return at;
    }

    /**
     * SIGSTOP to the pod's training process, from the machine: it hangs as a rank stuck in a driver call or a
     * deadlock does, holding its connections open and answering nobody; the kubelet's SIGKILL still ends it.
     */
    static Instant freezeFromTheMachine(String ns, String pod) {
        long pid = NodeContainer.of(node, admin.pods().inNamespace(ns).withName(pod).get()).pid();
        return onTheMachine(pod + " frozen", "bash", "-c", "kill -STOP " + pid); // bash's own kill: no procps needed
    }

    /** The pod's interface set down in its network namespace, as a failed NIC or cable leaves it: no connection is reset. */
    static Instant cutOffFromTheNetwork(String ns, String pod) {
        long pid = NodeContainer.of(node, admin.pods().inNamespace(ns).withName(pod).get()).pid();
        return onTheMachine(pod + " cut off", "nsenter", "-t", String.valueOf(pid), "-n", "ip", "link", "set", "eth0", "down");
    }

    /** Runs a command on the machine the node runs on; when it ran. */
    private static Instant onTheMachine(String what, String... command) {
        Instant at = Instant.now();
        try {
            assertEquals(0, new ProcessBuilder(command).inheritIO().start().waitFor(), what + ": " + String.join(" ", command));
        } catch (java.io.IOException | InterruptedException e) {
            throw new AssertionError(what + ": " + String.join(" ", command), e);
        }
        return at;
    }

    /** The fault to the last rank's all-reduce line in its new pod (the kubelet's timestamps), recorded. */
    static void recordTimeToTrainAgain(String ns, Instant fault, String... pods) {
        Instant last = fault;
        for (String pod : pods) {
            Instant in = RealNodeJobs.loggedAt(ns, pod, "all-reduce check");
            last = in.isAfter(last) ? in : last;
        }
        faultToTraining.put(ns.substring(0, ns.lastIndexOf('-')), Duration.between(fault, last).toMillis());
    }

    /** One group restart named by its cause; the new group resumed from the checkpoint and trained to the end. */
    static void assertOneRestartResumed(String ns, String job, String causeStart, Set<String> before) {
        List<String> restarting = events(ns, "JobRestarting");
        assertEquals(1, restarting.size(), "one incident, said once: " + events(ns, null));
        assertTrue(restarting.get(0).startsWith(causeStart), restarting.get(0));
        assertTrue(restarting.get(0).contains("the job restarts as a group (restart 1 of backoffLimit 2"), restarting.get(0));
        assertTrue(events(ns, "ReplicaRestarted").isEmpty(), events(ns, null).toString());
        String master = logs(ns, job + "-master-0");
        assertTrue(master.matches("(?s).*rank 0: resuming at epoch \\d+ from /state/checkpoint.pt.*"), master);
        assertTrue(master.contains("final accuracy"), master);
        Set<String> now = podUids(ns);
        assertTrue(now.stream().noneMatch(before::contains), "no pod of the old group is left");
    }

    @Test
    void aRankKilledFromTheMachineMidTrainingRestartsTheJobOnceAndItResumes() {
        String ns = install.namespace("killed");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "k", "backoffLimit: 2", master("ExitCode", state) + worker("ExitCode", state, "", "{}"));
        awaitLogged(ns, "k-master-0", "epoch 3/" + EPOCHS);
        Set<String> before = podUids(ns);
        Instant fault = killFromTheMachine(ns, "k-worker-0");
        PyTorchTrainingJob done = awaitT9k(ns, "k", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
        assertOneRestartResumed(ns, "k", "pod k-worker-0 (container pytorch) exited with code 137 (Error)", before);
        recordTimeToTrainAgain(ns, fault, "k-master-0", "k-worker-0");
    }

    /** The process group's timeout of the hang tests: a peer that does not answer for 20 s is lost. */
    static final String GROUP_TIMEOUT_20S = ", {name: PROCESS_GROUP_TIMEOUT, value: \"20\"}";

    /**
     * A rank that hangs mid-training ({@code frozen}) fails nothing itself: it stays Running, and its peer waits in
     * its collective for the process group's timeout (20 s here, PROCESS_GROUP_TIMEOUT), then exits 1 saying gloo
     * timed out. A rank {@code cut off} from the network: no connection is reset, both ranks time out and exit 1.
     * Under ExitCode neither exit is a code error: every rank that stopped says a peer did not answer. One restart,
     * a rank still running stopped with the rest (its kubelet's SIGKILL), resumed from the checkpoint.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"frozen", "cut off"})
    void aRankThatHangsOrIsCutOffMidTrainingIsOneRestartOnceTheCollectivesTimeOut(String fault) {
        String ns = install.namespace("hung-" + fault.replace(' ', '-'));
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "h", "backoffLimit: 2", master("ExitCode", state, EPOCHS, "", GROUP_TIMEOUT_20S)
                + worker("ExitCode", state, GROUP_TIMEOUT_20S, "{}"));
        awaitLogged(ns, "h-master-0", "epoch 3/" + EPOCHS);
        Set<String> before = podUids(ns);
        Instant at = fault.equals("frozen") ? freezeFromTheMachine(ns, "h-worker-0") : cutOffFromTheNetwork(ns, "h-worker-0");
        PyTorchTrainingJob done = awaitT9k(ns, "h", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
        assertOneRestartResumed(ns, "h", "pod h-", before);
        String said = events(ns, "JobRestarting").get(0);
        assertTrue(said.contains("; each says a peer was lost and none failed on its own (the network between them, a rank that hangs, "
                + "or a rank stopped where no pod shows it); "), said);
        assertTrue(said.contains("Timed out waiting 20000ms for"), "the cause's last output: " + said);
        if (fault.equals("frozen")) {
            assertTrue(said.startsWith("pod h-master-0 (container pytorch) exited with code 1 (Error); each says"), said);
            assertTrue(said.contains("; stopping h-worker-0; the job restarts as a group"), "the hung rank named, stopped: " + said);
        }
        recordTimeToTrainAgain(ns, at, "h-master-0", "h-worker-0");
    }

    /**
     * Each rank beside a sidecar: the kubelet keeps a pod Running while any of its containers runs, so a job read
     * by its pods' phases would hang on the fault and hold its nodes once done (Kubeflow's with Istio's proxy).
     * The killed rank is one restart; once the master's training succeeded the job is Succeeded, and every
     * pod, kept (cleanUpPolicy None), is ended by its kubelet: its sidecar stopped, its logs still there. Kubernetes'
     * own sidecar (an init container that restarts) needs nothing of the operator: its kubelet ends the pod, Succeeded.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"container", "native"})
    void besideASidecarARankKilledMidTrainingIsOneRestartAndTheFinishedJobsPodsEnd(String kind) {
        boolean stoppedByTheOperator = kind.equals("container");
        String sidecar = stoppedByTheOperator ? SIDECAR : NATIVE_SIDECAR;
        String ns = install.namespace("sidecar-" + kind);
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "s", "backoffLimit: 2", master("ExitCode", state, EPOCHS, sidecar)
                + worker("ExitCode", state, "", "{}", EPOCHS, sidecar));
        awaitLogged(ns, "s-master-0", "epoch 3/" + EPOCHS);
        Set<String> before = podUids(ns);
        Instant fault = killFromTheMachine(ns, "s-worker-0");
        PyTorchTrainingJob done = awaitT9k(ns, "s", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart: " + events(ns, null));
        assertOneRestartResumed(ns, "s", "pod s-worker-0 (container pytorch) exited with code 137 (Error)", before);
        recordTimeToTrainAgain(ns, fault, "s-master-0", "s-worker-0");
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            List<Pod> pods = admin.pods().inNamespace(ns).list().getItems();
            assertEquals(2, pods.size(), "kept: cleanUpPolicy None");
            for (Pod pod : pods) {
                String name = pod.getMetadata().getName();
                var annotations = pod.getMetadata().getAnnotations();
                if (stoppedByTheOperator) {
                    assertEquals("Failed", pod.getStatus().getPhase(), name + " ended by its kubelet, sidecar included");
                    assertEquals("DeadlineExceeded", pod.getStatus().getReason(), name);
                    assertTrue(annotations.containsKey("torchjob.dev/sidecars-stopped"), pod.getMetadata().toString());
                } else {
                    assertEquals("Succeeded", pod.getStatus().getPhase(), name + ": its kubelet ends a native sidecar itself");
                    assertFalse(annotations != null && annotations.containsKey("torchjob.dev/sidecars-stopped"), name);
                }
            }
        });
        for (Pod pod : admin.pods().inNamespace(ns).list().getItems()) {
            var statuses = new ArrayList<>(pod.getStatus().getContainerStatuses());
            if (pod.getStatus().getInitContainerStatuses() != null) {
                statuses.addAll(pod.getStatus().getInitContainerStatuses());
            }
            var ended = statuses.stream().collect(Collectors.toMap(c -> c.getName(),
                    c -> Instant.parse(c.getState().getTerminated().getFinishedAt())));
            (stoppedByTheOperator ? sidecarStopped : nativeSidecarStopped)
                    .add(Duration.between(ended.get("pytorch"), ended.get("proxy")).toMillis());
        }
        assertTrue(logs(ns, "s-master-0").contains("final accuracy"), "its logs are kept");
        assertEquals(JobPhase.Succeeded, awaitT9k(ns, "s", JobPhase.Succeeded).getStatus().phase,
                "the pods' DeadlineExceeded does not undo the training's success");
        assertTrue(events(ns, "Failed").isEmpty(), events(ns, null).toString());
    }

    /**
     * The same fault beside sidecars, first under Kubeflow's own training-operator v1.9.4, then under this operator: a
     * Kubeflow job (ExitCode, a master and two workers, a sidecar beside each), worker-0 killed mid-training. Kubeflow's
     * reads pod phases: once every rank's training has ended (the peers in their collective) it still says the job is
     * Running, its pods untouched, nothing restarted — and would until someone deletes the job. This operator restarts it
     * once, named by the kill, and it succeeds.
     */
    @Test
    void besideSidecarsKubeflowsOperatorNeverSeesTheFaultAndThisOneRestartsOnce() throws InterruptedException {
        underKubeflowsOperator("kf-sidecar", ns -> {
            Path state = RealNode.STATE.resolve("markers").resolve(ns);
            kubectl.runWithInput(kubeflowJob("ExitCode", state, "", "{}", SIDECAR_FLOW), "apply", "-n", ns, "-f", "-").orFail();
            awaitLogged(ns, "kf-master-0", "epoch 3/" + EPOCHS);
            Set<String> before = podUids(ns);
            killFromTheMachine(ns, "kf-worker-0");
            await().atMost(TRAINING).pollInterval(Duration.ofMillis(500)).until(() -> admin.pods().inNamespace(ns).list().getItems()
                    .stream().allMatch(p -> p.getStatus().getContainerStatuses().stream()
                            .anyMatch(c -> c.getName().equals("pytorch") && c.getState().getTerminated() != null)));
            Instant allEnded = Instant.now();
            await().pollDelay(Duration.ofSeconds(20)).atMost(Duration.ofSeconds(21)).until(() -> true);
            PyTorchJob job = admin.resources(PyTorchJob.class).inNamespace(ns).withName("kf").get();
            String conditions = job.getStatus().conditions.stream().filter(c -> "True".equals(c.status)).map(c -> c.type)
                    .collect(Collectors.joining(","));
            List<Pod> pods = admin.pods().inNamespace(ns).list().getItems();
            System.out.printf("real node, Kubeflow's training-operator, sidecars: %d s after every rank's training ended: "
                    + "conditions %s, pods %s%n", Duration.between(allEnded, Instant.now()).toSeconds(), conditions,
                    pods.stream().map(p -> p.getMetadata().getName() + "=" + p.getStatus().getPhase()).toList());
            assertEquals("Created,Running", conditions, "Kubeflow still says Running: " + events(ns, null));
            assertEquals(before, podUids(ns), "Kubeflow restarted nothing");
            assertTrue(pods.stream().allMatch(p -> "Running".equals(p.getStatus().getPhase())), "held Running by their sidecars");
        });
        String ours = install.namespace("ours-sidecar");
        Path oursState = RealNode.STATE.resolve("markers").resolve(ours);
        kubectl.runWithInput(kubeflowJob("ExitCode", oursState, ", {name: CHECKPOINT_PATH, value: /state/checkpoint.pt}", "{}",
                SIDECAR_FLOW), "apply", "-n", ours, "-f", "-").orFail();
        awaitLogged(ours, "kf-master-0", "epoch 3/" + EPOCHS);
        Instant fault = killFromTheMachine(ours, "kf-worker-0");
        assertKubeflowJobSucceededAfterOneRestart(ours, "pod kf-worker-0 (container pytorch) exited with code 137 (Error)");
        assertTrue(logs(ours, "kf-master-0").contains("resuming at epoch"), logs(ours, "kf-master-0"));
        recordTimeToTrainAgain(ours, fault, "kf-master-0", "kf-worker-0", "kf-worker-1");
    }

    /**
     * Runs {@code underKubeflow} in a namespace of its own under Kubeflow's training-operator v1.9.4, this operator
     * stopped; then deletes that namespace (its job would be restarted by this operator: only deleting it ends a
     * Kubeflow job that hangs) and brings this operator back.
     */
    static void underKubeflowsOperator(String prefix, java.util.function.Consumer<String> underKubeflow) throws InterruptedException {
        install.stopSharedOperator();
        try {
            String ns = install.namespace(prefix);
            try (KubeflowTrainingOperator kubeflow = KubeflowTrainingOperator.start(install.cluster, ns, null)) {
                underKubeflow.accept(ns);
            }
            admin.namespaces().withName(ns).delete();
            await().atMost(Duration.ofSeconds(60)).until(() -> admin.pods().inNamespace(ns).list().getItems().isEmpty());
        } finally {
            install.operator();
        }
    }

    @Test
    void aRankOomKilledByItsLimitMidTrainingRestartsTheJobOnce() {
        String ns = install.namespace("oom-mid");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "o", "backoffLimit: 2", master("ExitCode", state) + worker("ExitCode", state,
                ", {name: OOM_IN_EPOCH, value: \"3\"}, {name: FAIL_RANKS, value: \"1\"}", "{memory: 512Mi}"));
        awaitLogged(ns, "o-master-0", "all-reduce check");
        Set<String> before = podUids(ns);
        PyTorchTrainingJob done = awaitT9k(ns, "o", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount);
        assertOneRestartResumed(ns, "o", "pod o-worker-0 (container pytorch) exited with code 137 (OOMKilled)", before);
    }

    @Test
    void aPodDeletedWithKubectlMidTrainingRestartsTheJobOnce() {
        String ns = install.namespace("deleted");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "d", "backoffLimit: 2", master("ExitCode", state) + worker("ExitCode", state, "", "{}"));
        awaitLogged(ns, "d-master-0", "epoch 3/" + EPOCHS);
        Set<String> before = podUids(ns);
        Instant fault = Instant.now();
        kubectl.run("delete", "pod", "d-worker-0", "-n", ns, "--wait=false").orFail();
        PyTorchTrainingJob done = awaitT9k(ns, "d", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount);
        assertOneRestartResumed(ns, "d", "pod d-worker-0 was deleted", before);
        recordTimeToTrainAgain(ns, fault, "d-master-0", "d-worker-0");
        await().atMost(Duration.ofSeconds(30)).until(() -> admin.pods().inNamespace(ns).list().getItems().stream()
                .noneMatch(p -> p.getStatus() != null && "Running".equals(p.getStatus().getPhase())));
    }

    /**
     * A job paused mid-training and resumed as soon as it says Paused: its ranks looked the master's name up seconds
     * before, so the cluster's DNS may still give the old master's address to the new ranks, whose rendezvous would
     * then fail ({@code No route to host}). With {@code backoffLimit: 0} any such failure ends the job: it must train
     * on from its checkpoint with nothing counted.
     */
    @Test
    void aJobPausedMidTrainingAndResumedAtOnceTrainsOnWithNothingCounted() {
        String ns = install.namespace("resumed");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "r", "backoffLimit: 0", master("ExitCode", state, STOPPED_THROUGH_THE_API_EPOCHS) + worker("ExitCode", state, "", "{}", STOPPED_THROUGH_THE_API_EPOCHS));
        awaitLogged(ns, "r-master-0", "epoch 3/" + STOPPED_THROUGH_THE_API_EPOCHS);
        kubectl.run("patch", "pj", "r", "-n", ns, "--type=merge", "-p", "{\"spec\":{\"runMode\":{\"pause\":{\"enabled\":true}}}}")
                .orFail();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
                .until(() -> RealNodeJobs.t9k(ns, "r").getStatus().phase == JobPhase.Paused);
        Instant resumed = Instant.now();
        kubectl.run("patch", "pj", "r", "-n", ns, "--type=merge", "-p", "{\"spec\":{\"runMode\":{\"pause\":{\"enabled\":false}}}}")
                .orFail();
        PyTorchTrainingJob done = awaitT9k(ns, "r", JobPhase.Succeeded);
        assertEquals(0, done.getStatus().backoffCount, events(ns, null).toString());
        String master = logs(ns, "r-master-0");
        assertTrue(master.matches("(?s).*rank 0: resuming at epoch \\d+ from /state/checkpoint.pt.*"), master);
        assertTrue(master.contains("final accuracy"), master);
        Instant master0 = RealNodeJobs.loggedAt(ns, "r-master-0", "all-reduce check");
        Instant worker0 = RealNodeJobs.loggedAt(ns, "r-worker-0", "all-reduce check");
        Instant training = master0.isAfter(worker0) ? master0 : worker0;
        System.out.printf("real node: resumed -> every rank past init_process_group again: %d ms%n",
                Duration.between(resumed, training).toMillis());
    }

    /**
     * A rank's scratch space (an emptyDir with a sizeLimit) filled past its limit mid-training, as a data loader's
     * cache would, written from the machine into the volume: the kubelet evicts the pod, and the job restarts as a
     * group once, said in the kubelet's words. Its peers then fail on the lost connection, consequences. The kubelet
     * measures volumes every few seconds (5 s on the tier's node) and looks for evictions every 10 s: the job trains
     * long enough for that.
     */
    @Test
    void aRankItsKubeletEvictsForItsScratchSpaceMidTrainingIsOneRestartSaidInTheKubeletsWords() throws java.io.IOException {
        String ns = install.namespace("evicted");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        String worker = replica("worker", "ExitCode", """
                command: [python, /workspace/train.py]
                workingDir: /state
                env: [{name: EPOCHS, value: "%d"}]
                resources: {requests: {cpu: 250m}}
                volumeMounts: [{name: state, mountPath: /state}, {name: scratch, mountPath: /scratch}]
                """.formatted(KUBELET_PACE_EPOCHS), "volumes: [{name: state, hostPath: {path: " + state + ", type: DirectoryOrCreate}}, "
                + "{name: scratch, emptyDir: {sizeLimit: 16Mi}}]\n");
        submitT9k(ns, "e", "backoffLimit: 2", master("ExitCode", state, KUBELET_PACE_EPOCHS) + worker);
        awaitLogged(ns, "e-master-0", "epoch 3/" + KUBELET_PACE_EPOCHS);
        Set<String> before = podUids(ns);
        String uid = admin.pods().inNamespace(ns).withName("e-worker-0").get().getMetadata().getUid();
        Path volume = RealNode.STATE.resolve("kubelet").resolve("pods").resolve(uid).resolve("volumes").resolve("kubernetes.io~empty-dir")
                .resolve("scratch");
        Instant fault = Instant.now();
        java.nio.file.Files.write(volume.resolve("cache.bin"), new byte[48 << 20]);
        PyTorchTrainingJob done = awaitT9k(ns, "e", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
        assertOneRestartResumed(ns, "e", "pod e-worker-0 was evicted (Evicted: Usage of EmptyDir volume \"scratch\" exceeds the limit \"16Mi\")",
                before);
        recordTimeToTrainAgain(ns, fault, "e-master-0", "e-worker-0");
    }

    /**
     * The node taken from the job mid-training, every rank on it stopped at once: {@code drain}ed for maintenance
     * (the Eviction API), or tainted {@code NoExecute} as a node health checker does on a GPU fault (Kubernetes' taint
     * eviction controller deletes the pods). One restart of the job, said in the words of whoever stopped the ranks;
     * the new group cannot be scheduled on the node, which the job says once and counts nothing; once the node is
     * back ({@code kubectl uncordon}, the taint removed) it resumes from its checkpoint.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"drain", "NoExecute taint"})
    void aNodeTakenMidTrainingIsOneRestartAndTheJobWaitsForTheNodeAndResumes(String how) throws Exception {
        boolean drain = how.equals("drain");
        String ns = install.namespace(drain ? "drained" : "tainted");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        int epochs = STOPPED_THROUGH_THE_API_EPOCHS;
        String taint = "torchjob.dev/test-unhealthy=gpu:NoExecute";
        Set<String> before;
        // The eviction controller starts before the job, so that it has synced by the time the node is tainted.
        try (AutoCloseable evictions = drain ? () -> { } : node.taintEviction()) {
            submitT9k(ns, "dr", "backoffLimit: 2", master("ExitCode", state, epochs) + worker("ExitCode", state, "", "{}", epochs));
            awaitLogged(ns, "dr-master-0", "epoch 3/" + epochs);
            before = podUids(ns);
            if (drain) {
                kubectl.run("drain", RealNode.NAME, "--pod-selector=tensorstack.dev/owner-name=dr", "--timeout=60s").orFail();
            } else {
                kubectl.run("taint", "node", RealNode.NAME, taint).orFail();
            }
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1))
                    .failFast("the job finished before the node was taken", () -> RealNodeJobs.t9k(ns, "dr").getStatus().phase == JobPhase.Succeeded)
                    .until(() -> "Unschedulable".equals(running(ns, "dr").reason));
            String message = running(ns, "dr").message;
            assertTrue(message.contains(drain ? "unschedulable" : "untolerated taint"), message);
            assertEquals(1, RealNodeJobs.t9k(ns, "dr").getStatus().backoffCount, "taking the node is one restart; the wait counts nothing");
        } finally {
            kubectl.run(drain ? new String[] {"uncordon", RealNode.NAME} : new String[] {"taint", "node", RealNode.NAME, taint + "-"}).orFail();
        }
        PyTorchTrainingJob done = awaitT9k(ns, "dr", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
        List<String> restarting = events(ns, "JobRestarting");
        assertEquals(1, restarting.size(), events(ns, null).toString());
        assertTrue(restarting.get(0).contains(drain ? " was evicted (EvictionByEvictionAPI: Eviction API: evicting)"
                : " was evicted (DeletionByTaintManager: Taint manager: deleting due to NoExecute taint)"), restarting.get(0));
        assertOneRestartResumed(ns, "dr", "pod dr-", before);
        assertFalse(events(ns, "ReplicaCannotStart").isEmpty(), events(ns, null).toString());
    }

    /**
     * A rank preempted mid-training by Kubernetes' scheduler for a pod of a higher priority (a serving pod on a node
     * shared with low-priority training): the scheduler marks the rank's pod and deletes it, one restart of the job
     * said in the scheduler's words. The new group's replica that no longer fits waits {@code Unschedulable}
     * ({@code Insufficient cpu}), counting nothing, until the pod that took its room is gone; then the job resumes
     * from its checkpoint.
     */
    @Test
    void aRankPreemptedMidTrainingForAHigherPriorityPodIsOneRestartAndTheJobWaitsForRoom() {
        String ns = install.namespace("preempted");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        kubectl.runWithInput("""
                apiVersion: scheduling.k8s.io/v1
                kind: PriorityClass
                metadata: {name: torchjob-test-training}
                value: -100
                ---
                apiVersion: scheduling.k8s.io/v1
                kind: PriorityClass
                metadata: {name: torchjob-test-serving}
                value: 1000
                """, "apply", "--server-side", "-f", "-").orFail();
        int epochs = STOPPED_THROUGH_THE_API_EPOCHS;
        String lowPriority = "priorityClassName: torchjob-test-training\n";
        submitT9k(ns, "pr", "backoffLimit: 2", master("ExitCode", state, epochs, lowPriority)
                + worker("ExitCode", state, "", "{}", epochs, lowPriority));
        awaitLogged(ns, "pr-master-0", "epoch 3/" + epochs);
        Set<String> before = podUids(ns);
        // Room for the serving pod once one rank (250m) is gone, and not before.
        long request = unrequestedMillicores() + 125;
        kubectl.runWithInput("""
                apiVersion: v1
                kind: Pod
                metadata: {name: serving}
                spec:
                  priorityClassName: torchjob-test-serving
                  containers:
                  - name: serve
                    image: torchjob-examples:0.1.0
                    command: [python, -c, "import signal, time; signal.signal(signal.SIGTERM, lambda *_: exit(0)); time.sleep(10**6)"]
                    resources: {requests: {cpu: %dm}}
                """.formatted(request), "apply", "-n", ns, "-f", "-").orFail();
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1))
                .failFast("the job finished before a rank was preempted", () -> RealNodeJobs.t9k(ns, "pr").getStatus().phase == JobPhase.Succeeded)
                .until(() -> "Unschedulable".equals(running(ns, "pr").reason));
        String message = running(ns, "pr").message;
        assertTrue(message.contains("Insufficient cpu"), message);
        assertEquals("Running", admin.pods().inNamespace(ns).withName("serving").get().getStatus().getPhase());
        assertEquals(1, RealNodeJobs.t9k(ns, "pr").getStatus().backoffCount, "the preemption is one restart; the wait counts nothing");
        kubectl.run("delete", "pod", "serving", "-n", ns).orFail();
        PyTorchTrainingJob done = awaitT9k(ns, "pr", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
        assertOneRestartResumed(ns, "pr", "pod pr-", before);
        assertTrue(events(ns, "JobRestarting").get(0).contains(
                " was evicted (PreemptionByScheduler: default-scheduler: preempting to accommodate a higher priority pod)"),
                events(ns, "JobRestarting").toString());
        assertFalse(events(ns, "ReplicaCannotStart").isEmpty(), events(ns, null).toString());
    }

    /**
     * A rank's pod its kubelet refuses: the job's template pins its pods to the node ({@code nodeName}: the scheduler has
     * no say) while another pod holds the node's CPU but room for one rank. The kubelet admits one rank and refuses the
     * other ({@code OutOfcpu}, the pod {@code Failed} without running): its replica gets new pods, each after a longer
     * wait, and nothing is counted, even under {@code ExitCode} with {@code backoffLimit: 0}. Once the room is back, the
     * next pod is admitted and the job trains to its end.
     */
    @Test
    void aRanksPodItsKubeletRefusesIsReplacedCountingNothingUntilTheNodeTakesIt() {
        String ns = install.namespace("refused");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        // Room for one rank (250m) and not two.
        long hold = unrequestedMillicores() - 375;
        kubectl.runWithInput("""
                apiVersion: v1
                kind: Pod
                metadata: {name: holder}
                spec:
                  terminationGracePeriodSeconds: 1
                  containers:
                  - name: hold
                    image: torchjob-examples:0.1.0
                    command: [python, -c, "import signal, time; signal.signal(signal.SIGTERM, lambda *_: exit(0)); time.sleep(10**6)"]
                    resources: {requests: {cpu: %dm}}
                """.formatted(hold), "apply", "-n", ns, "-f", "-").orFail();
        await().atMost(Duration.ofSeconds(60))
                .until(() -> "Running".equals(admin.pods().inNamespace(ns).withName("holder").get().getStatus().getPhase()));
        String pinned = "nodeName: " + RealNode.NAME + "\n";
        submitT9k(ns, "rf", "backoffLimit: 0", master("ExitCode", state, EPOCHS, pinned) + worker("ExitCode", state, "", "{}", EPOCHS, pinned));
        awaitRefusedInARow(ns, "rf", 3);
        List<String> said = events(ns, "ReplicaCannotStart");
        assertTrue(said.stream().anyMatch(m -> m.matches("pod rf-(master|worker)-0 was refused by its kubelet on node " + RealNode.NAME
                + " \\(OutOfcpu: Node didn't have enough resource: cpu, requested: 250, used: \\d+, capacity: \\d+\\); a new pod replaces it now; "
                + "the job waits for it, nothing is counted")), events(ns, null).toString());
        assertEquals(1, said.size(), "refusals in a row for one cause are said once: " + said);
        var running = running(ns, "rf");
        assertEquals("OutOfcpu", running.reason, running.message);
        Integer counted = RealNodeJobs.t9k(ns, "rf").getStatus().backoffCount;
        assertTrue(counted == null || counted == 0, "nothing is counted: " + counted);
        kubectl.run("delete", "pod", "holder", "-n", ns).orFail();
        PyTorchTrainingJob done = awaitT9k(ns, "rf", JobPhase.Succeeded);
        assertTrue(done.getStatus().backoffCount == null || done.getStatus().backoffCount == 0, "nothing counted: " + done.getStatus().backoffCount);
        assertTrue(events(ns, "JobRestarting").isEmpty() && events(ns, "ReplicaFailed").isEmpty(), events(ns, null).toString());
        assertTrue(done.getStatus().tasks.stream().flatMap(t -> t.replicas.stream()).allMatch(r -> r.refusalsInARow == null),
                "a pod its kubelet took ends the refusals in a row");
    }

    /**
     * The node shutting down mid-training, as {@code shutdown} or {@code systemctl poweroff} starts it: logind tells the
     * kubelet (graceful node shutdown), which stops every rank ({@code Terminated}), one restart of the job in the
     * kubelet's words. Until the shutdown is called off the kubelet refuses the new group's pods ({@code NodeShutdown}:
     * the tier has no node lifecycle controller to taint the node not-ready, so the scheduler keeps placing them there,
     * as in the moments before a cluster's does): each is replaced, nothing more is counted. Once it is called off,
     * the next pods are admitted and the job resumes from its checkpoint.
     */
    @Test
    void aNodeShuttingDownMidTrainingIsOneRestartAndItsRefusalsCountNothing() throws Exception {
        String ns = install.namespace("node-shutdown");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        int epochs = STOPPED_THROUGH_THE_API_EPOCHS;
        submitT9k(ns, "sd", "backoffLimit: 2", master("ExitCode", state, epochs) + worker("ExitCode", state, "", "{}", epochs));
        awaitLogged(ns, "sd-master-0", "epoch 3/" + epochs);
        Set<String> before = podUids(ns);
        try (AutoCloseable shutdown = node.shutDown()) {
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500))
                    .failFast("the job finished before the node shut down", () -> RealNodeJobs.t9k(ns, "sd").getStatus().phase == JobPhase.Succeeded)
                    .until(() -> RealNodeJobs.t9k(ns, "sd").getStatus().tasks.stream().flatMap(t -> t.replicas.stream())
                            .allMatch(r -> r.refusalsInARow != null && r.refusalsInARow >= 2));
            assertEquals("NodeShutdown", running(ns, "sd").reason, running(ns, "sd").message);
            assertEquals(1, RealNodeJobs.t9k(ns, "sd").getStatus().backoffCount, "the shutdown is one restart; the refusals count nothing");
        }
        PyTorchTrainingJob done = awaitT9k(ns, "sd", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
        List<String> restarting = events(ns, "JobRestarting");
        assertTrue(restarting.size() == 1 && restarting.get(0).contains(
                " was evicted (Terminated: Pod was terminated in response to imminent node shutdown)"), events(ns, null).toString());
        assertOneRestartResumed(ns, "sd", "pod sd-", before);
        assertTrue(events(ns, "ReplicaCannotStart").stream().anyMatch(m -> m.contains(" was refused by its kubelet on node " + RealNode.NAME
                + " (NodeShutdown: Pod was rejected as the node is shutting down)")), events(ns, null).toString());
    }

    /**
     * A rank's GPU fails mid-training, as NVIDIA's device plugin reports one after a fatal Xid error (the node's
     * stand-in plugin says it Unhealthy): the kubelet writes it in the pod's status while the rank runs on, hung on
     * the device as far as the operator can tell. Stopped with its group at once — not after the process group's
     * timeout — for one restart; the device plugin no longer offers that GPU, so the new rank gets another, and the
     * job resumes from its checkpoint. Under ExitCode, and so whatever the ranks' exit codes.
     */
    @Test
    void aRankWhoseGpuFailsMidTrainingIsStoppedWithItsGroupForOneRestartOnAnotherGpu() throws Exception {
        String ns = install.namespace("gpu-failed");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        int epochs = STOPPED_THROUGH_THE_API_EPOCHS;
        submitT9k(ns, "gf", "backoffLimit: 2", master("ExitCode", state, epochs)
                + worker("ExitCode", state, "", "{nvidia.com/gpu: 1}", epochs));
        awaitLogged(ns, "gf-master-0", "epoch 3/" + epochs);
        Set<String> before = podUids(ns);
        String gpu = gpuOf(ns, "gf-worker-0");
        Instant fault = Instant.now();
        try (AutoCloseable failed = node.gpusFail(gpu)) {
            PyTorchTrainingJob done = awaitT9k(ns, "gf", JobPhase.Succeeded);
            assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
            assertOneRestartResumed(ns, "gf", "pod gf-worker-0 runs on a failed device (nvidia.com/gpu " + gpu
                    + " is Unhealthy, as its kubelet reports); stopping gf-master-0; the job restarts as a group", before);
            String again = gpuOf(ns, "gf-worker-0");
            assertTrue(!again.equals(gpu), "the new rank has another GPU than the failed " + gpu + ": " + again);
            recordTimeToTrainAgain(ns, fault, "gf-master-0", "gf-worker-0");
        }
    }

    /**
     * A GPU node whose device plugin is down (an upgrade, a crash): the scheduler places no GPU rank there, but a rank
     * pinned to it ({@code nodeName}) is refused by its kubelet, which has no GPU to give ({@code UnexpectedAdmissionError}):
     * replaced again and again, counting nothing even under ExitCode with {@code backoffLimit: 0}, until the plugin is
     * back and the next pod is admitted; the job succeeds with nothing counted.
     */
    @Test
    void aGpuRankRefusedWhileItsNodesDevicePluginIsDownWaitsCountingNothing() throws Exception {
        String ns = install.namespace("gpus-down");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        String pinned = "nodeName: " + RealNode.NAME + "\n";
        try (AutoCloseable down = node.gpusDown()) {
            submitT9k(ns, "gd", "backoffLimit: 0", master("ExitCode", state, EPOCHS, pinned)
                    + worker("ExitCode", state, "", "{nvidia.com/gpu: 1}", EPOCHS, pinned));
            awaitRefusedInARow(ns, "gd", 2);
            List<String> said = events(ns, "ReplicaCannotStart");
            assertTrue(said.size() == 1 && said.get(0).startsWith("pod gd-worker-0 was refused by its kubelet on node " + RealNode.NAME
                    + " (UnexpectedAdmissionError: Allocate failed due to no healthy devices present; cannot allocate unhealthy devices "
                    + "nvidia.com/gpu, which is unexpected); a new pod replaces it now"), events(ns, null).toString());
        }
        PyTorchTrainingJob done = awaitT9k(ns, "gd", JobPhase.Succeeded);
        assertTrue(done.getStatus().backoffCount == null || done.getStatus().backoffCount == 0, "nothing counted: " + done.getStatus().backoffCount);
        assertTrue(events(ns, "JobRestarting").isEmpty() && events(ns, "ReplicaFailed").isEmpty(), events(ns, null).toString());
        assertTrue(!gpuOf(ns, "gd-worker-0").isEmpty(), "the admitted rank has its GPU");
    }

    /**
     * GPUs through Dynamic Resource Allocation: each rank claims one device of the node's stand-in DRA driver through a
     * ResourceClaimTemplate, so each pod gets a ResourceClaim of its own, which the scheduler allocates. Mid-training the
     * worker's device fails, as the vendor's driver reports one after a fatal Xid error. {@code Unhealthy}: its health
     * says so with the driver's words, and the device is tainted NoSchedule; the operator stops the group at once, one
     * restart naming the device and the words. {@code NoExecute}: only the taint, which Kubernetes' device taint eviction
     * controller acts on, deleting the worker; one restart in its words. Either way the new worker's claim gets
     * another device, and the job resumes and succeeds.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"Unhealthy", "NoExecute"})
    void aRanksDraDeviceFailingMidTrainingIsOneRestartOnAnotherDevice(String fault) throws Exception {
        String ns = install.namespace("dra-" + fault.toLowerCase());
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        kubectl.runWithInput("""
                apiVersion: resource.k8s.io/v1
                kind: ResourceClaimTemplate
                metadata: {name: one-gpu}
                spec:
                  spec:
                    devices:
                      requests: [{name: gpu, exactly: {deviceClassName: %s}}]
                """.formatted(RealNode.DRA_DRIVER), "apply", "-n", ns, "-f", "-").orFail();
        int epochs = STOPPED_THROUGH_THE_API_EPOCHS;
        String claim = "resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]\n";
        submitT9k(ns, "dr", "backoffLimit: 2", master("ExitCode", state, epochs)
                + worker("ExitCode", state, "", "{}, claims: [{name: gpu}]", epochs, claim));
        awaitLogged(ns, "dr-master-0", "epoch 3/" + epochs);
        Set<String> before = podUids(ns);
        String device = draDeviceOf(ns, "dr-worker-0");
        Instant at = Instant.now();
        boolean unhealthy = fault.equals("Unhealthy");
        try (AutoCloseable failed = node.draDeviceFails(device, unhealthy ? "ECC error count exceeded threshold" : null,
                unhealthy ? "NoSchedule" : "NoExecute")) {
            // Read while the new group trains: the resource claim controller deletes a pod's claim once the pod is done.
            String again = await().atMost(TRAINING).pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
                Pod worker = admin.pods().inNamespace(ns).withName("dr-worker-0").get();
                return !before.contains(worker.getMetadata().getUid()) && "Running".equals(worker.getStatus().getPhase())
                        ? draDeviceOf(ns, "dr-worker-0") : null;
            }, java.util.Objects::nonNull);
            PyTorchTrainingJob done = awaitT9k(ns, "dr", JobPhase.Succeeded);
            assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
            // The kubelet names a DRA device by its claim's name in the pod and driver/pool/device.
            assertOneRestartResumed(ns, "dr", unhealthy
                    ? "pod dr-worker-0 runs on a failed device (claim:gpu " + RealNode.DRA_DRIVER + "/" + RealNode.NAME + "/" + device
                            + " (ECC error count exceeded threshold) is Unhealthy, as its kubelet reports); stopping dr-master-0"
                    : "pod dr-worker-0 was evicted (DeletionByDeviceTaintManager: Device Taint manager: deleting due to NoExecute taint)",
                    before);
            assertTrue(!again.equals(device), "the new rank's claim has another device than the failed " + device + ": " + again);
            recordTimeToTrainAgain(ns, at, "dr-master-0", "dr-worker-0");
        }
    }

    /** The device the pod's ResourceClaim {@code gpu} was allocated. */
    static String draDeviceOf(String ns, String pod) {
        String claim = admin.pods().inNamespace(ns).withName(pod).get().getStatus().getResourceClaimStatuses().stream()
                .filter(c -> c.getName().equals("gpu")).findFirst().orElseThrow().getResourceClaimName();
        return kubectl.run("get", "resourceclaim", claim, "-n", ns, "-o", "jsonpath={.status.allocation.devices.results[0].device}")
                .orFail().out().strip();
    }

    /** The GPU the stand-in device plugin gave the pod's training container, as its kubelet reports it. */
    static String gpuOf(String ns, String pod) {
        return admin.pods().inNamespace(ns).withName(pod).get().getStatus().getContainerStatuses().stream()
                .filter(c -> c.getName().equals("pytorch")).findFirst().orElseThrow().getAllocatedResourcesStatus().stream()
                .filter(r -> r.getName().equals("nvidia.com/gpu")).findFirst().orElseThrow().getResources().get(0).getResourceID();
    }

    /** Until a replica of the job was refused by its kubelet {@code times} in a row; the job must not end meanwhile. */
    static void awaitRefusedInARow(String ns, String job, int times) {
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500))
                .failFast("the job ended while a rank was refused", () -> {
                    JobPhase phase = RealNodeJobs.t9k(ns, job).getStatus().phase;
                    return phase != null && phase.isTerminal();
                })
                .until(() -> RealNodeJobs.t9k(ns, job).getStatus().tasks.stream().flatMap(t -> t.replicas.stream())
                        .anyMatch(r -> r.refusalsInARow != null && r.refusalsInARow >= times));
    }

    /** The real node's allocatable CPU that no pod there requests, as its scheduler counts it (finished pods hold none). */
    static long unrequestedMillicores() {
        long allocatable = millicores(admin.nodes().withName(RealNode.NAME).get().getStatus().getAllocatable().get("cpu"));
        long requested = admin.pods().inAnyNamespace().withField("spec.nodeName", RealNode.NAME).list().getItems().stream()
                .filter(p -> !Set.of("Succeeded", "Failed").contains(p.getStatus().getPhase()))
                .flatMap(p -> p.getSpec().getContainers().stream())
                .map(c -> c.getResources().getRequests() == null ? null : c.getResources().getRequests().get("cpu"))
                .filter(java.util.Objects::nonNull).mapToLong(RealNodeFaultsIT::millicores).sum();
        return allocatable - requested;
    }

    static long millicores(io.fabric8.kubernetes.api.model.Quantity cpu) {
        return io.fabric8.kubernetes.api.model.Quantity.getAmountInBytes(cpu).movePointRight(3).longValue();
    }

    /**
     * The node's kubelet, containerd or GPU device plugin restarted mid-training, as an upgrade does: the ranks'
     * containers run on, so the job counts nothing and says nothing, and trains to its end with the same pods, never
     * resuming. The worker has a GPU: while its device plugin is away the kubelet offers none, yet reports none failed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"kubelet", "containerd", "device-plugin"})
    void aNodeAgentRestartedMidTrainingIsNoFaultAndTheJobTrainsOn(String agent) throws Exception {
        String ns = install.namespace(agent + "-restarted");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        int epochs = KUBELET_PACE_EPOCHS;
        submitT9k(ns, "ag", "backoffLimit: 2", master("ExitCode", state, epochs)
                + worker("ExitCode", state, "", "{nvidia.com/gpu: 1}", epochs));
        awaitLogged(ns, "ag-master-0", "epoch 3/" + epochs);
        Set<String> before = podUids(ns);
        switch (agent) {
            case "kubelet" -> node.restartKubelet();
            case "containerd" -> node.restartContainerd();
            default -> node.restartGpus();
        }
        assertEquals(JobPhase.Running, RealNodeJobs.t9k(ns, "ag").getStatus().phase, "the restart came mid-training");
        PyTorchTrainingJob done = awaitT9k(ns, "ag", JobPhase.Succeeded);
        assertEquals(0, done.getStatus().backoffCount, events(ns, null).toString());
        assertEquals(before, podUids(ns), "the same pods");
        for (Pod pod : admin.pods().inNamespace(ns).list().getItems()) {
            assertEquals(0, pod.getStatus().getContainerStatuses().get(0).getRestartCount(), pod.getMetadata().getName());
        }
        assertTrue(events(ns, "JobRestarting").isEmpty() && events(ns, "ReplicaCannotStart").isEmpty(), events(ns, null).toString());
        String master = logs(ns, "ag-master-0");
        assertFalse(master.contains("resuming at epoch"), master);
        assertTrue(master.contains("final accuracy"), master);
    }

    /**
     * The node's kubelet is cut off mid-training (stopped), a rank is killed there and its pod deleted with kubectl:
     * the group's restart deletes every pod, and no kubelet confirms any of them gone, so the new group cannot be
     * made. A minute after their grace period the job says so of each replica, naming the node and what to do, and
     * counts nothing more; the kubelet back, it reports the old ranks' ends (part of the incident, not counted again)
     * and removes them, and the new group resumes from the checkpoint and succeeds.
     */
    @Test
    void aGroupRestartHeldByAKubeletCutOffIsSaidAndGoesOnOnceItIsBack() throws Exception {
        String ns = install.namespace("cut-off");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "c", "backoffLimit: 2", master("ExitCode", state) + worker("ExitCode", state, "", "{}"));
        awaitLogged(ns, "c-master-0", "epoch 3/" + EPOCHS);
        Set<String> before = podUids(ns);
        try (AutoCloseable cutOff = node.kubeletCutOff()) {
            // The rank crashes (its peer then fails in its collective), nothing reports it, and someone deletes its pod.
            killFromTheMachine(ns, "c-worker-0");
            kubectl.run("delete", "pod", "c-worker-0", "-n", ns, "--wait=false", "--grace-period=5").orFail();
            // The worker's grace period ends first (kubectl's delete), the master's a moment later (the restart's).
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofSeconds(1)).until(() -> "Terminating".equals(running(ns, "c").reason)
                    && running(ns, "c").message.contains("pod c-master-0 is still terminating, its grace period ended at ")
                    && running(ns, "c").message.contains("pod c-worker-0 is still terminating, its grace period ended at "));
            String message = running(ns, "c").message;
            assertTrue(message.contains("node " + RealNode.NAME + " has not confirmed that it stopped"), message);
            assertEquals(before, podUids(ns), "the old group is still there; no new pod");
            assertEquals(1, RealNodeJobs.t9k(ns, "c").getStatus().backoffCount, "nothing counted for the wait");
        }
        PyTorchTrainingJob done = awaitT9k(ns, "c", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart");
        assertOneRestartResumed(ns, "c", "pod c-worker-0 was deleted", before);
        assertEquals(2, events(ns, "ReplicaCannotStart").size(), "said once of each held replica: " + events(ns, null));
    }

    /** The Kubeflow job "kf" ended Succeeded after one restart of the whole job, said once, named by its cause. */
    static void assertKubeflowJobSucceededAfterOneRestart(String ns, String causeStart) {
        PyTorchJob done = await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1))
                .until(() -> admin.resources(PyTorchJob.class).inNamespace(ns).withName("kf").get(),
                        j -> j.getStatus() != null && j.getStatus().phase != null && j.getStatus().phase.isTerminal());
        assertEquals(JobPhase.Succeeded, done.getStatus().phase, events(ns, null).toString());
        assertEquals(1, done.getStatus().backoffCount, "one fault of three ranks, one restart: " + events(ns, null));
        List<String> restarting = events(ns, "JobRestarting");
        assertEquals(1, restarting.size(), events(ns, null).toString());
        assertTrue(restarting.get(0).startsWith(causeStart), restarting.get(0));
    }

    static dev.torchjob.operator.api.JobCondition running(String ns, String job) {
        return RealNodeJobs.t9k(ns, job).getStatus().conditions.stream().filter(c -> "Running".equals(c.type)).findFirst().orElseThrow();
    }

    @Test
    void aRankWhoseCodeRaisesMidTrainingFailsTheJobNamingThatRank() {
        String ns = install.namespace("raises");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        submitT9k(ns, "r", "backoffLimit: 2", master("ExitCode", state) + worker("ExitCode", state,
                ", {name: RAISE_IN_EPOCH, value: \"3\"}, {name: FAIL_RANKS, value: \"1\"}", "{}"));
        PyTorchTrainingJob failed = awaitT9k(ns, "r", JobPhase.Failed);
        var condition = failed.getStatus().conditions.stream().filter(c -> "Failed".equals(c.type)).findFirst().orElseThrow();
        assertEquals("ReplicaFailedPermanently", condition.reason);
        assertTrue(condition.message.startsWith("pod r-worker-0 (container pytorch) exited with code 1 (Error)"), condition.message);
        assertTrue(condition.message.contains("ValueError: rank 1: a bad batch in epoch 3"), condition.message);
        assertFalse(condition.message.contains("Connection reset"), "never the peer's error: " + condition.message);
        assertEquals(0, failed.getStatus().backoffCount);
    }

    /**
     * Kubeflow's kind under ExitCode, each rank's command torchrun: worker-0's code raises in epoch 3 and its peers fail
     * on the lost connection; every torchrun exits 1. The job fails naming worker-0's rank and its error (its words
     * above torchrun's own traceback and report), counts nothing, and once the peers have ended too (cleanPodPolicy
     * None keeps them) its replicaStatuses say what the pods are.
     */
    @Test
    void aKubeflowRankWhoseCodeRaisesUnderTorchrunFailsTheJobNamingItsErrorAndTheCountsFollowThePods() {
        String ns = install.namespace("kf-raises");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        kubectl.runWithInput(torchrunKubeflowJob(state, ", {name: RAISE_IN_EPOCH, value: \"3\"}, {name: FAIL_RANKS, value: \"1\"}"),
                "apply", "-n", ns, "-f", "-").orFail();
        PyTorchJob failed = await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1))
                .until(() -> admin.resources(PyTorchJob.class).inNamespace(ns).withName("kf").get(),
                        j -> j.getStatus() != null && j.getStatus().phase != null && j.getStatus().phase.isTerminal());
        assertEquals(JobPhase.Failed, failed.getStatus().phase, events(ns, null).toString());
        assertEquals("ReplicaFailedPermanently", failed.getStatus().failureReason);
        String message = failed.getStatus().conditions.stream().filter(c -> "Failed".equals(c.type)).findFirst().orElseThrow().message;
        System.out.printf("real node, Kubeflow kind, torchrun, a rank raising: %s%n", message);
        assertTrue(message.startsWith("PyTorchJob kf is failed because pod kf-worker-0 (container pytorch) exited with code 1 (Error) after "
                + "torchrun's worker (rank 1) exited with code 1; "), message);
        assertTrue(message.contains("; last output of torchrun's workers:\n")
                && message.endsWith("\nValueError: rank 1: a bad batch in epoch 3 (RAISE_IN_EPOCH)"), "the worker's own error ends it: " + message);
        assertFalse(message.contains("Connection reset") || message.contains("closed by peer"), "never the peer's error: " + message);
        assertFalse(message.contains("ChildFailedError"), "torchrun's own traceback is summed up: " + message);
        assertEquals(0, failed.getStatus().backoffCount);
        // The peers fail in their next collective; the ended job's counts then say so.
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            List<Pod> pods = admin.pods().inNamespace(ns).list().getItems();
            assertTrue(pods.stream().allMatch(p -> "Failed".equals(p.getStatus().getPhase())), "every rank has ended");
            var counts = admin.resources(PyTorchJob.class).inNamespace(ns).withName("kf").get().getStatus().replicaStatuses;
            assertEquals(1, counts.get("Master").failed, counts.toString());
            assertEquals(2, counts.get("Worker").failed, counts.toString());
            assertEquals(null, counts.get("Master").active, counts.toString());
            assertEquals(null, counts.get("Worker").active, counts.toString());
        });
    }

    /**
     * Elastic training is not restarted as a group: Kubeflow's elastic seed (torchrun, c10d rendezvous at
     * worker-0), worker-1's torchrun killed from the machine mid-training. The kubelet restarts its container
     * in place; the survivor's torchrun takes it into a new rendezvous round by itself (its own container
     * never restarts); the operator counts the one restart and replaces nothing.
     */
    @Test
    void anElasticJobsKilledWorkerIsReplacedAloneAndTorchrunReformsTheGroup() throws java.io.IOException {
        String ns = install.namespace("elastic-killed");
        String manifest = java.nio.file.Files.readString(Path.of("kubernetes/examples/kubeflow/05-elastic.yaml"))
                .replace("image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727", "image: torchjob-examples:0.1.0")
                .replace("command: [\"torchrun\", \"/opt/pytorch-mnist/mnist.py\", \"--epochs=1\"]",
                        "command: [torchrun, train.py]\n              env: [{name: EPOCHS, value: \"200\"}]");
        assertTrue(manifest.contains("EPOCHS") && !manifest.contains("mnist.py"), manifest);
        kubectl.runWithInput(manifest, "create", "-n", ns, "-f", "-").orFail();
        // Rank 0 is whichever worker's agent joined the rendezvous first.
        await().atMost(TRAINING).pollInterval(Duration.ofMillis(200)).until(() -> List.of("elastic-example-worker-0", "elastic-example-worker-1")
                .stream().anyMatch(pod -> kubectl.run("logs", "-n", ns, pod).out().contains("epoch 3/200")));
        killFromTheMachine(ns, "elastic-example-worker-1");
        PyTorchJob done = await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1))
                .until(() -> admin.resources(PyTorchJob.class).inNamespace(ns).withName("elastic-example").get(),
                        j -> j.getStatus() != null && j.getStatus().phase != null && j.getStatus().phase.isTerminal());
        assertEquals(JobPhase.Succeeded, done.getStatus().phase, events(ns, null).toString());
        assertEquals(1, done.getStatus().backoffCount, "the killed worker's restart: " + events(ns, null));
        assertTrue(events(ns, "JobRestarting").isEmpty(), "no group restart: " + events(ns, null));
        assertEquals(1, events(ns, "ReplicaRestarted").size(), events(ns, null).toString());
        assertTrue(events(ns, "ReplicaRestarted").get(0).startsWith("pod elastic-example-worker-1 (container pytorch) exited with code 137"),
                events(ns, "ReplicaRestarted").get(0));
        Pod survivor = admin.pods().inNamespace(ns).withName("elastic-example-worker-0").get();
        assertEquals(0, survivor.getStatus().getContainerStatuses().get(0).getRestartCount(), "torchrun restarted its worker itself");
    }

    /**
     * A rank under torchrun (T9k's {@code torchrunConfig}, two workers, c10d rendezvous at worker-0, no restarts of its
     * own) whose training process, torchrun's worker, is SIGKILLed from the machine mid-training, as the OOM killer
     * picks one process: torchrun exits with 1 on both ranks, as it does whatever ended its workers, and the peer
     * says it lost its connection above torchrun's traceback. Under ExitCode this is still a stop from outside: one
     * restart, named by the killed rank and the signal its torchrun reports, never by the peer; resumed from the
     * checkpoint. torchrun watches its workers every 0.1 s, current PyTorch's default (1.13's 5 s here otherwise).
     */
    @Test
    void aTorchrunRanksWorkerKilledMidTrainingIsOneRestartUnderExitCodeThoughTorchrunExitsWithOne() {
        String ns = install.namespace("torchrun-killed");
        kubectl.runWithInput(t9kTorchrunJob(ns, EPOCHS, 0), "apply", "-n", ns, "-f", "-").orFail();
        awaitLoggedByEitherWorker(ns, "epoch 3/" + EPOCHS);
        Set<String> before = podUids(ns);
        Instant fault = killTorchrunsWorkerFromTheMachine(ns, "tr-worker-1");
        PyTorchTrainingJob done = awaitT9k(ns, "tr", JobPhase.Succeeded);
        assertEquals(1, done.getStatus().backoffCount, "one fault, one restart: " + events(ns, null));
        List<String> restarting = events(ns, "JobRestarting");
        assertEquals(1, restarting.size(), events(ns, null).toString());
        System.out.printf("real node, torchrun, a worker SIGKILLed: %s%n", restarting.get(0).lines().findFirst().orElse(""));
        assertTrue(restarting.get(0).matches("(?s)pod tr-worker-1 \\(container pytorch\\) exited with code 1 \\(Error\\) after torchrun's "
                + "worker \\(rank [01]\\) was killed by signal 9 \\(SIGKILL\\); (then tr-worker-0 \\(exit code 1\\) failed too, a consequence "
                + "\\(not counted\\)|stopping tr-worker-0); the job restarts as a group \\(restart 1 of backoffLimit 2.*"), restarting.get(0));
        assertTrue(restarting.get(0).contains("; last output of torchrun's workers:\n") && !restarting.get(0).contains("ChildFailedError"),
                "the workers' words, torchrun's own traceback and report summed up: " + restarting.get(0));
        String logs = logs(ns, "tr-worker-0") + logs(ns, "tr-worker-1");
        assertTrue(logs.matches("(?s).*rank 0: resuming at epoch \\d+ from /state/checkpoint.pt.*"), logs);
        assertTrue(podUids(ns).stream().noneMatch(before::contains), "no pod of the old group is left");
        recordTimeToTrainAgain(ns, fault, "tr-worker-0", "tr-worker-1");
    }

    /**
     * T9k's torchrun job as its seed writes it, with restarts of torchrun's own ({@code maxRestarts}, 10 in the seed;
     * 1 here): a worker SIGKILLed mid-training is restarted by torchrun, not by the operator. Both agents form a new
     * rendezvous round in the same pods and training resumes from the checkpoint, nothing counted, no pod replaced.
     * Killed again once torchrun has no restart left, torchrun exits 1 and the operator restarts the job once, named
     * by that second kill. The killed rank's agent has spent its restart; its peer's agent may not have (a restart for
     * an agent that rejoined is not counted, torch's elastic agent): then the peer's agent restarts its workers and
     * waits for a rendezvous round the killed rank's agent never joins, and that one exits only after its exit barrier,
     * 300 s (seen in a CI run, 2026-12-03): the wait covers it.
     */
    @Test
    void aTorchrunRanksWorkerKilledIsRestartedByTorchrunWhileItHasRestartsThenOnceByTheOperator() {
        String ns = install.namespace("torchrun-restarts");
        kubectl.runWithInput(t9kTorchrunJob(ns, STOPPED_THROUGH_THE_API_EPOCHS, 1), "apply", "-n", ns, "-f", "-").orFail();
        awaitLoggedByEitherWorker(ns, "epoch 3/" + STOPPED_THROUGH_THE_API_EPOCHS);
        Set<String> pods = podUids(ns);
        Instant fault = killTorchrunsWorkerFromTheMachine(ns, "tr-worker-1");
        awaitLoggedByEitherWorker(ns, "resuming at epoch");
        System.out.printf("real node, torchrun with a restart of its own, a worker SIGKILLed: training again %d ms after%n",
                Duration.between(fault, RealNodeJobs.loggedAt(ns, rankZero(ns), "resuming at epoch")).toMillis());
        PyTorchTrainingJob running = admin.resources(PyTorchTrainingJob.class).inNamespace(ns).withName("tr").get();
        assertEquals(JobPhase.Running, running.getStatus().phase, "torchrun's restart is not the job's");
        assertEquals(0, running.getStatus().backoffCount, events(ns, null).toString());
        assertEquals(pods, podUids(ns), "the same pods");
        assertTrue(events(ns, "JobRestarting").isEmpty(), events(ns, null).toString());
        for (String pod : List.of("tr-worker-0", "tr-worker-1")) {
            assertEquals(0, admin.pods().inNamespace(ns).withName(pod).get().getStatus().getContainerStatuses().get(0).getRestartCount(),
                    pod + "'s torchrun kept running");
        }
        // The resumed training past its first epoch (printed only once saved: never before the fault), then the same
        // fault with no restart of torchrun's left.
        String resumed = logs(ns, rankZero(ns)).lines().filter(l -> l.contains("resuming at epoch")).findFirst().orElseThrow();
        String epoch = resumed.replaceAll(".*resuming at epoch (\\d+) .*", "$1");
        awaitLoggedByEitherWorker(ns, "epoch " + epoch + "/" + STOPPED_THROUGH_THE_API_EPOCHS);
        boolean peerKeptItsRestart = logs(ns, "tr-worker-0").contains("new nodes from group_rank");
        Instant second = killTorchrunsWorkerFromTheMachine(ns, "tr-worker-1");
        PyTorchTrainingJob done = awaitT9k(ns, "tr", JobPhase.Succeeded, TORCHRUN_EXIT_BARRIER.plus(TRAINING));
        assertEquals(1, done.getStatus().backoffCount, "the operator's one restart: " + events(ns, null));
        System.out.printf("real node, torchrun with a restart of its own, killed again: the operator's restart about %d s after (%s)%n",
                Duration.between(second, RealNodeJobs.eventAt(ns, "JobRestarting")).toSeconds(), peerKeptItsRestart
                        ? "tr-worker-0's agent had kept its restart: torchrun's exit barrier" : "both agents' restarts spent");
        List<String> restarting = events(ns, "JobRestarting");
        assertEquals(1, restarting.size(), events(ns, null).toString());
        assertTrue(restarting.get(0).startsWith("pod tr-worker-1 (container pytorch) exited with code 1 (Error) after torchrun's worker (rank "),
                restarting.get(0));
        assertTrue(restarting.get(0).contains(") was killed by signal 9 (SIGKILL)"), restarting.get(0));
        assertTrue(podUids(ns).stream().noneMatch(pods::contains), "no pod of the old group is left");
    }

    /** How long a torchrun agent whose workers ended waits for the other agents (torch's default; torchrun has no flag for it). */
    static final Duration TORCHRUN_EXIT_BARRIER = Duration.ofSeconds(300);

    /**
     * A T9k job of two workers under ExitCode, each torchrun's agent ({@code maxRestarts} its own), c10d rendezvous at
     * worker-0. A killed worker's torchrun waits at its exit barrier for the other agent, whose worker ends only once its
     * collective fails: once in a CI run the peer never saw the connection close, and both pods ran on for minutes; the
     * process group's timeout (60 s) bounds that, as docs/when-things-fail.md advises.
     */
    static String t9kTorchrunJob(String ns, int epochs, int maxRestarts) {
        String workers = replica("worker", "ExitCode", """
                command: [python]
                args: [/workspace/train.py]
                workingDir: /state
                env: [{name: EPOCHS, value: "%d"}, {name: CHECKPOINT_PATH, value: /state/checkpoint.pt}, {name: PROCESS_GROUP_TIMEOUT, value: "60"}]
                resources: {requests: {cpu: 250m}}
                volumeMounts: [{name: state, mountPath: /state}]
                """.formatted(epochs), state(RealNode.STATE.resolve("markers").resolve(ns))).replace("replicas: 1", "replicas: 2");
        return RealNodeJobs.t9kJob("tr", "backoffLimit: 2", workers).replace("  runPolicy: {", "  torchrunConfig: {enabled: true, "
                + "maxRestarts: " + maxRestarts + ", procPerNode: \"1\", rdzvBackend: c10d, extraOptions: [--monitor_interval=0.1]}\n  runPolicy: {");
    }

    /** Rank 0, which prints the epochs, is whichever agent joined the rendezvous first. */
    static void awaitLoggedByEitherWorker(String ns, String line) {
        await().atMost(TRAINING).pollInterval(Duration.ofMillis(200)).until(() -> List.of("tr-worker-0", "tr-worker-1")
                .stream().anyMatch(pod -> kubectl.run("logs", "-n", ns, pod).out().contains(line)));
    }

    static String rankZero(String ns) {
        return kubectl.run("logs", "-n", ns, "tr-worker-0").out().contains("resuming at epoch") ? "tr-worker-0" : "tr-worker-1";
    }

    /**
     * The same fault in a Kubeflow job whose command is torchrun (static rendezvous at the master, from Kubeflow's
     * PET_* variables; ExitCode, a master and two workers), first under Kubeflow's training-operator v1.9.4, then under
     * this operator: worker-0's training process SIGKILLed mid-training. Every torchrun exits 1; Kubeflow takes that
     * as the code's own error and fails the job. This operator reads the signal in torchrun's report: one restart,
     * and the job succeeds.
     */
    @Test
    void underTorchrunKubeflowsOperatorFailsTheJobAtAKilledWorkerAndThisOneRestartsOnce() throws InterruptedException {
        underKubeflowsOperator("kf-torchrun", ns -> {
            kubectl.runWithInput(torchrunKubeflowJob(RealNode.STATE.resolve("markers").resolve(ns)), "apply", "-n", ns, "-f", "-").orFail();
            awaitLogged(ns, "kf-master-0", "epoch 3/" + EPOCHS);
            killTorchrunsWorkerFromTheMachine(ns, "kf-worker-0");
            PyTorchJob failed = await().atMost(TRAINING).pollInterval(Duration.ofMillis(500))
                    .until(() -> admin.resources(PyTorchJob.class).inNamespace(ns).withName("kf").get(), j -> j.getStatus() != null
                            && j.getStatus().conditions != null && j.getStatus().conditions.stream()
                                    .anyMatch(c -> "Failed".equals(c.type) && "True".equals(c.status)));
            System.out.printf("real node, Kubeflow's training-operator, torchrun, a worker SIGKILLed: Failed (%s)%n", failed.getStatus()
                    .conditions.stream().filter(c -> "Failed".equals(c.type)).map(c -> c.message).findFirst().orElse(""));
        });
        String ours = install.namespace("ours-torchrun");
        kubectl.runWithInput(torchrunKubeflowJob(RealNode.STATE.resolve("markers").resolve(ours)), "apply", "-n", ours, "-f", "-").orFail();
        awaitLogged(ours, "kf-master-0", "epoch 3/" + EPOCHS);
        Instant fault = killTorchrunsWorkerFromTheMachine(ours, "kf-worker-0");
        assertKubeflowJobSucceededAfterOneRestart(ours, "pod kf-worker-0 (container pytorch) exited with code 1 (Error) after torchrun's "
                + "worker (rank 1) was killed by signal 9 (SIGKILL)");
        assertTrue(logs(ours, "kf-master-0").contains("resuming at epoch"), logs(ours, "kf-master-0"));
        recordTimeToTrainAgain(ours, fault, "kf-master-0", "kf-worker-0", "kf-worker-1");
    }

    /**
     * A Kubeflow job whose command is torchrun with a restart of its own ({@code --max_restarts=1}; static rendezvous at
     * the master, from Kubeflow's PET_* variables): worker-0's training process SIGKILLed mid-training. Every agent's
     * workers fail and each torchrun starts them again in the same pods, resumed from the checkpoint: not the job's
     * restart, nothing counted.
     */
    @Test
    void underTorchrunWithARestartOfItsOwnAKilledKubeflowWorkerIsTorchrunsRestartNotTheJobs() {
        String ns = install.namespace("kf-torchrun-restarts");
        String job = torchrunKubeflowJob(RealNode.STATE.resolve("markers").resolve(ns))
                .replace("command: [torchrun, ", "command: [torchrun, --max_restarts=1, ");
        kubectl.runWithInput(job, "apply", "-n", ns, "-f", "-").orFail();
        awaitLogged(ns, "kf-master-0", "epoch 3/" + EPOCHS);
        Set<String> pods = podUids(ns);
        Instant fault = killTorchrunsWorkerFromTheMachine(ns, "kf-worker-0");
        PyTorchJob done = await().atMost(TRAINING).pollInterval(Duration.ofSeconds(1))
                .until(() -> admin.resources(PyTorchJob.class).inNamespace(ns).withName("kf").get(),
                        j -> j.getStatus() != null && j.getStatus().phase != null && j.getStatus().phase.isTerminal());
        assertEquals(JobPhase.Succeeded, done.getStatus().phase, events(ns, null).toString());
        assertEquals(0, done.getStatus().backoffCount, events(ns, null).toString());
        assertTrue(events(ns, "JobRestarting").isEmpty(), events(ns, null).toString());
        assertEquals(pods, podUids(ns), "the same pods");
        String master = logs(ns, "kf-master-0");
        assertTrue(master.contains("rank 0: resuming at epoch"), master);
        System.out.printf("real node, Kubeflow kind, torchrun with a restart of its own, a worker SIGKILLed: training again %d ms after%n",
                Duration.between(fault, RealNodeJobs.loggedAt(ns, "kf-master-0", "resuming at epoch")).toMillis());
    }

    /** {@link #kubeflowJob} under ExitCode, each rank's command torchrun (one process per pod, watched every 0.1 s). */
    static String torchrunKubeflowJob(Path state) {
        return torchrunKubeflowJob(state, "");
    }

    static String torchrunKubeflowJob(Path state, String env) {
        String job = kubeflowJob("ExitCode", state, env, "{}").replace("command: [python, /workspace/train.py]",
                "command: [torchrun, --monitor_interval=0.1, /workspace/train.py]").replace("  runPolicy: {", "  nprocPerNode: \"1\"\n  runPolicy: {");
        assertTrue(job.contains("torchrun, --monitor") && job.contains("nprocPerNode"), job);
        return job;
    }

    /**
     * SIGKILL to the training process torchrun started in the pod (its child), from the machine. The other pods'
     * training processes are watched from then on ({@link PeersOfAKilledRank}).
     */
    static Instant killTorchrunsWorkerFromTheMachine(String ns, String pod) {
        Map<String, ProcessHandle> peers = new LinkedHashMap<>();
        for (Pod other : admin.pods().inNamespace(ns).list().getItems()) {
            if (!other.getMetadata().getName().equals(pod) && "Running".equals(other.getStatus().getPhase())) {
                torchrunsWorker(other).ifPresent(worker -> peers.put(other.getMetadata().getName(), worker));
            }
        }
        ProcessHandle worker = torchrunsWorker(admin.pods().inNamespace(ns).withName(pod).get())
                .orElseThrow(() -> new AssertionError("no training process under torchrun in " + pod));
        Instant at = Instant.now();
        assertTrue(worker.destroyForcibly(), "SIGKILL to " + pod + "'s worker (pid " + worker.pid() + ")");
        PeersOfAKilledRank.watchFrom(at, peers, peerEnded::add);
        return at;
    }

    static Optional<ProcessHandle> torchrunsWorker(Pod pod) {
        return ProcessHandle.of(NodeContainer.of(node, pod).pid()).stream().flatMap(ProcessHandle::children)
                .filter(child -> child.info().commandLine().orElse("").contains("train.py")).findFirst();
    }

    /** Kubeflow's OnFailure, a master and two workers: worker-0 killed from the machine, OOM-killed by its limit, or deleted. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"killed", "oom", "deleted"})
    void aKubeflowJobsFaultyWorkerIsOneRestartAndTheJobSucceeds(String fault) {
        String ns = install.namespace("kf-" + fault);
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        String oom = fault.equals("oom") ? ", {name: OOM_IN_EPOCH, value: \"3\"}, {name: FAIL_RANKS, value: \"1\"}" : "";
        String manifest = kubeflowJob("OnFailure", state, ", {name: CHECKPOINT_PATH, value: /state/checkpoint.pt}" + oom, "{memory: 512Mi}");
        kubectl.runWithInput(manifest, "apply", "-n", ns, "-f", "-").orFail();
        awaitLogged(ns, "kf-master-0", fault.equals("oom") ? "all-reduce check" : "epoch 3/" + EPOCHS);
        Instant at = Instant.now();
        switch (fault) {
            case "killed" -> killFromTheMachine(ns, "kf-worker-0");
            case "deleted" -> kubectl.run("delete", "pod", "kf-worker-0", "-n", ns, "--wait=false").orFail();
            default -> { } // the worker allocates past its limit in epoch 3
        }
        assertKubeflowJobSucceededAfterOneRestart(ns, switch (fault) {
            case "killed" -> "pod kf-worker-0 (container pytorch) exited with code 137 (Error)";
            case "oom" -> "pod kf-worker-0 (container pytorch) exited with code 137 (OOMKilled)";
            default -> "pod kf-worker-0 was deleted";
        });
        assertTrue(logs(ns, "kf-master-0").contains("resuming at epoch"), logs(ns, "kf-master-0"));
        if (!fault.equals("oom")) {
            recordTimeToTrainAgain(ns, at, "kf-master-0", "kf-worker-0", "kf-worker-1");
        }
    }

    /**
     * A Kubeflow job (ExitCode: a master and two workers) under a real gang scheduler (Volcano, coscheduling, Kubernetes'
     * own), worker-0 killed from the machine mid-training: one restart of the job; its PodGroup stays, and the new group,
     * made once the old ranks are gone from the node, is handed to the scheduler again, placed whole and resumes from its
     * checkpoint.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"volcano", GangSchedulers.COSCHEDULING, "kubernetes"})
    void underAGangSchedulerARankKilledMidTrainingIsOneRestartAndTheNewGroupIsPlacedWhole(String scheduler) throws Exception {
        boolean volcano = scheduler.equals("volcano");
        boolean kubernetes = scheduler.equals("kubernetes");
        install.stopSharedOperator();
        try (GangSchedulers gang = volcano ? GangSchedulers.volcano(install.cluster) : kubernetes ? GangSchedulers.kubernetes(install.cluster)
                : GangSchedulers.coscheduling(install.cluster);
                OperatorProcess operator = install.newOperator(Map.of("torchjob.gang-scheduler-name", scheduler), true)) {
            var podGroups = admin.genericKubernetesResources(volcano ? GangSchedulers.VOLCANO_POD_GROUPS
                    : kubernetes ? GangSchedulers.KUBERNETES_POD_GROUPS : GangSchedulers.PLUGINS_POD_GROUPS);
            String ns = install.namespace("gang");
            Path state = RealNode.STATE.resolve("markers").resolve(ns);
            kubectl.runWithInput(kubeflowJob("ExitCode", state, ", {name: CHECKPOINT_PATH, value: /state/checkpoint.pt}", "{}"),
                    "apply", "-n", ns, "-f", "-").orFail();
            awaitLogged(ns, "kf-master-0", "epoch 3/" + EPOCHS);
            String podGroup = podGroups.inNamespace(ns).withName("kf").get().getMetadata().getUid();
            Set<String> before = podUids(ns);
            Instant fault = killFromTheMachine(ns, "kf-worker-0");
            // The new group, placed whole by the scheduler, under the same PodGroup (which goes with the job's end).
            List<Pod> group = await().atMost(TRAINING).pollInterval(Duration.ofMillis(200)).until(() -> admin.pods().inNamespace(ns).list().getItems(),
                    pods -> pods.size() == 3 && pods.stream().allMatch(p -> !before.contains(p.getMetadata().getUid())
                            && "Running".equals(p.getStatus().getPhase())));
            for (Pod pod : group) {
                assertEquals(kubernetes ? "default-scheduler" : scheduler, pod.getSpec().getSchedulerName(), pod.getMetadata().getName());
                assertEquals(RealNode.NAME, pod.getSpec().getNodeName(), pod.getMetadata().getName());
            }
            assertEquals(podGroup, podGroups.inNamespace(ns).withName("kf").get().getMetadata().getUid(), "the same PodGroup");
            assertKubeflowJobSucceededAfterOneRestart(ns, "pod kf-worker-0 (container pytorch) exited with code 137 (Error)");
            assertTrue(logs(ns, "kf-master-0").contains("resuming at epoch"), logs(ns, "kf-master-0"));
            Instant last = fault;
            for (Pod pod : group) {
                Instant in = RealNodeJobs.loggedAt(ns, pod.getMetadata().getName(), "all-reduce check");
                last = in.isAfter(last) ? in : last;
            }
            System.out.printf("real node, %s: a rank's fault mid-training -> every rank past init_process_group again: %d ms%n", scheduler,
                    Duration.between(fault, last).toMillis());
        } finally {
            install.operator();
        }
    }

    /**
     * A T9k job in an AppWrapper on the real node, with the grace periods docs/kueue.md gives: Kueue admits the AppWrapper
     * onto the node's flavor, AppWrapper's own controller makes the job; worker-0 killed from the machine mid-training is
     * one restart by the operator (the same job: AppWrapper resets nothing), which resumes, and the AppWrapper succeeds
     * with it. How long the AppWrapper had fewer running pods than it expects is printed: without those grace periods, a
     * look of AppWrapper's (once a minute) in that time would reset the whole job.
     */
    @Test
    void aRankKilledMidTrainingInAnAppWrapperIsOneRestartThatAppWrapperLeavesAlone() {
        String ns = install.namespace("wrapped");
        Path state = RealNode.STATE.resolve("markers").resolve(ns);
        try (KueueInstall kueue = KueueInstall.start(install.cluster, KueueInstall.DEFAULT_PODS_READY_TIMEOUT);
                AppWrapperController appWrappers = kueue.startAppWrapperController()) {
            kueue.queuesOn(ns, RealNodeJobs.realNodeFlavor(), "1");
            String job = RealNodeJobs.t9kJob("w", "backoffLimit: 2", master("ExitCode", state) + worker("ExitCode", state, "", "{}"));
            kubectl.runWithInput("""
                    apiVersion: workload.codeflare.dev/v1beta2
                    kind: AppWrapper
                    metadata:
                      name: aw
                      labels: {kueue.x-k8s.io/queue-name: user-queue}
                      annotations: %s
                    spec:
                      components:
                      - podSets:
                        - {path: "template.spec.replicaSpecs[0].template", replicas: 1}
                        - {path: "template.spec.replicaSpecs[1].template", replicas: 1}
                        template:
                    %s""".formatted(AppWrapperController.GRACE_PERIODS, job.indent(8)), "apply", "-n", ns, "-f", "-").orFail();
            awaitLogged(ns, "w-master-0", "epoch 3/" + EPOCHS);
            String uid = RealNodeJobs.t9k(ns, "w").getMetadata().getUid();
            await().atMost(Duration.ofSeconds(60)).until(() -> "Running".equals(AppWrapperController.status(admin, ns, "aw").get("phase")));
            Set<String> before = podUids(ns);
            Instant fault = killFromTheMachine(ns, "w-worker-0");
            // AppWrapper's look, every 100 ms: fewer than both pods running is what it resets the job for past its grace
            // periods, unless a pod has failed (then its failure grace period runs first). Both spans are measured.
            Instant[] fewer = new Instant[1];
            long[] unguardedMillis = new long[1];
            Instant[] previous = new Instant[1];
            await().atMost(TRAINING).pollInterval(Duration.ofMillis(100)).until(() -> {
                List<Pod> pods = admin.pods().inNamespace(ns).list().getItems();
                Instant now = Instant.now();
                long running = pods.stream().filter(p -> "Running".equals(p.getStatus().getPhase())).count();
                boolean failed = pods.stream().anyMatch(p -> "Failed".equals(p.getStatus().getPhase()));
                if (running < 2 && fewer[0] == null) {
                    fewer[0] = now;
                }
                if (running < 2 && !failed && previous[0] != null) {
                    unguardedMillis[0] += Duration.between(previous[0], now).toMillis();
                }
                previous[0] = now;
                return fewer[0] != null && running == 2 && pods.stream().noneMatch(p -> before.contains(p.getMetadata().getUid()));
            });
            Instant allRunning = Instant.now();
            PyTorchTrainingJob done = awaitT9k(ns, "w", JobPhase.Succeeded);
            assertEquals(1, done.getStatus().backoffCount, "one fault, one restart; the AppWrapper: " + AppWrapperController.status(admin, ns, "aw"));
            assertEquals(uid, done.getMetadata().getUid(), "the same job: AppWrapper never reset it");
            assertOneRestartResumed(ns, "w", "pod w-worker-0 (container pytorch) exited with code 137 (Error)", before);
            await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> assertEquals("Succeeded",
                    AppWrapperController.status(admin, ns, "aw").get("phase"), AppWrapperController.status(admin, ns, "aw").toString()));
            assertEquals(null, AppWrapperController.status(admin, ns, "aw").get("retries"), "AppWrapper counted no reset");
            System.out.printf("real node, AppWrapper: a rank's fault mid-training -> fewer pods running than expected after %d ms, for %d ms,"
                    + " of which %d ms with no failed pod%n", Duration.between(fault, fewer[0]).toMillis(),
                    Duration.between(fewer[0], allRunning).toMillis(), unguardedMillis[0]);
            AppWrapperController.deleteAll(admin, ns);
        }
    }
}
