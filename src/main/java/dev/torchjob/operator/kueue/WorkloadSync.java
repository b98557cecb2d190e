package dev.torchjob.operator.kueue;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.Pods;
import dev.torchjob.operator.engine.ReplicaPhase;
import dev.torchjob.operator.status.StatusTime;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * The job's side of Kueue's Workload protocol, decided after each pass: what the Workload must say
 * about the job. Pure; the shell applies the changes (status first, then metadata and spec) with
 * optimistic locking, so a write that meets Kueue's own is retried, never merged blindly.
 */
public final class WorkloadSync {
    /** Set on a Workload this operator deactivated because its job was paused: resuming reactivates only those. */
    public static final String PAUSED_ANNOTATION = "torchjob.dev/deactivated-by-pause";
    private static final KubernetesSerialization JSON = new KubernetesSerialization();

    private WorkloadSync() {
    }

    /**
     * What changes. {@code status}: the Workload's whole next status (null: unchanged); {@code active}:
     * the next spec.active (null: unchanged); {@code spec}: other fields of the spec set anew (podSets,
     * maximumExecutionTimeSeconds, queueName; a null value removes the field; null: unchanged);
     * {@code delete}: the Workload no longer fits the job and its quota is held: it goes (finalizer first)
     * and a new one is made once the pods are gone.
     */
    public record Changes(boolean create, Map<String, Object> status, Boolean active, Map<String, Object> spec,
            boolean removeFinalizer, boolean delete) {
        public static final Changes NONE = new Changes(false, null, null, null, false, false);

        public boolean any() {
            return !equals(NONE);
        }
    }

    /**
     * What the job is now. {@code after}: its state after this pass; {@code paused}: a pause is asked for;
     * {@code podsLeft}: its pods that still exist (terminating ones too: they still use the quota);
     * {@code podsReady}: its pods running and ready, or succeeded; {@code maxExecutionSeconds}: the
     * limit its label asks for; {@code queueLabel}: the queue its label names now (empty: the label is gone).
     */
    public record Job(JobState after, boolean paused, List<KueueWorkload.PodSet> podSets, int podsLeft, int podsReady,
            Optional<Integer> maxExecutionSeconds, Optional<String> queueLabel) {
        /**
         * Counts the job's pods among those observed; {@code deleting}: the pods this pass deletes (a restart),
         * not ready from now on though the cache does not say so yet. Without it a group restart faster than
         * the next look would never show the Workload's PodsReady falling, and Kueue's recovery never begins.
         */
        public static Job of(JobState after, boolean paused, List<KueueWorkload.PodSet> podSets, String jobUid, Collection<Pod> observed,
                java.util.Set<String> deleting, Optional<Integer> maxExecutionSeconds, Optional<String> queueLabel) {
            Collection<Pod> pods = Pods.ownedBy(jobUid, observed).values();
            int ready = (int) pods.stream().filter(p -> !deleting.contains(p.getMetadata().getName())).filter(WorkloadSync::readyOrDone).count();
            return new Job(after, paused, podSets, pods.size(), ready, maxExecutionSeconds, queueLabel);
        }
    }

    private static boolean readyOrDone(Pod pod) {
        if (pod.getStatus() == null || pod.getMetadata().getDeletionTimestamp() != null) {
            return false;
        }
        ReplicaPhase phase = Pods.replicaPhase(pod); // by its training container, whatever a sidecar does
        if (phase == ReplicaPhase.Failed) {
            return false;
        }
        return phase == ReplicaPhase.Succeeded || pod.getStatus().getConditions() != null && pod.getStatus().getConditions()
                .stream().anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
    }

