package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;

/**
 * What one pass of reconciliation should do, in one job API's shape: the engine's decision
 * rendered by the API's adapter. The executor says the events, writes {@code status} (when it changed),
 * then deletes, creates and stops sidecars, in that order (a job's first pass may create first:
 * {@link #statusCanFollowCreates()}).
 *
 * @param <S> the API's status type
 */
public record Plan<S>(
        S status,
        boolean statusChanged,
        /** The engine's view before and after this pass, for metrics. */
        JobState before,
        JobState after,
        Instant decidedAt,
        /** The job's Services that are missing (T9k: one for the job; Kubeflow: one per replica). */
        List<Service> servicesToCreate,
        /** Services that go with their pods for good (Kubeflow: clean-up, suspend, scale-down), by name. */
        List<String> servicesToDelete,
        Optional<GenericKubernetesResource> podGroupToCreate,
        List<Pod> podsToCreate,
        List<PodDeletion> podsToDelete,
        /** Pods whose training container ended for good while a sidecar runs on: the kubelet is to end them, keeping them. */
        List<SidecarStop> sidecarsToStop,
        List<JobEvent> events,
        /** Said after the creates, naming only the pods that were created. */
        Optional<CreationReport> podsCreated,
        List<RestartCounted> restarts,
        Optional<Duration> recheckAfter,
        /** Delete the job itself (its time to live after finishing is over). */
        boolean deleteJob,
        /** Other objects the job owns, created or brought up to date (Kubeflow: the elastic job's HorizontalPodAutoscaler). */
        List<HasMetadata> objectsToApply,
        /** Other objects the job owns that must go. */
        List<HasMetadata> objectsToDelete) {

    /**
     * The job's first pass when all it does is create: no status was written before, and this pass
     * counts, deletes and says nothing. Its status then records nothing a later pass needs that the pods
     * do not show, so it may be written after the creates ({@link #followedBy}), reporting the pods as
     * created rather than announcing them: one status write fewer per job, and the pods come sooner.
     */
    public boolean statusCanFollowCreates() {
        return !before.planned() && statusChanged && !podsToCreate.isEmpty() && podsToDelete.isEmpty() && sidecarsToStop.isEmpty()
                && servicesToDelete.isEmpty() && objectsToDelete.isEmpty() && events.isEmpty() && restarts.isEmpty() && !deleteJob;
    }

    /** This plan without its status write (the status is left to a later plan of the same pass). */
    public Plan<S> withoutStatus() {
        return new Plan<>(status, false, before, after, decidedAt, servicesToCreate, servicesToDelete, podGroupToCreate, podsToCreate,
                podsToDelete, sidecarsToStop, events, podsCreated, restarts, recheckAfter, deleteJob, objectsToApply, objectsToDelete);
    }

    /**
     * {@code next}, planned from this plan's status once its creates were applied, as one transition from
     * where this plan started: its status is the one written, and it goes from this plan's {@code before}
     * (a job's first status is still its first).
     */
    public Plan<S> followedBy(Plan<S> next) {
        return new Plan<>(next.status, true, before, next.after, next.decidedAt, next.servicesToCreate, next.servicesToDelete,
                next.podGroupToCreate, next.podsToCreate, next.podsToDelete, next.sidecarsToStop, next.events, next.podsCreated,
                next.restarts, next.recheckAfter, next.deleteJob, next.objectsToApply, next.objectsToDelete);
    }

    /**
     * The plan of a pass: what the engine decided ({@code decision}: deletions, sidecar stops, restarts counted,
     * when to look again) and what the API's adapter made of it ({@code objects}, the status, the events to say).
     */
    public static <S> Plan<S> of(Decision decision, JobState before, S status, boolean statusChanged, List<JobEvent> events,
            ApiObjects objects) {
        return new Plan<>(status, statusChanged, before, decision.state(), decision.decidedAt(), objects.servicesToCreate(),
                objects.servicesToDelete(), objects.podGroupToCreate(), objects.podsToCreate(), decision.podsToDelete(),
                decision.sidecarsToStop(), List.copyOf(events), decision.podsCreated(), decision.restarts(), decision.recheckAfter(),
                decision.deleteJob(), objects.objectsToApply(), objects.objectsToDelete());
    }

    /** The objects of the job's API a pass creates or removes beside its pod deletions, as the adapter made them. */
    public record ApiObjects(List<Pod> podsToCreate, List<Service> servicesToCreate, List<String> servicesToDelete,
            Optional<GenericKubernetesResource> podGroupToCreate, List<HasMetadata> objectsToApply, List<HasMetadata> objectsToDelete) {
        public ApiObjects {
            podsToCreate = List.copyOf(podsToCreate);
            servicesToCreate = List.copyOf(servicesToCreate);
            servicesToDelete = List.copyOf(servicesToDelete);
            objectsToApply = List.copyOf(objectsToApply);
            objectsToDelete = List.copyOf(objectsToDelete);
        }
    }

    /** A pass that changes nothing: the job is another controller's to run. */
    public static <S> Plan<S> nothing(S status, JobState state, Instant now) {
        return new Plan<>(status, false, state, state, now, List.of(), List.of(), Optional.empty(), List.of(), List.of(), List.of(),
                List.of(), Optional.empty(), List.of(), Optional.empty(), false, List.of(), List.of());
    }

    /** The event that reports pods created: "Created pods a, b" (or "Created debug pods ..."). */
    public record CreationReport(String wording) {
        public JobEvent event(List<String> created) {
            return JobEvent.normal("PodsCreated", wording + String.join(", ", created));
        }
    }

    /**
     * A restart this plan counts: which replica type, why (exit code, evicted, vanished, succeeded),
     * and whether the kubelet made it in place (nothing is recreated).
     */
    public record RestartCounted(String replicaType, String cause, boolean inPlace) {
        public RestartCounted(String replicaType, String cause) {
            this(replicaType, cause, false);
        }
    }

    public enum DeletionReason {
        RESTART, CLEAN_UP, DEADLINE, SCALE_DOWN, PAUSE,
        /** The job is not admitted by its queue (waiting, or evicted). */
        QUEUE
    }

    /**
     * resourceVersion is a delete precondition: a stale cache never deletes a newer pod of the same name;
     * {@code gracePeriodSeconds}: shorter than the pod's own, or null for the pod's own.
     */
    public record PodDeletion(String name, String uid, String resourceVersion, DeletionReason reason, Long gracePeriodSeconds) {
        public PodDeletion(String name, String uid, String resourceVersion, DeletionReason reason) {
            this(name, uid, resourceVersion, reason, null);
        }
    }

    /**
     * A pod whose training container ended for good while another container (a sidecar) runs on: without
     * the operator it would run, holding its node's resources, until deleted. It is given an
     * {@code activeDeadlineSeconds} already past, so its kubelet ends it as if it were done and keeps it,
     * its logs with it; resourceVersion is the write's precondition, as for a deletion.
     */
    public record SidecarStop(String name, String resourceVersion) {
    }

    /**
     * {@code subject}: what the event reports when one pass may say it of several things (the pod UID
     * and, for in-place restarts, the restart), so that it keeps its identity when a later pass words it
     * differently (a later back-off time); null when the reason alone tells it apart within a pass.
     */
    public record JobEvent(Type type, String reason, String message, String subject) {
        public enum Type {
            Normal, Warning
        }

        public JobEvent(Type type, String reason, String message) {
            this(type, reason, message, null);
        }

        /** This event, said of one thing (a pod, a pod's n-th restart in place). */
        public JobEvent about(String what) {
            return new JobEvent(type, reason, message, what);
        }

        public static JobEvent normal(String reason, String message) {
            return new JobEvent(Type.Normal, reason, message);
        }

        public static JobEvent warning(String reason, String message) {
            return new JobEvent(Type.Warning, reason, message);
        }
    }
}
