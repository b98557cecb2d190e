package dev.torchjob.operator.kubeflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;

/** The PodGroup and pod fields Kubeflow's training-operator v1.9 writes for each --gang-scheduler-name. */
class GangSchedulerTest {
    static final String TEMPLATE = "{spec: {containers: [{name: pytorch, image: x, resources: {requests: {cpu: \"2\", memory: 4Gi}, "
            + "limits: {nvidia.com/gpu: 1}}}]}}";

    /** A job whose Master's template names a scheduler of its own. */
    static final String ANOTHER_SCHEDULER = """
            apiVersion: kubeflow.org/v1
            kind: PyTorchJob
            metadata: {name: j}
            spec:
              pytorchReplicaSpecs:
                Master: {template: {spec: {schedulerName: my-scheduler, containers: [{name: pytorch, image: x}]}}}
                Worker: {template: {spec: {containers: [{name: pytorch, image: x}]}}}
            """;

    static PyTorchJob job(String runPolicy) {
        return KubeflowModelTest.parse("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: j, namespace: team, annotations: {team.example/owner: ml}}
                spec:
                  runPolicy: %s
                  pytorchReplicaSpecs:
                    Master: {replicas: 1, template: %s}
                    Worker: {replicas: 3, template: %s}
                """.formatted(runPolicy, TEMPLATE, TEMPLATE));
    }

    static Map<?, ?> spec(GenericKubernetesResource podGroup) {
        return (Map<?, ?>) podGroup.getAdditionalProperties().get("spec");
    }

    static GenericKubernetesResource observed(String phase, Map<String, Object> spec) {
        GenericKubernetesResource podGroup = new GenericKubernetesResource();
        podGroup.setAdditionalProperty("spec", spec);
        if (phase != null) {
            podGroup.setAdditionalProperty("status", Map.of("phase", phase));
        }
        return podGroup;
    }

    @Test
    void theSettingNamesVolcanoASchedulerPluginsSchedulerOrNone() {
        assertEquals(Optional.empty(), GangScheduler.named(Optional.empty()));
        assertEquals(Optional.empty(), GangScheduler.named(Optional.of("none")));
        assertEquals(Optional.of(new GangScheduler.Volcano()), GangScheduler.named(Optional.of("volcano")));
        assertEquals(Optional.of(new GangScheduler.SchedulerPlugins("scheduler-plugins-scheduler")),
                GangScheduler.named(Optional.of("scheduler-plugins-scheduler")));
        assertEquals(Optional.of(new GangScheduler.Kubernetes()), GangScheduler.named(Optional.of(" kubernetes ")));
        assertEquals("kubernetes", new GangScheduler.Kubernetes().setting(), "messages name the setting, not default-scheduler");
        assertEquals(List.of("volcano", "scheduler-plugins", "kubernetes"), List.of(new GangScheduler.Volcano().overlay(),
                new GangScheduler.SchedulerPlugins("sp").overlay(), new GangScheduler.Kubernetes().overlay()), "kubernetes/gang-scheduling/*/");
        for (String overlay : List.of("volcano", "scheduler-plugins", "kubernetes")) {
            assertTrue(java.nio.file.Files.exists(java.nio.file.Path.of("kubernetes/gang-scheduling", overlay, "rbac.yaml")), overlay);
        }
    }

    @Test
    void kubernetesPodGroupAsksForEveryReplicaTogetherDisruptedAsOne() {
        GenericKubernetesResource podGroup = new GangScheduler.Kubernetes().podGroup(job("{}"), Optional.empty());
        assertEquals("scheduling.k8s.io/v1beta1", podGroup.getApiVersion());
        assertEquals("PodGroup", podGroup.getKind());
        assertEquals("j", podGroup.getMetadata().getName());
        assertEquals(job("{}").getMetadata().getUid(), podGroup.getMetadata().getOwnerReferences().get(0).getUid());
        assertEquals(Map.of("schedulingPolicy", Map.of("gang", Map.of("minCount", 4)), "disruptionMode", Map.of("all", Map.of())),
                spec(podGroup), "no queue, no minimum resources: kube-scheduler reads the pods' requests");
        PyTorchJob policy = job("{schedulingPolicy: {minAvailable: 2, queue: research, priorityClass: high, scheduleTimeoutSeconds: 120}}");
        assertEquals(Map.of("schedulingPolicy", Map.of("gang", Map.of("minCount", 2)), "disruptionMode", Map.of("all", Map.of()),
                "priorityClassName", "high"), spec(new GangScheduler.Kubernetes().podGroup(policy, Optional.empty())),
                "what Kubernetes' PodGroup has no field for is left out");
    }

    /** minCount may change (elastic scaling); priorityClassName and disruptionMode may not, so only a new PodGroup gets them. */
    @Test
    void kubernetesPodGroupOnceMadeFollowsOnlyMinCount() {
        GenericKubernetesResource made = observed(null, Map.of("schedulingPolicy", Map.of("gang", Map.of("minCount", 4)),
                "disruptionMode", Map.of("single", Map.of()), "priorityClassName", "low", "priority", 10));
        GenericKubernetesResource wanted = new GangScheduler.Kubernetes().podGroup(job("{schedulingPolicy: {priorityClass: high}}"),
                Optional.of(made));
        assertEquals(Map.of("schedulingPolicy", Map.of("gang", Map.of("minCount", 4))), spec(wanted));
        assertTrue(ObservedPodGroup.hasSpec(made, wanted), "nothing to apply: the immutable fields are not asked to change");
        GenericKubernetesResource scaled = new GangScheduler.Kubernetes().podGroup(job("{schedulingPolicy: {minAvailable: 3}}"),
                Optional.of(made));
        assertFalse(ObservedPodGroup.hasSpec(made, scaled), "a new minCount is applied");
        assertFalse(new GangScheduler.Kubernetes().holdsPods(Optional.empty()), "kube-scheduler holds them at scheduling");
    }

    @Test
    void volcanosPodGroupHasEveryReplicaTheirRequestsAndTheDefaultQueue() {
        GenericKubernetesResource podGroup = new GangScheduler.Volcano().podGroup(job("{}"), Optional.empty());
        assertEquals("scheduling.volcano.sh/v1beta1", podGroup.getApiVersion());
        assertEquals("PodGroup", podGroup.getKind());
        assertEquals("j", podGroup.getMetadata().getName(), "named as the job");
        assertEquals("team", podGroup.getMetadata().getNamespace());
        assertEquals(job("{}").getMetadata().getUid(), podGroup.getMetadata().getOwnerReferences().get(0).getUid(),
                "owned by the job: deleted with it");
        assertEquals(Map.of("team.example/owner", "ml"), podGroup.getMetadata().getAnnotations(), "the job's annotations, as Kubeflow");
        assertEquals("j", podGroup.getMetadata().getLabels().get(KubeflowLabels.JOB_NAME));
        assertEquals(Map.of("minMember", 4, "queue", "default", "minResources", Map.of("cpu", "8", "memory", "16Gi", "nvidia.com/gpu", "4")),
                spec(podGroup), "the GPUs in limits count too (Kubeflow leaves them out beside a CPU request)");
    }

    /** Kubeflow sums only the containers: a gang of pods with sidecars or pod-level resources was admitted short. */
    @Test
    void minResourcesCountSidecarsAndPodLevelResourcesAsTheSchedulerDoes() {
        String withSidecar = TEMPLATE.replace("{spec: {containers:", "{spec: {initContainers: [{name: logs, image: x, restartPolicy: Always, "
                + "resources: {requests: {cpu: 500m, memory: 512Mi}}}], containers:");
        PyTorchJob job = KubeflowModelTest.parse("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: j, namespace: team}
                spec:
                  pytorchReplicaSpecs:
                    Master: {replicas: 1, template: %s}
                    Worker: {replicas: 3, template: {spec: {resources: {requests: {cpu: "4", memory: 16Gi}}, containers: [{name: pytorch, image: x,
                      resources: {limits: {nvidia.com/gpu: 1}}}]}}}
                """.formatted(withSidecar));
        assertEquals(Map.of("cpu", "14500m", "memory", "53760Mi", "nvidia.com/gpu", "4"),
                spec(new GangScheduler.Volcano().podGroup(job, Optional.empty())).get("minResources"),
                "the master with its sidecar (2.5 cpu, 4.5Gi), three workers at their pod-level requests (4 cpu, 16Gi each)");
    }

