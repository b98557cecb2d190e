package dev.torchjob.operator.t9k;

import dev.torchjob.operator.engine.Observation;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.testing.PodFates;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.Plan;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * A job and its pods held in memory, changed only by applying plans (as the executor does) and
 * by the test playing kubelet. Lets planner tests run whole scenarios without an API server.
 */
final class InMemoryCluster {
    static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

    PyTorchTrainingJob job;
    final Map<String, Pod> pods = new LinkedHashMap<>();
    boolean serviceExists;
    boolean podGroupApiInstalled = true;
    boolean podGroupExists;
    Instant now = Instant.parse("2026-01-01T00:00:00Z");
    /** At once by default: the back-off has its own tests. */
    RestartBackoff backoff = RestartBackoff.NONE;
    final List<Plan<PyTorchTrainingJobStatus>> plans = new ArrayList<>();
    int resourceVersion = 1;

    static PyTorchTrainingJob parse(String yaml) {
        PyTorchTrainingJob job = SERIALIZATION.unmarshal(yaml, PyTorchTrainingJob.class);
        job.getMetadata().setUid("job-uid-" + job.getMetadata().getName());
        job.getMetadata().setNamespace(job.getMetadata().getNamespace() == null ? "default" : job.getMetadata().getNamespace());
        job.getMetadata().setGeneration(1L);
        return job;
    }

    InMemoryCluster(String yaml) {
        this.job = parse(yaml);
    }

    /** One reconcile: plan from what is observed, then apply it completely. */
    Plan<PyTorchTrainingJobStatus> reconcile() {
        Plan<PyTorchTrainingJobStatus> plan = plan();
        applyStatus(plan);
        applyPods(plan);
        return plan;
    }

    Plan<PyTorchTrainingJobStatus> plan() {
        Observation.PodGroupState podGroup = !T9kPlanner.usesT9kScheduler(job)
                ? Observation.PodGroupState.NOT_NEEDED
                : !podGroupApiInstalled ? Observation.PodGroupState.API_MISSING
                : podGroupExists ? Observation.PodGroupState.EXISTS : Observation.PodGroupState.MISSING;
        Plan<PyTorchTrainingJobStatus> plan = T9kPlanner.plan(new Observation<>(job, new ArrayList<>(pods.values()), serviceExists, podGroup, now), backoff);
        plans.add(plan);
        return plan;
    }

    void applyStatus(Plan<PyTorchTrainingJobStatus> plan) {
        job.setStatus(plan.status());
    }

    void applyPods(Plan<PyTorchTrainingJobStatus> plan) {
        plan.podsToDelete().forEach(d -> pods.remove(d.name()));
        if (!plan.servicesToCreate().isEmpty()) {
            serviceExists = true;
        }
        plan.podGroupToCreate().ifPresent(g -> podGroupExists = true);
        for (Pod pod : plan.podsToCreate()) {
            Pod created = SERIALIZATION.clone(pod);
            created.getMetadata().setUid(UUID.randomUUID().toString());
            created.getMetadata().setResourceVersion(Integer.toString(resourceVersion++));
            created.setStatus(new PodStatusBuilder().withPhase("Pending").build());
            pods.put(created.getMetadata().getName(), created);
        }
    }

    /** Reconciles until a pass changes nothing. */
    void settle() {
        for (int i = 0; i < 20; i++) {
            Plan<PyTorchTrainingJobStatus> plan = reconcile();
            if (!plan.statusChanged() && plan.podsToCreate().isEmpty() && plan.podsToDelete().isEmpty()
                    && plan.servicesToCreate().isEmpty() && plan.podGroupToCreate().isEmpty()) {
                return;
            }
        }
        throw new AssertionError("planner did not settle");
    }

    Pod pod(String name) {
        return pods.get(name);
    }

    void runAll() {
        pods.keySet().forEach(this::run);
    }

    void run(String name) {
        PodFates.running(pods.get(name));
    }

    void exit(String name, int exitCode) {
        exit(name, exitCode, null);
    }

    /** The container ends; {@code message} is its termination message (its last log lines, with FallbackToLogsOnError). */
    void exit(String name, int exitCode, String message) {
        PodFates.exited(pods.get(name), exitCode, message);
    }

    void evict(String name) {
        PodFates.evicted(pods.get(name));
    }

    void vanish(String name) {
        pods.remove(name);
    }
}
