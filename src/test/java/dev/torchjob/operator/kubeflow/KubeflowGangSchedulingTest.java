package dev.torchjob.operator.kubeflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.KubeflowCondition;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import dev.torchjob.operator.engine.Gang;
import dev.torchjob.operator.engine.Plan;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * A PyTorchJob under a gang scheduler (torchjob.gang-scheduler-name, Kubeflow's --gang-scheduler-name):
 * its PodGroup, its pods handed to the scheduler, Volcano's hold until it admits the group, and the
 * PodGroup's end.
 */
class KubeflowGangSchedulingTest {
    static final String POD = "{spec: {containers: [{name: pytorch, image: x, resources: {requests: {cpu: \"1\"}}}]}}";

    static KubeflowCluster job(GangScheduler scheduler, String runPolicy) {
        KubeflowCluster cluster = new KubeflowCluster("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n"
                + "  runPolicy: " + runPolicy + "\n  pytorchReplicaSpecs:\n    Master: {template: " + POD + "}\n"
                + "    Worker: {replicas: 2, template: " + POD + "}\n");
        cluster.gangScheduler = Optional.of(scheduler);
        return cluster;
    }

    static List<Plan.JobEvent> events(Plan<PyTorchJobStatus> plan, String reason) {
        return plan.events().stream().filter(e -> e.reason().equals(reason)).toList();
    }

    static KubeflowCondition cannotStart(KubeflowCluster cluster) {
        return KubeflowConditions.find(cluster.job.getStatus().conditions, KubeflowConditions.REPLICA_CANNOT_START);
    }

    @Test
    void volcanoGetsThePodGroupFirstAndThePodsOnceItAdmitsTheGroup() {
        KubeflowCluster cluster = job(new GangScheduler.Volcano(), "{}");
        Plan<PyTorchJobStatus> first = cluster.reconcile();
        assertNotNull(cluster.podGroup, "the PodGroup is applied");
        assertEquals(3, ((Map<?, ?>) cluster.podGroup.getAdditionalProperties().get("spec")).get("minMember"));
        assertTrue(first.podsToCreate().isEmpty(), "no pod before Volcano has taken the group in, as Kubeflow");
        cluster.settle();
        assertTrue(cluster.pods.isEmpty());
        assertNull(cannotStart(cluster), "not looked at yet: nothing to say");

        cluster.podGroupStatus("Inqueue", null);
        cluster.settle();
        assertEquals(3, cluster.pods.size(), "admitted: the whole gang is created");
        Pod worker = cluster.pods.get("j-worker-1");
        assertEquals("volcano", worker.getSpec().getSchedulerName());
        assertEquals("j", worker.getMetadata().getAnnotations().get("scheduling.k8s.io/group-name"));
        assertEquals("worker", worker.getMetadata().getAnnotations().get("volcano.sh/task-spec"));
    }

    @Test
    void aGangVolcanoCannotPlaceIsSaidOnTheJobOnceAndTheJobWaitsCountingNothing() {
        KubeflowCluster cluster = job(new GangScheduler.Volcano(), "{}");
        cluster.settle();
        cluster.podGroupStatus("Pending", "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable");
        Plan<PyTorchJobStatus> held = cluster.reconcile();
        assertTrue(held.podsToCreate().isEmpty());
        KubeflowCondition condition = cannotStart(cluster);
        assertEquals("True", condition.status);
        assertEquals("PodGroupPending", condition.reason);
        assertTrue(condition.message.startsWith("PodGroup j is Pending in volcano's queue default: NotEnoughResources: 3/3 tasks in gang "
                + "unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; its pods are created once volcano admits the whole group"),
                condition.message);
        assertEquals(1, events(held, "ReplicaCannotStart").size());
        assertEquals("Created", cluster.state(), "the job waits, as in Kubeflow");
        assertEquals(0, cluster.job.getStatus().backoffCount);
        assertTrue(events(cluster.reconcile(), "ReplicaCannotStart").isEmpty(), "said once");

        cluster.podGroupStatus("Inqueue", null);
        cluster.settle();
        assertEquals(3, cluster.pods.size());
        assertEquals("False", cannotStart(cluster).status, "no longer held");
    }

    @Test
    void schedulerPluginsGetsThePodsAtOnceWithTheGroupLabel() {
        KubeflowCluster cluster = job(new GangScheduler.SchedulerPlugins("scheduler-plugins-scheduler"),
                "{schedulingPolicy: {minAvailable: 2, scheduleTimeoutSeconds: 60}}");
        Plan<PyTorchJobStatus> first = cluster.reconcile();
        assertEquals(3, first.podsToCreate().size(), "coscheduling holds them at scheduling, not at creation");
        assertEquals("scheduling.x-k8s.io/v1alpha1", cluster.podGroup.getApiVersion());
        assertEquals(Map.of("minMember", 2, "minResources", Map.of("cpu", "2"), "scheduleTimeoutSeconds", 60),
                cluster.podGroup.getAdditionalProperties().get("spec"));
        Pod master = first.podsToCreate().get(0);
        assertEquals("scheduler-plugins-scheduler", master.getSpec().getSchedulerName());
        assertEquals("j", master.getMetadata().getLabels().get("scheduling.x-k8s.io/pod-group"));
    }

    /**
     * The gang scheduler calls the first members unschedulable while the rest are being created (Volcano's
     * "pod group is not ready"): nothing is said until the whole group has existed for Gang.SETTLE; a pass
     * is asked for then, and a member still unschedulable is said.
     */
    @Test
    void aGangsFirstMembersUnschedulableWhileTheGroupIsMadeIsNotSaid() {
        KubeflowCluster cluster = job(new GangScheduler.SchedulerPlugins("sp"), "{}");
        cluster.reconcile();
        String gangWords = "pod group is not ready, 2 Pending, 3 minAvailable";
        cluster.unschedulable("j-master-0", gangWords);
        cluster.unschedulable("j-worker-0", gangWords);
        Plan<PyTorchJobStatus> justMade = cluster.reconcile();
        assertTrue(events(justMade, "ReplicaCannotStart").isEmpty(), "the group was just made");
        assertTrue(cannotStart(cluster) == null || "False".equals(cannotStart(cluster).status));
        assertEquals(Optional.of(Gang.SETTLE), justMade.recheckAfter(), "looked at again once it settled");

        cluster.now = cluster.now.plus(Gang.SETTLE);
        Plan<PyTorchJobStatus> settled = cluster.reconcile();
        assertEquals(2, events(settled, "ReplicaCannotStart").size(), "each pod, once the whole group has existed a while");
        assertEquals("True", cannotStart(cluster).status);
        assertEquals("Unschedulable", cannotStart(cluster).reason);
    }

    /** Without a gang scheduler a pod the scheduler cannot place is said at once. */
    @Test
    void withoutAGangSchedulerAnUnschedulablePodIsSaidAtOnce() {
        KubeflowCluster cluster = new KubeflowCluster("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n"
                + "  pytorchReplicaSpecs:\n    Master: {template: " + POD + "}\n    Worker: {replicas: 2, template: " + POD + "}\n");
        cluster.reconcile();
        cluster.unschedulable("j-worker-0", "0/8 nodes are available: 8 Insufficient cpu.");
        assertEquals(1, events(cluster.reconcile(), "ReplicaCannotStart").size());
    }

    @Test
    void theEndAndASuspensionDeleteThePodGroup() {
        KubeflowCluster cluster = job(new GangScheduler.SchedulerPlugins("sp"), "{}");
        cluster.started();
        cluster.job.getSpec().runPolicy.suspend = true;
        cluster.settle();
        assertNull(cluster.podGroup, "suspended: deleted, as Kubeflow");
        cluster.job.getSpec().runPolicy.suspend = false;
        cluster.settle();
        assertNotNull(cluster.podGroup, "resumed: made again");
        cluster.runAll();
        cluster.exit("j-master-0", 0);
        cluster.settle();
        assertEquals("Succeeded", cluster.state());
        assertNull(cluster.podGroup, "ended: deleted");
    }

    /** Kubernetes' own gang scheduling: the pods at once, each naming the PodGroup; a restart's new group names it too. */
    @Test
    void kubernetesGetsThePodsAtOnceNamingTheirPodGroupAndARestartKeepsIt() {
        KubeflowCluster cluster = job(new GangScheduler.Kubernetes(), "{backoffLimit: 3}");
        Plan<PyTorchJobStatus> first = cluster.reconcile();
        assertEquals(3, first.podsToCreate().size(), "kube-scheduler holds them at scheduling, not at creation");
        assertEquals("scheduling.k8s.io/v1beta1", cluster.podGroup.getApiVersion());
        cluster.settle();
        cluster.runAll();
        cluster.exit("j-worker-1", 137);
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount, "one group restart");
        assertNotNull(cluster.podGroup, "the gang stays through the restart");
        assertEquals(3, cluster.pods.size());
        assertTrue(cluster.pods.values().stream().allMatch(p -> Map.of("podGroupName", "j").equals(p.getSpec().getAdditionalProperties()
                .get("schedulingGroup"))), "the new group's pods are the gang again");
        cluster.runAll();
        cluster.exit("j-master-0", 0);
        cluster.settle();
        assertEquals("Succeeded", cluster.state());
        assertNull(cluster.podGroup, "ended: deleted");
    }

    @Test
    void minMemberFollowsTheReplicasAndAGroupRestartKeepsTheGang() {
        KubeflowCluster cluster = job(new GangScheduler.SchedulerPlugins("sp"), "{backoffLimit: 3}");
        cluster.started();
        cluster.job.getSpec().pytorchReplicaSpecs.get("Worker").replicas = 3;
        Plan<PyTorchJobStatus> scaled = cluster.reconcile();
        assertEquals(4, ((Map<?, ?>) cluster.podGroup.getAdditionalProperties().get("spec")).get("minMember"));
        assertEquals(1, scaled.objectsToApply().size());
        cluster.settle();
        cluster.runAll();
        cluster.exit("j-worker-0", 137);
        cluster.settle();
        assertEquals(1, cluster.job.getStatus().backoffCount, "one group restart");
        assertNotNull(cluster.podGroup, "the gang stays through the restart");
        assertTrue(cluster.pods.values().stream().allMatch(p -> "sp".equals(p.getSpec().getSchedulerName())), "the new group too");
    }

    @Test
    void aMissingPodGroupApiKeepsTheJobWaitingAndSaysWhy() {
        KubeflowCluster cluster = job(new GangScheduler.Volcano(), "{}");
        cluster.podGroupApi = false;
        Plan<PyTorchJobStatus> plan = cluster.reconcile();
        assertTrue(plan.podsToCreate().isEmpty() && plan.objectsToApply().isEmpty());
        assertEquals(List.of("PyTorchJob j waits: the gang scheduler volcano is set, and its PodGroup API (scheduling.volcano.sh/v1beta1)"
                + " is not installed in the cluster; the pods are created once it is."),
                events(plan, "SchedulerUnavailable").stream().map(Plan.JobEvent::message).toList());
    }

    /** Kubernetes' PodGroup stays, terminating, while a running pod names it: the operator asks for its deletion once. */
    @Test
    void aPodGroupAlreadyTerminatingIsNotDeletedAgain() {
        KubeflowCluster cluster = job(new GangScheduler.Kubernetes(), "{}");
        cluster.started();
        cluster.exit("j-master-0", 0);
        var made = cluster.podGroup;
        Plan<PyTorchJobStatus> ended = cluster.reconcile();
        assertEquals(1, ended.objectsToDelete().size(), "the end deletes the PodGroup");
        made.getMetadata().setDeletionTimestamp("2026-12-02T20:00:00Z");
        cluster.podGroup = made; // the API server keeps it: a worker still runs
        assertEquals(List.of(), cluster.reconcile().objectsToDelete(), "terminating: asked once");
    }

    @Test
    void underKubernetesATemplatesOtherPriorityClassIsTheGangsAndIsSaid() {
        KubeflowCluster cluster = new KubeflowCluster(GangSchedulerTest.mixedPrioritiesYaml("{}"));
        cluster.gangScheduler = Optional.of(new GangScheduler.Kubernetes());
        Plan<PyTorchJobStatus> plan = cluster.reconcile();
        assertTrue(plan.podsToCreate().stream().allMatch(p -> "high".equals(p.getSpec().getPriorityClassName())));
        assertEquals(List.of("A gang is scheduled at one priority: Worker's pods get the PodGroup's priority class (high) in place of"
                + " their template's"), events(plan, "SetPodTemplatePriorityClassName").stream().map(Plan.JobEvent::message).toList());
    }

    @Test
    void aTemplateNamingAnotherSchedulerKeepsItAndIsSaid() {
        KubeflowCluster cluster = new KubeflowCluster(GangSchedulerTest.ANOTHER_SCHEDULER);
        cluster.gangScheduler = Optional.of(new GangScheduler.SchedulerPlugins("sp"));
        Plan<PyTorchJobStatus> plan = cluster.reconcile();
        assertEquals("my-scheduler", plan.podsToCreate().get(0).getSpec().getSchedulerName());
        assertEquals(1, events(plan, "SetPodTemplateSchedulerName").size());
    }
}
