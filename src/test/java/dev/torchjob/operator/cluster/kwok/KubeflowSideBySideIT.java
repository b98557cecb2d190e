package dev.torchjob.operator.cluster.kwok;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cluster.GangSchedulers;
import dev.torchjob.operator.cluster.KubeflowTrainingOperator;
import dev.torchjob.operator.cluster.KwokKubelet;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.cluster.OwnOperators;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * The same PyTorchJob manifests under Kubeflow's own training-operator v1.9.4 and under this operator,
 * each started with the same {@code --gang-scheduler-name} on the same control plane, the real gang
 * scheduler running: the PodGroups and the pods' scheduling fields must be the same, apart from the
 * additions docs/kubeflow.md names (asserted here as exactly those).
 */
class KubeflowSideBySideIT extends OwnOperators {
    static final Duration WAIT = Duration.ofSeconds(90);
    static final List<String> JOBS = List.of("plain", "policy");
    static final List<String> PODS = List.of("plain-master-0", "plain-worker-0", "plain-worker-1",
            "policy-master-0", "policy-worker-0", "policy-worker-1");

    @BeforeAll
    static void cluster() {
        priorityClass("side-by-side-master", 1000); // one operator at a time acts on PyTorchJobs
    }

    /**
     * Two jobs: one without a scheduling policy, its master with a sidecar and its workers with pod-level
     * requests; one with every field of the policy, a master of higher priority and a container that only
     * limits memory (requests defaulted from limits at admission).
     */
    static String manifests() {
        return """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: plain}
                spec:
                  pytorchReplicaSpecs:
                    Master:
                      template: {spec: {initContainers: [{name: logs, image: shipper, restartPolicy: Always, resources: {requests: {cpu: 500m,
                        memory: 256Mi}}}], containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "1", memory: 1Gi}}}]}}
                    Worker:
                      replicas: 2
                      template: {spec: {resources: {requests: {cpu: "3"}}, containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "2"}}}]}}
                ---
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: policy, annotations: {team.example.com/owner: vision}}
                spec:
                  runPolicy:
                    schedulingPolicy: {minAvailable: 2, queue: default, priorityClass: side-by-side-master, scheduleTimeoutSeconds: 120}
                  pytorchReplicaSpecs:
                    Master:
                      template: {spec: {priorityClassName: side-by-side-master, containers: [{name: pytorch, image: torch,
                        resources: {requests: {cpu: "1"}, limits: {cpu: "2", memory: 1Gi}}}]}}
                    Worker:
                      replicas: 2
                      template: {spec: {containers: [{name: pytorch, image: torch, resources: {requests: {cpu: "1"}}}]}}
                """;
    }

    @Test
    void withVolcanoBothOperatorsMakeTheSamePodGroupsAndPods() throws Exception {
        try (GangSchedulers volcano = GangSchedulers.volcano(install.cluster)) {
            Made kubeflow = underKubeflow("volcano", GangSchedulers.VOLCANO_POD_GROUPS);
            Made ours = underThisOperator("volcano", GangSchedulers.VOLCANO_POD_GROUPS);
            assertSame(kubeflow, ours);
        }
    }

    @Test
    void withSchedulerPluginsBothOperatorsMakeTheSamePodGroupsAndPods() throws Exception {
        try (GangSchedulers coscheduling = GangSchedulers.coscheduling(install.cluster)) {
            Made kubeflow = underKubeflow(GangSchedulers.COSCHEDULING, GangSchedulers.PLUGINS_POD_GROUPS);
            Made ours = underThisOperator(GangSchedulers.COSCHEDULING, GangSchedulers.PLUGINS_POD_GROUPS);
            assertSame(kubeflow, ours);
        }
    }

