package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.PodSchedulingGate;

/**
 * Why a replica's pod cannot start, in the words users know from {@code kubectl get pods} and
 * {@code kubectl describe pod}: {@code reason} is the scheduler's or the kubelet's (Unschedulable, SchedulerError,
 * ImagePullBackOff, ErrImageNeverPull, CreateContainerConfigError, FailedMount, ...). Such a pod
 * waits: nothing failed, nothing is counted, and it starts by itself once the cause is fixed.
 *
 * <p>The scheduler and the kubelet say most causes in the pod's status; a volume that cannot be
 * mounted only in a Warning event of the pod, which the shell looks up for pods that are still
 * creating their containers a while after being scheduled ({@link #needsWarnings}).
 */
public record StartBlocker(String reason, String message) {
    /**
     * The reason of a gang scheduler's hold that is not a problem yet: it has not looked at the job's group.
     * Such a hold keeps the pods from being created and is not said.
     */
    public static final String ADMITTING = "Admitting";
    /** The scheduler's reason for a pod it cannot place (the pod's PodScheduled condition). */
    public static final String UNSCHEDULABLE = "Unschedulable";
    /**
     * The scheduler's reason for a pod whose placement failed on an error rather than a node's fit (a plugin's
     * error, a refused binding): it retries, but an error that stays keeps the pod Pending as long.
     */
    static final String SCHEDULER_ERROR = "SchedulerError";
    /** The API server's reason for a pod that scheduling gates hold back (the pod's PodScheduled condition). */
    static final String SCHEDULING_GATED = "SchedulingGated";
    /**
     * A pod still held by scheduling gates this long after it was made is said: the gates that come and go (Kueue's
     * topology gate, lifted once its ungater has placed the podSet) are gone in seconds; one nobody lifts holds it for ever.
     */
    static final Duration SAY_GATES_AFTER = Duration.ofSeconds(60);
    /** A scheduled pod still creating its containers this long: its Warning events are looked at. */
    public static final Duration LOOK_AT_WARNINGS_AFTER = Duration.ofSeconds(20);
    /** ... and again this often while it still is (a slow image pull looks the same until a warning says otherwise). */
    public static final Duration LOOK_AT_WARNINGS_EVERY = Duration.ofSeconds(60);
    /** The reason of a replica held by its old pod, as {@code kubectl get pods} shows that pod. */
    public static final String TERMINATING = "Terminating";
    /** A warning older than this no longer tells why: the kubelet repeats a failed mount at least every ~2 minutes. */
    static final Duration WARNING_FRESH_FOR = Duration.ofMinutes(3);

    private static final int MAX_MESSAGE = 1024;
    /** The kubelet alternates these two while it backs off pulling: one cause. */
    private static final Set<String> IMAGE_PULL = Set.of("ErrImagePull", "ImagePullBackOff");
    /** Waiting reasons of a container that will not start until something outside the pod changes. */
    private static final Set<String> CANNOT_CREATE = Set.of("ErrImageNeverPull", "InvalidImageName", "ImageInspectError",
            "RegistryUnavailable", "SignatureValidationFailed", "CreateContainerConfigError", "CreateContainerError");
    /** Waiting reasons of a pod on its way: whatever holds it, its status does not say. */
    private static final Set<String> CREATING = Set.of("ContainerCreating", "PodInitializing");
    /** Warning events of a pod that say why its containers are not created. */
    private static final Set<String> CANNOT_CREATE_WARNINGS = Set.of("FailedMount", "FailedAttachVolume", "FailedMapVolume",
            "FailedCreatePodSandBox");

    /** A Warning event of a pod, as the shell found it. */
    public record PodWarning(String podUid, String reason, String message, Instant lastSeen) {
    }