    @Test
    void theSchedulingPolicyFillsMinMemberQueuePriorityAndMinResources() {
        PyTorchJob job = job("{schedulingPolicy: {minAvailable: 2, queue: research, priorityClass: high, scheduleTimeoutSeconds: 120}}");
        assertEquals(Map.of("minMember", 2, "queue", "research", "priorityClassName", "high",
                "minResources", Map.of("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", "2")),
                spec(new GangScheduler.Volcano().podGroup(job, Optional.empty())), "the first two pods' requests, Master's first");
        assertEquals(Map.of("minMember", 2, "minResources", Map.of("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", "2"),
                "scheduleTimeoutSeconds", 120), spec(new GangScheduler.SchedulerPlugins("sp").podGroup(job, Optional.empty())));
        PyTorchJob given = job("{schedulingPolicy: {minResources: {cpu: \"1\"}}}");
        assertEquals(Map.of("cpu", "1"), spec(new GangScheduler.Volcano().podGroup(given, Optional.empty())).get("minResources"));
    }

    @Test
    void aQueueThePodGroupAlreadyHasStays() {
        Map<?, ?> spec = spec(new GangScheduler.Volcano().podGroup(job("{schedulingPolicy: {queue: research}}"),
                Optional.of(observed("Inqueue", Map.of("queue", "batch")))));
        assertEquals("batch", spec.get("queue"));
    }