    /**
     * A worker exits 1 under {@code restartPolicy: ExitCode} (a permanent code): both operators fail the job.
     * Kubeflow says it with a {@code PyTorchJobFailed} Warning and, in the same breath, a
     * {@code PyTorchJobRestarting} Warning that restarts nothing; this operator with {@code ReplicaFailed}
     * and {@code Failed} (docs/kubeflow.md, "Event reasons").
     */
    @Test
    void aReplicaThatFailsForGoodUnderExitCodeFailsTheJobUnderBoth() throws Exception {
        String job = """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: x}
                spec:
                  pytorchReplicaSpecs:
                    Master:
                      restartPolicy: ExitCode
                      template: {spec: {containers: [{name: pytorch, image: torch}]}}
                    Worker:
                      replicas: 1
                      restartPolicy: ExitCode
                      template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """;
        String kubeflowNamespace = install.namespace("kubeflow-exitcode");
        Map<String, String> kubeflowEvents;
        try (KubeflowTrainingOperator kubeflow = KubeflowTrainingOperator.start(install.cluster, kubeflowNamespace, null)) {
            kubeflowEvents = failForGood(kubeflowNamespace, job, "PyTorchJobFailed", "PyTorchJobRestarting");
        }
        Map<String, String> ourEvents;
        try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
            ourEvents = failForGood(install.namespace("ours-exitcode"), job, "ReplicaFailed", "Failed");
        }
        System.out.println("Kubeflow's events: " + kubeflowEvents + "; this operator's: " + ourEvents);
        assertEquals("Warning", kubeflowEvents.get("PyTorchJobFailed"), "Kubeflow: " + kubeflowEvents);
        assertEquals("Warning", kubeflowEvents.get("PyTorchJobRestarting"), "Kubeflow: " + kubeflowEvents);
        assertEquals("Warning", ourEvents.get("ReplicaFailed"), "ours: " + ourEvents);
        assertEquals("Warning", ourEvents.get("Failed"), "ours: " + ourEvents);
        assertEquals(null, ourEvents.get("JobRestarting"), "nothing restarts: nothing says so");
    }

    /**
     * Runs the job's pods, exits its worker with 1, waits for the job's Failed condition and for events of
     * these reasons; returns the job's events, reason to type.
     */
    static Map<String, String> failForGood(String namespace, String job, String... reasons) {
        install.cluster.kubectl().runWithInput(job, "create", "-n", namespace, "-f", "-").orFail();
        KwokKubelet kubelet = new KwokKubelet(admin, namespace);
        await().atMost(WAIT).until(() -> admin.pods().inNamespace(namespace).withName("x-worker-0").get() != null
                && admin.pods().inNamespace(namespace).withName("x-master-0").get() != null);
        kubelet.run("x-master-0");
        kubelet.run("x-worker-0");
        kubelet.exit("x-worker-0", 1);
        await().atMost(WAIT).until(() -> {
            PyTorchJob j = admin.resources(PyTorchJob.class).inNamespace(namespace).withName("x").get();
            return j.getStatus() != null && j.getStatus().conditions != null
                    && j.getStatus().conditions.stream().anyMatch(c -> "Failed".equals(c.type) && "True".equals(c.status));
        });
        Map<String, String> events = new TreeMap<>();
        await().atMost(WAIT).until(() -> {
            admin.v1().events().inNamespace(namespace).list().getItems().stream()
                    .filter(e -> "PyTorchJob".equals(e.getInvolvedObject().getKind()))
                    .forEach(e -> events.put(e.getReason(), e.getType()));
            return events.keySet().containsAll(List.of(reasons));
        });
        admin.resources(PyTorchJob.class).inNamespace(namespace).delete();
        await().atMost(WAIT).until(() -> admin.resources(PyTorchJob.class).inNamespace(namespace).list().getItems().isEmpty());
        admin.namespaces().withName(namespace).delete();
        return events;
    }

    /** What one operator made of {@link #manifests()}: each PodGroup and each pod, reduced to the fields compared. */
    record Made(Map<String, Map<String, Object>> podGroups, Map<String, Map<String, Object>> pods) {
    }

    Made underKubeflow(String gangSchedulerName, ResourceDefinitionContext podGroups) {
        String namespace = install.namespace("kubeflow-" + gangSchedulerName.substring(0, 7));
        try (KubeflowTrainingOperator kubeflow = KubeflowTrainingOperator.start(install.cluster, namespace, gangSchedulerName)) {
            return madeIn(namespace, podGroups);
        }
    }

    Made underThisOperator(String gangSchedulerName, ResourceDefinitionContext podGroups) throws InterruptedException {
        try (OperatorProcess operator = install.newOperator(Map.of("torchjob.gang-scheduler-name", gangSchedulerName), true)) {
            return madeIn(install.namespace("ours-" + gangSchedulerName.substring(0, 7)), podGroups);
        }
    }

    /** Submits the manifests, waits for every PodGroup and pod, reads them, and deletes the jobs (with what they own). */
    static Made madeIn(String namespace, ResourceDefinitionContext podGroupKind) {
        install.cluster.kubectl().runWithInput(manifests(), "create", "-n", namespace, "-f", "-").orFail();
        Map<String, Map<String, Object>> podGroups = new TreeMap<>();
        for (String job : JOBS) {
            GenericKubernetesResource podGroup = await().atMost(WAIT).until(
                    () -> admin.genericKubernetesResources(podGroupKind).inNamespace(namespace).withName(job).get(), pg -> pg != null);
            podGroups.put(job, comparedFields(podGroup));
        }
        Map<String, Map<String, Object>> pods = new TreeMap<>();
        for (String name : PODS) {
            Pod pod = await().atMost(WAIT).until(() -> admin.pods().inNamespace(namespace).withName(name).get(), p -> p != null);
            pods.put(name, comparedFields(pod));
        }
        admin.resources(PyTorchJob.class).inNamespace(namespace).delete();
        await().atMost(WAIT).until(() -> admin.resources(PyTorchJob.class).inNamespace(namespace).list().getItems().isEmpty());
        admin.namespaces().withName(namespace).delete();
        return new Made(podGroups, pods);
    }

    static Map<String, Object> comparedFields(GenericKubernetesResource podGroup) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("labels", podGroup.getMetadata().getLabels());
        fields.put("annotations", podGroup.getMetadata().getAnnotations());
        fields.put("ownerReferences", podGroup.getMetadata().getOwnerReferences().stream().map(KubeflowSideBySideIT::withoutUid).toList());
        fields.put("spec", podGroup.getAdditionalProperties().get("spec"));
        return fields;
    }

    static Map<String, Object> comparedFields(Pod pod) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("labels", pod.getMetadata().getLabels());
        fields.put("annotations", pod.getMetadata().getAnnotations());
        fields.put("schedulerName", pod.getSpec().getSchedulerName());
        fields.put("priorityClassName", pod.getSpec().getPriorityClassName());
        return fields;
    }

    static String withoutUid(OwnerReference owner) {
        return owner.getApiVersion() + " " + owner.getKind() + " " + owner.getName() + " controller=" + owner.getController()
                + " blockOwnerDeletion=" + owner.getBlockOwnerDeletion();
    }

    /**
     * This operator's Made with its documented additions (docs/kubeflow.md) taken away, each asserted to be
     * there: the older pod labels and the default-container annotation; its PodGroups' labels (its
     * informer watches only its own); in {@code minResources}, a resource only limited, a sidecar and
     * pod-level requests counted (Kubeflow sums the containers: 5 cpu, 1Gi).
     */
    static Made withoutTheDocumentedAdditions(Made ours) {
        Map<String, Map<String, Object>> podGroups = new TreeMap<>();
        ours.podGroups().forEach((job, fields) -> {
            Map<String, Object> copy = new LinkedHashMap<>(fields);
            copy.put("labels", without(copy.get("labels"), Map.of("controller-name", "pytorch-operator", "job-name", job,
                    "training.kubeflow.org/job-name", job, "training.kubeflow.org/operator-name", "pytorchjob-controller")));
            Map<String, Object> spec = new LinkedHashMap<>(asMap(copy.get("spec")));
            if (job.equals("policy")) {
                spec.put("minResources", without(spec.get("minResources"), Map.of("memory", "1Gi")));
            } else if (spec.containsKey("minResources")) {
                assertEquals(Map.of("cpu", "7500m", "memory", "1280Mi"), spec.get("minResources"), "1 + 0.5 + 2 x 3 cpu, 1Gi + 256Mi");
                spec.put("minResources", Map.of("cpu", "5", "memory", "1Gi"));
            }
            copy.put("spec", spec);
            podGroups.put(job, copy);
        });
        Map<String, Map<String, Object>> pods = new TreeMap<>();
        ours.pods().forEach((pod, fields) -> {
            Map<String, Object> copy = new LinkedHashMap<>(fields);
            String job = pod.substring(0, pod.indexOf('-'));
            copy.put("labels", without(copy.get("labels"), Map.of("controller-name", "pytorch-operator", "job-name", job)));
            copy.put("annotations", without(copy.get("annotations"), Map.of("kubectl.kubernetes.io/default-container", "pytorch")));
            pods.put(pod, copy);
        });
        return new Made(podGroups, pods);
    }

    /** The map without these entries, each asserted to be in it with that value. */
    static Map<String, Object> without(Object map, Map<String, String> entries) {
        Map<String, Object> rest = new TreeMap<>(asMap(map));
        entries.forEach((key, value) -> assertEquals(value, String.valueOf(rest.remove(key)), key + " in " + map));
        return rest;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> asMap(Object map) {
        return map == null ? Map.of() : (Map<String, Object>) map;
    }

    static void assertSame(Made kubeflow, Made ours) {
        System.out.println("Kubeflow's training-operator made: " + kubeflow);
        System.out.println("this operator made:                " + ours);
        Made comparable = withoutTheDocumentedAdditions(ours);
        assertEquals(kubeflow.pods(), comparable.pods(), "the pods' scheduling fields");
        assertEquals(kubeflow.podGroups(), comparable.podGroups(), "the PodGroups");
    }
}