    public static Changes of(Job job, Optional<GenericKubernetesResource> observed, Optional<KueueAdmission.State> state, Instant now) {
        boolean finished = job.after().phase() != null && job.after().phase().isTerminal();
        if (observed.isEmpty()) {
            // As Kueue's integrations do: a Workload only for a job that can start, once none of its pods is left.
            return finished || job.paused() || job.podSets().isEmpty() || job.podsLeft() > 0 || job.queueLabel().isEmpty() ? Changes.NONE
                    : new Changes(true, null, null, null, false, false);
        }
        GenericKubernetesResource workload = observed.get();
        boolean held = workload.getMetadata().getFinalizers() != null
                && workload.getMetadata().getFinalizers().contains(KueueWorkload.FINALIZER);
        if (workload.getMetadata().getDeletionTimestamp() != null) {
            return new Changes(false, null, null, null, held && job.podsLeft() == 0, false);
        }
        Map<String, Object> status = statusOf(workload);
        Conditions conditions = new Conditions(status, workload.getMetadata().getGeneration(), now);
        if (finished) {
            if (!conditions.isTrue("Finished")) {
                Outcome outcome = job.after().outcome();
                String reason = outcome == Outcome.Succeeded ? "Succeeded" : outcome == Outcome.FailedToStart ? "FailedToStart" : "Failed";
                conditions.set("Finished", true, reason, outcome == Outcome.Succeeded ? "The job succeeded."
                        : "The job failed: " + (outcome == null ? "Failed" : outcome.name()) + ".");
            }
            return new Changes(false, conditions.changed() ? status : null, null, null, held, false);
        }

        Boolean active = null;
        Map<String, String> annotations = workload.getMetadata().getAnnotations();
        boolean pausedByUs = annotations != null && "true".equals(annotations.get(PAUSED_ANNOTATION));
        boolean isActive = !Boolean.FALSE.equals(spec(workload).get("active"));
        if (job.paused() && isActive) {
            active = false;
        } else if (!job.paused() && !isActive && pausedByUs) {
            active = true;
        }

        boolean reserved = conditions.isTrue("QuotaReserved");
        if (job.queueLabel().isEmpty() && !reserved) {
            // Its label is gone while it holds no quota: it leaves the queue (QueueMembership), and runs once this is gone.
            return new Changes(false, null, null, null, held, true);
        }
        List<Map<String, Object>> wanted = KueueWorkload.podSetsOf(job.podSets());
        boolean reshaped = !sameShape(podSetsOf(workload), wanted);
        if (reshaped && reserved) {
            return new Changes(false, null, null, null, held, true);
        }
        // As Kueue: the queue and the time limit are fixed while quota is held, and follow the job's labels otherwise.
        Map<String, Object> spec = new LinkedHashMap<>();
        if (reshaped) {
            spec.put("podSets", wanted);
        }
        Integer limit = job.maxExecutionSeconds().orElse(null);
        if (!reserved && !Objects.equals(number(spec(workload).get("maximumExecutionTimeSeconds"), null), limit)) {
            spec.put("maximumExecutionTimeSeconds", limit);
        }
        if (!reserved && job.queueLabel().isPresent() && !job.queueLabel().get().equals(spec(workload).get("queueName"))) {
            spec.put("queueName", job.queueLabel().get());
        }
        if (reshaped) {
            return new Changes(false, null, active, spec, false, false);
        }
        spec = spec.isEmpty() ? null : spec;

        if (state.orElse(null) instanceof KueueAdmission.Evicted evicted && job.podsLeft() == 0) {
            // Kueue leaves the quota held until the job says its pods are gone.
            status.remove("admission");
            accumulateExecutionTime(status, conditions.find("Admitted"), now);
            conditions.set("QuotaReserved", false, "Pending", evicted.message());
            conditions.set("Admitted", false, "NoReservation", "The workload has no reservation");
            boolean requeued = "Preempted".equals(evicted.reason()) || "NodeFailures".equals(evicted.reason());
            conditions.set("Requeued", requeued, evicted.reason(), evicted.message());
        } else if (state.orElse(null) instanceof KueueAdmission.Admitted admitted) {
            int wantedPods = admitted.podSets().values().stream().mapToInt(KueueAdmission.PodSetInfo::count).sum();
            Map<String, Object> before = conditions.find("PodsReady");
            if (job.podsReady() >= wantedPods) {
                // As Kueue's own integrations: once recovered, a workload stays Recovered (never Started again).
                boolean recovering = before != null && ("WaitForRecovery".equals(before.get("reason")) || "Recovered".equals(before.get("reason")));
                conditions.set("PodsReady", true, recovering ? "Recovered" : "Started", "All pods reached readiness and the workload is running");
            } else {
                boolean wasReady = before != null && "True".equals(before.get("status"));
                boolean recovering = wasReady || (before != null && "WaitForRecovery".equals(before.get("reason")));
                conditions.set("PodsReady", false, recovering ? "WaitForRecovery" : "WaitForStart",
                        "Not all pods are ready or succeeded");
            }
        }
        if (!conditions.isTrue("Admitted") && conditions.find("PodsReady") != null) {
            // As Kueue's integrations: a Workload that is not admitted (evicted, requeued) runs no ready pods.
            conditions.set("PodsReady", false, "WaitForStart", "Not all pods are ready or succeeded");
        }
        return new Changes(false, conditions.changed() ? status : null, active, spec, false, false);
    }

