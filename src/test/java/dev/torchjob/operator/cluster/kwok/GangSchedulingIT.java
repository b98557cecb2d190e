package dev.torchjob.operator.cluster.kwok;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.KubeflowCondition;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cluster.GangSchedulers;
import dev.torchjob.operator.cluster.KwokKubelet;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.cluster.OwnOperators;
import dev.torchjob.operator.kubeflow.KubeflowConditions;
import dev.torchjob.operator.reconciler.OperatorHarness;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * Two PyTorchJobs that each fit alone but not together, on two kwok nodes of 1000 CPUs with pods of
 * 600: without a gang scheduler the default scheduler places both masters and neither job can run
 * (the deadlock); with Volcano, and with scheduler-plugins' coscheduling, one job runs whole and the
 * other has no pod placed until the first ends. Both jobs are submitted while the nodes are full (a blocker pod on each), so that when room
 * comes every pod is pending at once: the masters (priority 1000, which preempts nothing) before the workers.
 */
class GangSchedulingIT extends OwnOperators {
    static final Duration WAIT = Duration.ofSeconds(90);
    /** Long enough for any scheduler to have placed what it would place. */
    static final Duration SETTLED = Duration.ofSeconds(5);
    static final List<String> NODES = List.of("kwok-node-6", "kwok-node-7");

    @BeforeAll
    static void cluster() {
        priorityClass("gang-test-master", 1000); // each test runs its own operator, with or without a gang scheduler
    }

    /**
     * A test that failed leaves nothing to fail the next (its pods would hold the two nodes, or take them once free):
     * the namespaces of every pod of 600 CPUs go, with their jobs.
     */
    @org.junit.jupiter.api.AfterEach
    void nothingOfATestIsLeft() {
        admin.pods().inAnyNamespace().list().getItems().stream().filter(GangSchedulingIT::ofThisClass).map(p -> p.getMetadata().getNamespace())
                .distinct().forEach(namespace -> admin.namespaces().withName(namespace).delete());
        await().atMost(WAIT).until(() -> admin.pods().inAnyNamespace().list().getItems().stream().noneMatch(GangSchedulingIT::ofThisClass));
    }

    /** The tests' pods, and only theirs, ask for 600 CPUs. */
    static boolean ofThisClass(Pod pod) {
        return pod.getSpec().getContainers().stream().anyMatch(c -> c.getResources() != null && c.getResources().getRequests() != null
                && c.getResources().getRequests().get("cpu") != null
                && c.getResources().getRequests().get("cpu").getNumericalAmount().compareTo(java.math.BigDecimal.valueOf(600)) == 0);
    }

    /** A master (priority 1000) and one worker, 600 CPUs each, only on {@link #NODES}. */
    static String job(String name) {
        String affinity = "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: "
                + "[{key: kubernetes.io/hostname, operator: In, values: [" + String.join(", ", NODES) + "]}]}]}}}";
        String container = "containers: [{name: pytorch, image: torch, resources: {requests: {cpu: \"600\"}}}]";
        return """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: %1$s}
                spec:
                  pytorchReplicaSpecs:
                    Master:
                      template: {spec: {priorityClassName: gang-test-master, affinity: %2$s, %3$s}}
                    Worker:
                      replicas: 1
                      template: {spec: {affinity: %2$s, %3$s}}
                """.formatted(name, affinity, container);
    }

    /** A pod bound to each node, holding 600 of its CPUs. */
    static void fillTheNodes(String namespace) {
        for (String node : NODES) {
            admin.pods().inNamespace(namespace).resource(new PodBuilder().withNewMetadata().withName("blocker-" + node).endMetadata()
                    .withNewSpec().withNodeName(node).addNewContainer().withName("c").withImage("x").withNewResources()
                    .addToRequests("cpu", new Quantity("600")).endResources().endContainer().endSpec().build()).create();
        }
    }

    static void freeTheNodes(String namespace) {
        for (String node : NODES) {
            admin.pods().inNamespace(namespace).withName("blocker-" + node).withGracePeriod(0).delete();
        }
        await().atMost(WAIT).until(() -> NODES.stream().allMatch(n -> admin.pods().inNamespace(namespace).withName("blocker-" + n).get() == null));
    }