    /** A job whose Master alone names a priority class (scheduled first, as users write it for Volcano). */
    static PyTorchJob mixedPriorities(String runPolicy) {
        return KubeflowModelTest.parse(mixedPrioritiesYaml(runPolicy));
    }

    static String mixedPrioritiesYaml(String runPolicy) {
        return """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: j}
                spec:
                  runPolicy: %s
                  pytorchReplicaSpecs:
                    Master: {template: {spec: {priorityClassName: high, containers: [{name: pytorch, image: x}]}}}
                    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: x}]}}}
                """.formatted(runPolicy);
    }

    /**
     * kube-scheduler places no PodGroup whose pods' priority differs from its own ("all pods in a single pod group
     * should have the same priority"), and retries it forever: the gang gets one class and every pod has it.
     */
    @Test
    void kubernetesGangIsScheduledAtOnePriority() {
        GangScheduler kubernetes = new GangScheduler.Kubernetes();
        PyTorchJob job = mixedPriorities("{}");
        assertEquals("high", spec(kubernetes.podGroup(job, Optional.empty())).get("priorityClassName"), "the first a template names");
        assertEquals(List.of("Worker"), kubernetes.typesWithAnotherPriority(job, Optional.empty()));
        Map<String, Pod> pods = KubeflowPodsTest.pods(job);
        pods.forEach((name, pod) -> kubernetes.decorate(pod, job, name.contains("master") ? "Master" : "Worker", Optional.empty()));
        assertTrue(pods.values().stream().allMatch(pod -> "high".equals(pod.getSpec().getPriorityClassName())), "every pod at the gang's");

        PyTorchJob given = mixedPriorities("{schedulingPolicy: {priorityClass: batch}}");
        assertEquals("batch", spec(kubernetes.podGroup(given, Optional.empty())).get("priorityClassName"), "schedulingPolicy's first");
        assertEquals(List.of("Master", "Worker"), kubernetes.typesWithAnotherPriority(given, Optional.empty()));

        GenericKubernetesResource made = observed(null, Map.of("schedulingPolicy", Map.of("gang", Map.of("minCount", 3)), "priority", 0));
        Pod master = KubeflowPodsTest.pods(job).get("j-master-0");
        kubernetes.decorate(master, job, "Master", Optional.of(made));
        assertNull(master.getSpec().getPriorityClassName(), "a PodGroup made without a class keeps none, and so do its pods");
        assertEquals(List.of("Master"), kubernetes.typesWithAnotherPriority(job, Optional.of(made)));

        PyTorchJob none = job("{}");
        assertFalse(spec(kubernetes.podGroup(none, Optional.empty())).containsKey("priorityClassName"));
        assertEquals(List.of(), kubernetes.typesWithAnotherPriority(none, Optional.empty()), "nothing to say");
        assertEquals(List.of(), new GangScheduler.Volcano().typesWithAnotherPriority(job, Optional.empty()), "Volcano orders tasks by them");
    }

