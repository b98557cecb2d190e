package dev.torchjob.operator.kubeflow;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.testing.PodFates;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * A PyTorchJob, its pods and Services held in memory, changed only by applying plans (as the
 * executor does) and by the test playing kubelet: whole scenarios without an API server.
 */
final class KubeflowCluster {
    static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

    PyTorchJob job;
    final Map<String, Pod> pods = new LinkedHashMap<>();
    final Set<String> services = new LinkedHashSet<>();
    final List<Plan<PyTorchJobStatus>> plans = new ArrayList<>();
    Instant now = Instant.parse("2026-01-01T00:00:00Z");
    RestartBackoff backoff = RestartBackoff.NONE;
    /** The job's HorizontalPodAutoscaler, once a plan applied one. */
    HorizontalPodAutoscaler autoscaler;
    /** Where the job stands with its queue, as the reconciler would observe it from the job's Workload. */
    dev.torchjob.operator.engine.QueueAdmission queue = dev.torchjob.operator.engine.QueueAdmission.NOT_QUEUED;
    /** The operator's gang scheduler (torchjob.gang-scheduler-name), whether its PodGroup API is installed, and the job's PodGroup. */
    java.util.Optional<GangScheduler> gangScheduler = java.util.Optional.empty();
    boolean podGroupApi = true;
    GenericKubernetesResource podGroup;

    KubeflowCluster(String yaml) {
        this.job = KubeflowModelTest.parse(yaml);
    }

    Plan<PyTorchJobStatus> reconcile() {
        GangObservation gang = gangScheduler.isEmpty() ? GangObservation.NONE
                : new GangObservation(gangScheduler, podGroupApi, java.util.Optional.ofNullable(podGroup));
        Plan<PyTorchJobStatus> plan = KubeflowPlanner.plan(job, new ArrayList<>(pods.values()), services,
                java.util.Optional.ofNullable(autoscaler), now, Map.of(), backoff, queue, Map.of(), gang, Map.of());
        plans.add(plan);
        for (var object : plan.objectsToDelete()) {
            if (object instanceof GenericKubernetesResource) {
                podGroup = null;
            } else {
                autoscaler = null;
            }
        }
        for (var object : plan.objectsToApply()) {
            if (object instanceof GenericKubernetesResource applied) {
                // Applied: its spec and metadata, the status the scheduler wrote kept.
                Object status = podGroup == null ? null : podGroup.getAdditionalProperties().get("status");
                podGroup = SERIALIZATION.clone(applied);
                if (status != null) {
                    podGroup.setAdditionalProperty("status", status);
                }
            } else {
                autoscaler = (HorizontalPodAutoscaler) object;
            }
        }
        job.setStatus(plan.status());
        plan.podsToDelete().forEach(d -> pods.remove(d.name()));
        plan.sidecarsToStop().forEach(stop -> PodFates.sidecarsStopped(pods.get(stop.name())));
        plan.servicesToDelete().forEach(services::remove);
        plan.servicesToCreate().forEach(s -> services.add(s.getMetadata().getName()));
        for (Pod pod : plan.podsToCreate()) {
            Pod created = SERIALIZATION.clone(pod);
            created.getMetadata().setUid(UUID.randomUUID().toString());
            created.getMetadata().setCreationTimestamp(now.toString());
            created.setStatus(new PodStatusBuilder().withPhase("Pending").build());
            pods.put(created.getMetadata().getName(), created);
        }
        return plan;
    }

    /** Reconciles until a pass changes nothing. */
    void settle() {
        for (int i = 0; i < 20; i++) {
            Plan<PyTorchJobStatus> plan = reconcile();
            if (!plan.statusChanged() && plan.podsToCreate().isEmpty() && plan.podsToDelete().isEmpty()
                    && plan.servicesToCreate().isEmpty() && plan.servicesToDelete().isEmpty() && plan.objectsToApply().isEmpty()
                    && plan.objectsToDelete().isEmpty()) {
                return;
            }
        }
        throw new AssertionError("planner did not settle");
    }

    /** Pods and Services created, every pod running, the job settled on that. */
    KubeflowCluster started() {
        settle();
        runAll();
        settle();
        return this;
    }

    /** The gang scheduler writes the PodGroup's phase and, when given, an Unschedulable condition with its words. */
    void podGroupStatus(String phase, String unschedulable) {
        Map<String, Object> status = new LinkedHashMap<>();
        status.put("phase", phase);
        if (unschedulable != null) {
            status.put("conditions", List.of(Map.of("type", "Unschedulable", "status", "True", "reason", "NotEnoughResources",
                    "message", unschedulable)));
        }
        podGroup.setAdditionalProperty("status", status);
    }

    void runAll() {
        pods.values().forEach(PodFates::running);
    }

    void unschedulable(String name, String message) {
        PodFates.unschedulable(pods.get(name), message);
    }

    void exit(String name, int exitCode) {
        PodFates.exited(pods.get(name), exitCode, null);
    }

    void exitBesideSidecar(String name, int exitCode) {
        PodFates.exitedBesideSidecar(pods.get(name), exitCode);
    }

    void restartInPlace(String name, int exitCode) {
        PodFates.restartedInPlace(pods.get(name), exitCode);
    }

    List<String> conditionTypes() {
        return job.getStatus().conditions.stream().map(c -> c.type + "=" + c.status).toList();
    }

    String state() {
        var conditions = job.getStatus().conditions;
        return conditions.get(conditions.size() - 1).type;
    }
}