    /**
     * As Kueue when an admission ends: the time since it was admitted is added to
     * accumulatedPastExecutionTimeSeconds, which Kueue weighs against maximumExecutionTimeSeconds.
     */
    private static void accumulateExecutionTime(Map<String, Object> status, Map<String, Object> admitted, Instant now) {
        if (admitted == null || !"True".equals(admitted.get("status"))) {
            return;
        }
        Instant since = StatusTime.parse(String.valueOf(admitted.get("lastTransitionTime")));
        if (since == null) {
            return;
        }
        long seconds = Math.max(0, Duration.between(since, now).getSeconds());
        long before = status.get("accumulatedPastExecutionTimeSeconds") instanceof Number n ? n.longValue() : 0;
        status.put("accumulatedPastExecutionTimeSeconds", (int) Math.min(Integer.MAX_VALUE, before + seconds));
    }

    /** Only what decides the quota: names, counts and minimum counts (templates are fixed once admitted). */
    private static boolean sameShape(List<Map<String, Object>> observed, List<Map<String, Object>> wanted) {
        if (observed.size() != wanted.size()) {
            return false;
        }
        for (int i = 0; i < observed.size(); i++) {
            Map<String, Object> a = observed.get(i);
            Map<String, Object> b = wanted.get(i);
            if (!Objects.equals(a.get("name"), b.get("name")) || !Objects.equals(number(a.get("count"), 1), number(b.get("count"), 1))
                    || !Objects.equals(number(a.get("minCount"), null), number(b.get("minCount"), null))) {
                return false;
            }
        }
        return true;
    }

    private static Integer number(Object value, Integer absent) {
        return value instanceof Number n ? n.intValue() : absent;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> spec(GenericKubernetesResource workload) {
        return workload.getAdditionalProperties().get("spec") instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> podSetsOf(GenericKubernetesResource workload) {
        return spec(workload).get("podSets") instanceof List<?> l ? (List<Map<String, Object>>) l : List.of();
    }

    /** A deep copy of the Workload's status, to change. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> statusOf(GenericKubernetesResource workload) {
        Object status = workload.getAdditionalProperties().get("status");
        return status == null ? new LinkedHashMap<>() : JSON.convertValue(status, LinkedHashMap.class);
    }

    /** metav1.Condition entries of a status, set in place; lastTransitionTime moves only when the status does. */
    static final class Conditions {
        private final List<Map<String, Object>> list;
        private final Long generation;
        private final String now;
        private boolean changed;

        @SuppressWarnings("unchecked")
        Conditions(Map<String, Object> status, Long generation, Instant now) {
            Object existing = status.get("conditions");
            this.list = existing instanceof List<?> l ? (List<Map<String, Object>>) l : new ArrayList<>();
            status.put("conditions", list);
            this.generation = generation;
            this.now = now.truncatedTo(ChronoUnit.SECONDS).toString();
        }

        Map<String, Object> find(String type) {
            return list.stream().filter(c -> type.equals(c.get("type"))).findFirst().orElse(null);
        }

        boolean isTrue(String type) {
            Map<String, Object> c = find(type);
            return c != null && "True".equals(c.get("status"));
        }

        void set(String type, boolean value, String reason, String message) {
            String status = value ? "True" : "False";
            Map<String, Object> before = find(type);
            if (before != null && status.equals(before.get("status")) && Objects.equals(reason, before.get("reason"))
                    && Objects.equals(message, before.get("message"))) {
                return;
            }
            Map<String, Object> condition = new LinkedHashMap<>();
            condition.put("type", type);
            condition.put("status", status);
            condition.put("reason", reason);
            condition.put("message", message);
            condition.put("lastTransitionTime", before != null && status.equals(before.get("status"))
                    ? before.get("lastTransitionTime") : now);
            if (generation != null) {
                condition.put("observedGeneration", generation);
            }
            if (before != null) {
                list.set(list.indexOf(before), condition);
            } else {
                list.add(condition);
            }
            changed = true;
        }

        boolean changed() {
            return changed;
        }
    }
}