    @Test
    void volcanoHoldsThePodsUntilItTakesTheGroupInAndSchedulerPluginsNever() {
        GangScheduler volcano = new GangScheduler.Volcano();
        assertTrue(volcano.holdsPods(Optional.empty()), "no PodGroup yet");
        assertTrue(volcano.holdsPods(Optional.of(observed(null, Map.of()))), "no phase yet");
        assertTrue(volcano.holdsPods(Optional.of(observed("Pending", Map.of()))));
        assertFalse(volcano.holdsPods(Optional.of(observed("Inqueue", Map.of()))));
        assertFalse(volcano.holdsPods(Optional.of(observed("Running", Map.of()))));
        assertFalse(new GangScheduler.SchedulerPlugins("sp").holdsPods(Optional.empty()), "coscheduling holds them at scheduling");
    }

    @Test
    void podsNameTheSchedulerAndTheirGroup() {
        PyTorchJob job = job("{}");
        Map<String, Pod> pods = KubeflowPodsTest.pods(job);
        Pod worker = pods.get("j-worker-1");
        new GangScheduler.Volcano().decorate(worker, job, "Worker", Optional.empty());
        assertEquals("volcano", worker.getSpec().getSchedulerName());
        assertEquals("j", worker.getMetadata().getAnnotations().get("scheduling.k8s.io/group-name"));
        assertEquals("worker", worker.getMetadata().getAnnotations().get("volcano.sh/task-spec"));
        Pod master = pods.get("j-master-0");
        new GangScheduler.SchedulerPlugins("scheduler-plugins-scheduler").decorate(master, job, "Master", Optional.empty());
        assertEquals("scheduler-plugins-scheduler", master.getSpec().getSchedulerName());
        assertEquals("j", master.getMetadata().getLabels().get("scheduling.x-k8s.io/pod-group"));
        assertNull(master.getMetadata().getAnnotations() == null ? null : master.getMetadata().getAnnotations().get("volcano.sh/task-spec"));
        Pod worker0 = pods.get("j-worker-0");
        new GangScheduler.Kubernetes().decorate(worker0, job, "Worker", Optional.empty());
        assertEquals("default-scheduler", worker0.getSpec().getSchedulerName());
        assertEquals(Map.of("podGroupName", "j"), worker0.getSpec().getAdditionalProperties().get("schedulingGroup"));
        assertTrue(io.fabric8.kubernetes.client.utils.Serialization.asJson(worker0).contains("\"schedulingGroup\":{\"podGroupName\":\"j\"}"),
                "written in the pod as the API names it");
    }

    @Test
    void aSchedulerTheUserNamedIsKeptAndSaid() {
        PyTorchJob job = KubeflowModelTest.parse(ANOTHER_SCHEDULER);
        GangScheduler volcano = new GangScheduler.Volcano();
        assertEquals(List.of("Master"), volcano.typesWithAnotherScheduler(job));
        Pod master = KubeflowPodsTest.pods(job).get("j-master-0");
        volcano.decorate(master, job, "Master", Optional.empty());
        assertEquals("my-scheduler", master.getSpec().getSchedulerName(), "kept, as Kubeflow keeps it");
    }
}