    static boolean placed(OperatorHarness cluster, String pod) {
        Pod p = cluster.pod(pod);
        return p != null && p.getSpec().getNodeName() != null;
    }

    @Test
    void withoutAGangSchedulerTwoJobsThatFitAloneButNotTogetherDeadlock() throws Exception {
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            OperatorHarness cluster = install.harness("no-gang");
            fillTheNodes(cluster.namespace);
            cluster.submitPyTorchJob(job("a"));
            cluster.submitPyTorchJob(job("b"));
            cluster.awaitPodNames("a-master-0", "a-worker-0", "b-master-0", "b-worker-0", "blocker-kwok-node-6", "blocker-kwok-node-7");
            freeTheNodes(cluster.namespace);
            await().atMost(WAIT).until(() -> placed(cluster, "a-master-0") && placed(cluster, "b-master-0"));
            Thread.sleep(SETTLED.toMillis());
            assertTrue(!placed(cluster, "a-worker-0") && !placed(cluster, "b-worker-0"),
                    "each job holds a node with its master, and neither can ever start its worker");
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    @Test
    void withVolcanoOneJobRunsWholeAndTheOtherHasNoPodPlacedUntilTheFirstEnds() throws Exception {
        try (GangSchedulers volcano = GangSchedulers.volcano(install.cluster);
                OperatorProcess operator = install.newOperator(Map.of("torchjob.gang-scheduler-name", "volcano"), true)) {
            OperatorHarness cluster = install.harness("volcano");
            oneRunsWholeAndTheOtherWaits(cluster, GangSchedulers.VOLCANO_POD_GROUPS, "volcano",
                    Map.of("minMember", 2, "queue", "default", "minResources", Map.of("cpu", "1200")));
        }
    }

    /**
     * {@code minAvailable: 1} below the job's two pods: with one node full, Volcano places the master alone
     * (the gang is one pod) and the worker waits; deleting the job leaves no PodGroup (it is owned by the job).
     */
    @Test
    void withVolcanoMinAvailableBelowTheReplicasStartsPartlyAndDeletionLeavesNoPodGroup() throws Exception {
        try (GangSchedulers volcano = GangSchedulers.volcano(install.cluster);
                OperatorProcess operator = install.newOperator(Map.of("torchjob.gang-scheduler-name", "volcano"), true)) {
            OperatorHarness cluster = install.harness("volcano-min");
            admin.pods().inNamespace(cluster.namespace).resource(new PodBuilder().withNewMetadata().withName("blocker").endMetadata()
                    .withNewSpec().withNodeName(NODES.get(0)).addNewContainer().withName("c").withImage("x").withNewResources()
                    .addToRequests("cpu", new Quantity("600")).endResources().endContainer().endSpec().build()).create();
            cluster.submitPyTorchJob(job("m").replace("spec:\n", "spec:\n  runPolicy: {schedulingPolicy: {minAvailable: 1}}\n"));
            GenericKubernetesResource podGroup = await().atMost(WAIT).until(
                    () -> admin.genericKubernetesResources(GangSchedulers.VOLCANO_POD_GROUPS).inNamespace(cluster.namespace).withName("m").get(),
                    pg -> pg != null);
            assertEquals(Map.of("minMember", 1, "queue", "default", "minResources", Map.of("cpu", "600")),
                    podGroup.getAdditionalProperties().get("spec"), "the first pod's requests, the master's");
            await().atMost(WAIT).until(() -> placed(cluster, "m-master-0"));
            Thread.sleep(SETTLED.toMillis());
            assertTrue(!placed(cluster, "m-worker-0"), "no room for the worker; the gang of one started without it");
            cluster.awaitPyTorchJob("m", j -> j.getStatus() != null && j.getStatus().conditions != null);
            admin.resources(PyTorchJob.class).inNamespace(cluster.namespace).withName("m").delete();
            await().atMost(WAIT).until(() -> admin.genericKubernetesResources(GangSchedulers.VOLCANO_POD_GROUPS).inNamespace(cluster.namespace)
                    .withName("m").get() == null);
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    /**
     * A worker killed (exit 137) with restarts left: the whole group starts anew under the same PodGroup,
     * its new pods handed to Volcano again and placed together; the restart is counted once.
     */
    @Test
    void withVolcanoAGroupRestartKeepsTheGang() throws Exception {
        try (GangSchedulers volcano = GangSchedulers.volcano(install.cluster);
                OperatorProcess operator = install.newOperator(Map.of("torchjob.gang-scheduler-name", "volcano"), true)) {
            aGroupRestartKeepsTheGang(install.harness("volcano-restart"), GangSchedulers.VOLCANO_POD_GROUPS,
                    pod -> "volcano".equals(pod.getSpec().getSchedulerName())
                            && "r".equals(pod.getMetadata().getAnnotations().get("scheduling.k8s.io/group-name")));
        }
    }

    /** The new group of a restart is the PodGroup's gang again: kube-scheduler places it whole. */
    @Test
    void withKubernetesOwnGangSchedulingAGroupRestartKeepsTheGang() throws Exception {
        try (OperatorProcess operator = kubernetesGangOperator()) {
            aGroupRestartKeepsTheGang(install.harness("kubernetes-restart"), GangSchedulers.KUBERNETES_POD_GROUPS,
                    pod -> "default-scheduler".equals(pod.getSpec().getSchedulerName()) && Map.of("podGroupName", "r")
                            .equals(pod.getSpec().getAdditionalProperties().get("schedulingGroup")));
        }
    }

    void aGroupRestartKeepsTheGang(OperatorHarness cluster, ResourceDefinitionContext podGroups, java.util.function.Predicate<Pod> inTheGang) {
        cluster.submitPyTorchJob("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: r}
                spec:
                  runPolicy: {backoffLimit: 3}
                  pytorchReplicaSpecs:
                    Master:
                      template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "1"}}}]}}
                    Worker:
                      replicas: 1
                      template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "1"}}}]}}
                """);
        GenericKubernetesResource podGroup = awaitPodGroup(cluster, podGroups, "r");
        await().atMost(WAIT).until(() -> placed(cluster, "r-master-0") && placed(cluster, "r-worker-0"));
        cluster.kubelet.run("r-master-0");
        cluster.kubelet.run("r-worker-0");
        cluster.awaitState("r", "Running");
        String masterUid = cluster.pod("r-master-0").getMetadata().getUid();
        String workerUid = cluster.pod("r-worker-0").getMetadata().getUid();

        cluster.kubelet.exit("r-worker-0", 137);
        Pod master = cluster.awaitNewPod("r-master-0", masterUid);
        Pod worker = cluster.awaitNewPod("r-worker-0", workerUid);
        for (Pod pod : List.of(master, worker)) {
            assertTrue(inTheGang.test(pod), pod.getMetadata().getName() + ": " + pod.getSpec());
        }
        await().atMost(WAIT).until(() -> placed(cluster, "r-master-0") && placed(cluster, "r-worker-0"));
        GenericKubernetesResource after = awaitPodGroup(cluster, podGroups, "r");
        assertEquals(podGroup.getMetadata().getUid(), after.getMetadata().getUid(), "the same PodGroup");
        assertEquals(2, gangSize(after));
        cluster.kubelet.run("r-master-0");
        cluster.kubelet.run("r-worker-0");
        assertEquals(1, cluster.awaitState("r", "Running").getStatus().backoffCount, "one group restart");
        admin.namespaces().withName(cluster.namespace).delete();
    }

    /**
     * An elastic job scaled from two workers to three ({@code kubectl scale}, as an autoscaler would): the
     * PodGroup's {@code minMember} follows, and Volcano places the third worker beside the running two.
     */
    @Test
    void withVolcanoElasticScalingMovesMinMember() throws Exception {
        try (GangSchedulers volcano = GangSchedulers.volcano(install.cluster);
                OperatorProcess operator = install.newOperator(Map.of("torchjob.gang-scheduler-name", "volcano"), true)) {
            OperatorHarness cluster = install.harness("volcano-elastic");
            cluster.submitPyTorchJob("""
                    apiVersion: kubeflow.org/v1
                    kind: PyTorchJob
                    metadata: {name: e}
                    spec:
                      elasticPolicy: {minReplicas: 1, maxReplicas: 3, rdzvBackend: c10d}
                      pytorchReplicaSpecs:
                        Worker:
                          replicas: 2
                          template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "1"}}}]}}
                    """);
            assertEquals(2, spec(awaitPodGroup(cluster, GangSchedulers.VOLCANO_POD_GROUPS, "e")).get("minMember"));
            await().atMost(WAIT).until(() -> placed(cluster, "e-worker-0") && placed(cluster, "e-worker-1"));
            cluster.kubelet.run("e-worker-0");
            cluster.kubelet.run("e-worker-1");
            cluster.awaitState("e", "Running");

            install.cluster.kubectl().run("scale", "pytorchjob/e", "-n", cluster.namespace, "--replicas=3").orFail();
            await().atMost(WAIT).until(() -> Integer.valueOf(3).equals(spec(awaitPodGroup(cluster, GangSchedulers.VOLCANO_POD_GROUPS, "e")).get("minMember")));
            await().atMost(WAIT).until(() -> placed(cluster, "e-worker-2"));
            cluster.kubelet.run("e-worker-2");
            assertEquals(0, cluster.awaitState("e", "Running").getStatus().backoffCount, "scaling is not a restart");
            admin.namespaces().withName(cluster.namespace).delete();
        }
    }

    static GenericKubernetesResource awaitPodGroup(OperatorHarness cluster, ResourceDefinitionContext kind, String job) {
        return await().atMost(WAIT).until(() -> admin.genericKubernetesResources(kind).inNamespace(cluster.namespace).withName(job).get(),
                pg -> pg != null);
    }

    /** How many pods the PodGroup's gang is: Volcano's and scheduler-plugins' minMember, Kubernetes' gang minCount. */
    static Object gangSize(GenericKubernetesResource podGroup) {
        Object policy = spec(podGroup).get("schedulingPolicy");
        return policy instanceof Map<?, ?> p && p.get("gang") instanceof Map<?, ?> gang ? gang.get("minCount") : spec(podGroup).get("minMember");
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> spec(GenericKubernetesResource podGroup) {
        return (Map<String, Object>) podGroup.getAdditionalProperties().get("spec");
    }

    @Test
    void withCoschedulingOneJobRunsWholeAndTheOtherHasNoPodPlacedUntilTheFirstEnds() throws Exception {
        try (GangSchedulers coscheduling = GangSchedulers.coscheduling(install.cluster);
                OperatorProcess operator = install.newOperator(Map.of("torchjob.gang-scheduler-name", GangSchedulers.COSCHEDULING), true)) {
            OperatorHarness cluster = install.harness("coscheduling");
            oneRunsWholeAndTheOtherWaits(cluster, GangSchedulers.PLUGINS_POD_GROUPS, GangSchedulers.COSCHEDULING,
                    Map.of("minMember", 2, "minResources", Map.of("cpu", "1200")));
        }
    }

    /**
     * Kubernetes' own gang scheduling (the Workload API, beta in 1.37; the test control plane turns its feature gate
     * on): the default kube-scheduler, no second scheduler to run; the PodGroup a gang of two, disrupted as one, at the
     * master's priority class, which the worker's pods then get too (kube-scheduler places a gang at one priority).
     */
    @Test
    void withKubernetesOwnGangSchedulingOneJobRunsWholeAndTheOtherHasNoPodPlacedUntilTheFirstEnds() throws Exception {
        try (OperatorProcess operator = kubernetesGangOperator()) {
            OperatorHarness cluster = install.harness("kubernetes-gang");
            oneRunsWholeAndTheOtherWaits(cluster, GangSchedulers.KUBERNETES_POD_GROUPS, "default-scheduler",
                    Map.of("schedulingPolicy", Map.of("gang", Map.of("minCount", 2)), "disruptionMode", Map.of("all", Map.of()),
                            "priorityClassName", "gang-test-master"));
        }
    }

    /** The operator with {@code kubernetes} as its gang scheduler and the RBAC of its overlay; skipped where the API is not served. */
    static OperatorProcess kubernetesGangOperator() throws Exception {
        GangSchedulers.kubernetes(install.cluster);
        return install.newOperator(Map.of("torchjob.gang-scheduler-name", "kubernetes"), true);
    }

    /**
     * Jobs a and b submitted while the nodes are full: each gets its PodGroup, its pods go to the gang
     * scheduler and none is placed; once the nodes are free one job runs whole and the other has no pod
     * placed; once the first ends (its PodGroup deleted with its end) the second runs whole.
     */
    void oneRunsWholeAndTheOtherWaits(OperatorHarness cluster, ResourceDefinitionContext podGroups, String schedulerName,
            Map<String, Object> podGroupSpec) throws InterruptedException {
        fillTheNodes(cluster.namespace);
        cluster.submitPyTorchJob(job("a"));
        cluster.submitPyTorchJob(job("b"));
        for (String job : List.of("a", "b")) {
            GenericKubernetesResource podGroup = await().atMost(WAIT).until(
                    () -> admin.genericKubernetesResources(podGroups).inNamespace(cluster.namespace).withName(job).get(), pg -> pg != null);
            Map<?, ?> spec = (Map<?, ?>) podGroup.getAdditionalProperties().get("spec");
            assertEquals(podGroupSpec, spec.entrySet().stream().filter(e -> podGroupSpec.containsKey(e.getKey()) || !e.getKey().equals("priority"))
                    .collect(java.util.stream.Collectors.toMap(e -> e.getKey(), e -> e.getValue())), "as applied (the API server's priority aside)");
        }
        cluster.awaitPodNames("a-master-0", "a-worker-0", "b-master-0", "b-worker-0", "blocker-kwok-node-6", "blocker-kwok-node-7");
        for (String pod : List.of("a-master-0", "a-worker-0", "b-master-0", "b-worker-0")) {
            assertEquals(schedulerName, cluster.pod(pod).getSpec().getSchedulerName());
        }
        KubeflowCondition waiting = await().atMost(WAIT).until(() -> cluster.pytorchJob("a").getStatus().conditions.stream()
                .filter(c -> KubeflowConditions.REPLICA_CANNOT_START.equals(c.type)).findFirst().orElse(null),
                c -> c != null && "True".equals(c.status));
        System.out.println(schedulerName + ": a gang that cannot be placed, on the job: " + waiting.reason + ": " + waiting.message);
        cluster.awaitEvent(KubeflowConditions.REPLICA_CANNOT_START, "the job waits for it, nothing is counted");

        freeTheNodes(cluster.namespace);
        await().atMost(WAIT).until(() -> placed(cluster, "a-master-0") && placed(cluster, "a-worker-0")
                || placed(cluster, "b-master-0") && placed(cluster, "b-worker-0"));
        Thread.sleep(SETTLED.toMillis());
        String first = placed(cluster, "a-master-0") && placed(cluster, "a-worker-0") ? "a" : "b";
        String second = first.equals("a") ? "b" : "a";
        assertTrue(placed(cluster, first + "-master-0") && placed(cluster, first + "-worker-0"), first + " runs whole");
        assertTrue(!placed(cluster, second + "-master-0") && !placed(cluster, second + "-worker-0"), second + " has no pod placed");

        KwokKubelet kubelet = new KwokKubelet(admin, cluster.namespace);
        kubelet.run(first + "-master-0");
        kubelet.run(first + "-worker-0");
        cluster.awaitState(first, "Running");
        kubelet.exit(first + "-master-0", 0);
        cluster.awaitState(first, "Succeeded");
        // Volcano's and scheduler-plugins' PodGroup goes at once; Kubernetes' stays, terminating, while a running pod names it.
        await().atMost(WAIT).until(() -> {
            GenericKubernetesResource podGroup = admin.genericKubernetesResources(podGroups).inNamespace(cluster.namespace).withName(first).get();
            return podGroup == null || podGroup.getMetadata().getDeletionTimestamp() != null; // (a predicate is never asked about null)
        });
        kubelet.exit(first + "-worker-0", 0);
        await().atMost(WAIT).until(() -> admin.genericKubernetesResources(podGroups).inNamespace(cluster.namespace).withName(first).get() == null);
        await().atMost(WAIT).until(() -> placed(cluster, second + "-master-0") && placed(cluster, second + "-worker-0"));
        kubelet.run(second + "-master-0");
        kubelet.run(second + "-worker-0");
        PyTorchJob running = cluster.awaitState(second, "Running");
        assertEquals(0, running.getStatus().backoffCount, "waiting for the gang counted nothing");
        admin.namespaces().withName(cluster.namespace).delete();
    }
}