    /**
     * What keeps this pending pod from starting, if anything does: from its status first, else from its
     * fresh warnings. {@code warnings} null: not looked up (or the look-up failed) this pass, so
     * {@code known} (what the last status recorded for this same pod) still holds.
     */
    static Optional<StartBlocker> of(Pod pod, List<PodWarning> warnings, StartBlocker known, Instant now) {
        if (Pods.replicaPhase(pod) != ReplicaPhase.Pending || Pods.isTerminating(pod)) {
            return Optional.empty();
        }
        Optional<Instant> gatesSaid = gatesSaidAt(pod);
        if (gatesSaid.isPresent()) {
            return gatesSaid.filter(at -> !now.isBefore(at)).map(at -> heldByGates(pod));
        }
        Optional<StartBlocker> fromStatus = fromStatus(pod);
        if (fromStatus.isPresent() || !needsWarnings(pod, now)) {
            return fromStatus;
        }
        if (warnings == null) {
            // What a warning said last time still holds; a cause its status gave is gone from it.
            return Optional.ofNullable(known).filter(k -> CANNOT_CREATE_WARNINGS.contains(k.reason()));
        }
        return warnings.stream()
                .filter(w -> CANNOT_CREATE_WARNINGS.contains(w.reason()))
                .filter(w -> w.lastSeen() != null && !w.lastSeen().isBefore(now.minus(WARNING_FRESH_FOR)))
                .max(java.util.Comparator.comparing(PodWarning::lastSeen))
                .map(w -> new StartBlocker(w.reason(), "pod " + pod.getMetadata().getName() + " cannot start: " + oneLine(w.message())));
    }

    /**
     * When a pod that scheduling gates still hold back is said: {@link #SAY_GATES_AFTER} after it was made (gates are
     * only ever removed from a pod, so it has been held since). Empty for a pod no gate holds.
     */
    static Optional<Instant> gatesSaidAt(Pod pod) {
        if (pod.getSpec() == null || pod.getSpec().getSchedulingGates() == null || pod.getSpec().getSchedulingGates().isEmpty()
                || pod.getSpec().getNodeName() != null || pod.getMetadata().getCreationTimestamp() == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(Instant.parse(pod.getMetadata().getCreationTimestamp()).plus(SAY_GATES_AFTER));
        } catch (java.time.format.DateTimeParseException e) {
            return Optional.empty();
        }
    }

    private static StartBlocker heldByGates(Pod pod) {
        String gates = pod.getSpec().getSchedulingGates().stream().map(PodSchedulingGate::getName).collect(Collectors.joining(", "));
        return new StartBlocker(SCHEDULING_GATED, "pod " + pod.getMetadata().getName() + " is held back by its scheduling gates ("
                + gates + ") since " + pod.getMetadata().getCreationTimestamp() + ": the scheduler does not look at it until what added "
                + "them removes them");
    }

    /**
     * A replica whose old pod was deleted and is still there well after its grace period ({@link LingeringPod}):
     * its new pod, of the same name, cannot be created until the old one is gone.
     */
    static Optional<StartBlocker> overdueTermination(Pod pod, Instant now) {
        return LingeringPod.said(pod, now).map(said -> new StartBlocker(TERMINATING, said + "; its replica's new pod waits for it to be gone"));
    }

    /**
     * A scheduled pod whose containers its kubelet still reports as being created {@link #LOOK_AT_WARNINGS_AFTER}
     * after it was scheduled, and whose status does not say why: only its Warning events can.
     */
    public static boolean needsWarnings(Pod pod, Instant now) {
        return lookAtWarningsFrom(pod).filter(from -> !now.isBefore(from)).isPresent();
    }

    /** When this pod's warnings are worth a look (next), if it may be held by something only they say. */
    static Optional<Instant> nextLookAtWarnings(Pod pod, Instant now) {
        return lookAtWarningsFrom(pod).map(from -> now.isBefore(from) ? from : now.plus(LOOK_AT_WARNINGS_EVERY));
    }

    private static Optional<Instant> lookAtWarningsFrom(Pod pod) {
        if (pod.getStatus() == null || Pods.isTerminating(pod) || !"Pending".equals(pod.getStatus().getPhase())
                || fromStatus(pod).isPresent()) {
            return Optional.empty();
        }
        // A kubelet reports every container as creating when it starts on a pod, before it mounts volumes or
        // makes the sandbox: a pod without container statuses has not reached one (a backlogged or down node),
        // so no kubelet warning of it can exist yet and none is looked for.
        List<ContainerStatus> statuses = containerStatuses(pod);
        boolean creating = !statuses.isEmpty() && statuses.stream().allMatch(s -> s.getState() != null && s.getState().getWaiting() != null
                && (s.getState().getWaiting().getReason() == null || CREATING.contains(s.getState().getWaiting().getReason())));
        Optional<PodCondition> scheduled = condition(pod, "PodScheduled").filter(c -> "True".equals(c.getStatus()));
        if (!creating || scheduled.isEmpty() || scheduled.get().getLastTransitionTime() == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(Instant.parse(scheduled.get().getLastTransitionTime()).plus(LOOK_AT_WARNINGS_AFTER));
        } catch (java.time.format.DateTimeParseException e) {
            return Optional.empty();
        }
    }

    private static Optional<StartBlocker> fromStatus(Pod pod) {
        String name = pod.getMetadata().getName();
        Optional<PodCondition> unschedulable = condition(pod, "PodScheduled")
                .filter(c -> "False".equals(c.getStatus()) && (UNSCHEDULABLE.equals(c.getReason()) || SCHEDULER_ERROR.equals(c.getReason())));
        if (unschedulable.isPresent()) {
            return Optional.of(new StartBlocker(unschedulable.get().getReason(), "pod " + name + " cannot be scheduled"
                    + (SCHEDULER_ERROR.equals(unschedulable.get().getReason()) ? " (the scheduler's error, which it retries)" : "")
                    + ": " + oneLine(unschedulable.get().getMessage())));
        }
        for (ContainerStatus status : containerStatuses(pod)) {
            var waiting = status.getState() == null ? null : status.getState().getWaiting();
            String reason = waiting == null ? null : waiting.getReason();
            if (reason != null && (IMAGE_PULL.contains(reason) || CANNOT_CREATE.contains(reason))) {
                return Optional.of(new StartBlocker(IMAGE_PULL.contains(reason) ? "ImagePullBackOff" : reason, "pod " + name
                        + " (container " + status.getName() + ") cannot start: " + reason
                        + (waiting.getMessage() == null || waiting.getMessage().isBlank() ? "" : ": " + oneLine(waiting.getMessage()))));
            }
        }
        return Optional.empty();
    }

    /** Init containers first: they run before the others. */
    static List<ContainerStatus> containerStatuses(Pod pod) {
        List<ContainerStatus> all = new ArrayList<>();
        if (pod.getStatus() != null) {
            if (pod.getStatus().getInitContainerStatuses() != null) {
                all.addAll(pod.getStatus().getInitContainerStatuses());
            }
            if (pod.getStatus().getContainerStatuses() != null) {
                all.addAll(pod.getStatus().getContainerStatuses());
            }
        }
        return all;
    }

    private static Optional<PodCondition> condition(Pod pod, String type) {
        if (pod.getStatus() == null || pod.getStatus().getConditions() == null) {
            return Optional.empty();
        }
        return pod.getStatus().getConditions().stream().filter(c -> type.equals(c.getType())).findFirst();
    }

    /** On one line, with no full stop (sentences are made of it), and short enough for a condition: the scheduler's can run long. */
    private static String oneLine(String message) {
        String line = message == null ? "" : message.strip().replaceAll("\\s*\\n\\s*", " ").replaceAll("\\.+$", "");
        return line.length() <= MAX_MESSAGE ? line : line.substring(0, MAX_MESSAGE - 3) + "...";
    }
}
