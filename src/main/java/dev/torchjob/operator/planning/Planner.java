package dev.torchjob.operator.planning;

import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.ObjectMapper;

import dev.torchjob.operator.api.AggregateStatus;
import dev.torchjob.operator.api.CleanUpPolicy;
import dev.torchjob.operator.api.CountedRestart;
import dev.torchjob.operator.api.ElasticStatus;
import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.JobPhase;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.ReplicaPhase;
import dev.torchjob.operator.api.ReplicaStatus;
import dev.torchjob.operator.api.RestartPolicy;
import dev.torchjob.operator.api.RunPolicy;
import dev.torchjob.operator.api.TaskStatus;
import dev.torchjob.operator.planning.Plan.DeletionReason;
import dev.torchjob.operator.planning.Plan.JobEvent;
import dev.torchjob.operator.planning.Plan.PodDeletion;
import io.fabric8.kubernetes.api.model.ContainerState;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;

/**
 * Decides one pass of reconciliation: a pure function of the job (spec and last written
 * status), the pods observed, whether the Service exists, and the time. No I/O.
 */
public final class Planner {
    public static final String REASON_INVALID_SPEC = "InvalidSpec";
    public static final String REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded";
    public static final String REASON_REPLICA_FAILED_PERMANENTLY = "ReplicaFailedPermanently";
    public static final String REASON_DEADLINE_EXCEEDED = "DeadlineExceeded";
    public static final String REASON_SUCCEEDED = "Succeeded";

    private static final ObjectMapper JSON = new ObjectMapper();

    private Planner() {
    }

    public static final String REASON_DEBUG_MODE = "DebugMode";
    public static final String REASON_SCHEDULER_UNAVAILABLE = "SchedulerUnavailable";
    static final Duration SCHEDULER_RECHECK = Duration.ofSeconds(60);

    public static Plan plan(Observation observation) {
        return new Pass(observation).run();
    }

    /** A job that does not use the T9k scheduler, or whose PodGroup is still to be created. */
    public static Plan plan(PyTorchTrainingJob job, Collection<Pod> observedPods, boolean serviceExists, Instant now) {
        return plan(Observation.of(job, observedPods, serviceExists, now));
    }

    /** A replica that stopped, with the slot it belongs to and the UID of its last pod. */
    private record Stopped(ReplicaSlot slot, ReplicaEnding ending, String podUid, Pod pod) {
    }

    /** Mutable scratch space of one planning pass; never escapes {@link #plan}. */
    private static final class Pass {
        private final PyTorchTrainingJob job;
        private final PyTorchTrainingJobSpec spec;
        private final PyTorchTrainingJobStatus previous;
        private final PyTorchTrainingJobStatus next;
        private final Map<String, Pod> pods;
        private final boolean serviceExists;
        private final Observation.PodGroupState podGroup;
        private final Instant now;
        private final String nowText;
        private final List<Pod> creates = new ArrayList<>();
        private final List<PodDeletion> deletes = new ArrayList<>();
        private final List<JobEvent> events = new ArrayList<>();
        private final List<Plan.RestartCounted> restarts = new ArrayList<>();
        private boolean resuming;
        private Service serviceToCreate;
        private GenericKubernetesResource podGroupToCreate;
        private Duration recheckAfter;

        Pass(Observation observation) {
            this.job = observation.job();
            PyTorchTrainingJob job = observation.job();
            Collection<Pod> observedPods = observation.pods();
            Instant now = observation.now();
            this.podGroup = observation.podGroup();
            this.spec = job.getSpec();
            this.previous = job.getStatus() == null ? new PyTorchTrainingJobStatus() : job.getStatus();
            this.next = JSON.convertValue(previous, PyTorchTrainingJobStatus.class);
            this.pods = ownedPods(job, observedPods);
            this.serviceExists = observation.serviceExists();
            this.now = now.truncatedTo(ChronoUnit.SECONDS);
            this.nowText = this.now.toString();
        }

        Plan run() {
            boolean firstPass = previous.observedGeneration == null;
            next.observedGeneration = job.getMetadata().getGeneration();
            next.selector = JobLabels.selectorOf(job.getMetadata().getName());
            if (next.backoffCount == null) {
                next.backoffCount = 0;
            }
            if (previous.phase != null && previous.phase.isTerminal()) {
                return finished();
            }
            Optional<String> problem = SpecValidator.problemWith(job);
            if (problem.isPresent()) {
                events.add(JobEvent.warning(REASON_INVALID_SPEC, problem.get()));
                return fail(REASON_INVALID_SPEC, problem.get(), null);
            }
            if (firstPass) {
                warnAboutFieldsNotActedOn();
            }
            JobTopology topology = JobTopology.of(job);
            if (spec.runMode != null && spec.runMode.pause != null && spec.runMode.pause.isOn()) {
                return paused(topology);
            }
            if (Conditions.isTrue(previous.conditions, JobCondition.PAUSED)) {
                // Resuming: startTime restarts with the new pods; backoffCount is kept.
                resuming = true;
                next.startTime = null;
                events.add(JobEvent.normal("Resumed", "Resuming: recreating the pods"
                        + (hasResumeSpecs() ? " with runMode.pause.resumeSpecs" : "") + "."));
            }
            if (podGroup == Observation.PodGroupState.API_MISSING) {
                return schedulerUnavailable(topology);
            }
            if (spec.runMode != null && spec.runMode.debug != null && spec.runMode.debug.isOn()) {
                return debug(topology);
            }
            pruneCountedRestarts();

            Optional<Instant> deadline = deadline();
            if (deadline.isPresent() && !now.isBefore(deadline.get())) {
                return fail(REASON_DEADLINE_EXCEEDED, "the job ran longer than runPolicy.activeDeadlineSeconds="
                        + spec.runPolicy.activeDeadlineSeconds + " (started " + next.startTime + ")", topology);
            }
            Pod master = pods.get(topology.master().podName());
            if (master != null && "Succeeded".equals(phaseOf(master)) && !isCounted(master)) {
                return succeed(topology);
            }
            return active(topology);
        }

        // ---- active job ----------------------------------------------------------------------

        private Plan active(JobTopology topology) {
            List<ReplicaSlot> missing = new ArrayList<>();
            List<Stopped> stopped = new ArrayList<>();
            for (ReplicaSlot slot : topology.slots()) {
                Pod pod = pods.get(slot.podName());
                ReplicaStatus before = previousReplica(slot.podName());
                if (pod != null) {
                    if (isCounted(pod)) {
                        // Restart already counted (maybe by an earlier operator run): finish it, count nothing.
                        deleteUnlessTerminating(pod, DeletionReason.RESTART);
                    } else if (!isTerminating(pod)) {
                        String phase = phaseOf(pod);
                        if ("Failed".equals(phase)) {
                            stopped.add(new Stopped(slot, ReplicaEnding.ofFailedPod(pod), uidOf(pod), pod));
                        } else if ("Succeeded".equals(phase) && !slot.isMaster()
                                && policyOf(slot) == RestartPolicy.Always) {
                            stopped.add(new Stopped(slot, ReplicaEnding.succeeded(pod), uidOf(pod), pod));
                        }
                    }
                } else if (before != null && before.uid != null && !isCounted(slot.podName(), before.uid)) {
                    stopped.add(new Stopped(slot, ReplicaEnding.vanished(slot.podName()), before.uid, null));
                } else {
                    missing.add(slot);
                }
            }

            Optional<Stopped> permanent = stopped.stream()
                    .filter(s -> !RestartRules.isRestartable(policyOf(s.slot()), s.ending()))
                    .findFirst();
            if (permanent.isPresent()) {
                Stopped s = permanent.get();
                String message = s.ending().describe() + "; restartPolicy " + policyOf(s.slot()) + " does not restart it";
                events.add(JobEvent.warning("ReplicaFailed", message));
                return fail(REASON_REPLICA_FAILED_PERMANENTLY, message, topology);
            }
            int limit = backoffLimit();
            // A succeeded replica restarted under Always is no failure: without budget it just stays done.
            List<Stopped> failed = stopped.stream().filter(s -> s.ending().cause() != ReplicaEnding.Cause.SUCCEEDED).toList();
            List<Stopped> succeeded = stopped.stream().filter(s -> s.ending().cause() == ReplicaEnding.Cause.SUCCEEDED).toList();
            if (next.backoffCount + failed.size() > limit) {
                Stopped s = failed.get(Math.max(0, limit - next.backoffCount));
                String message = s.ending().describe() + "; the restart budget is spent (backoffCount "
                        + next.backoffCount + " of runPolicy.backoffLimit " + limit + ")";
                events.add(JobEvent.warning("ReplicaFailed", message));
                return fail(REASON_BACKOFF_LIMIT_EXCEEDED, message, topology);
            }
            List<Stopped> restarts = new ArrayList<>(failed);
            succeeded.stream().limit(Math.max(0, limit - next.backoffCount - failed.size())).forEach(restarts::add);
            for (Stopped s : restarts) {
                countRestart(s);
                if (s.pod() != null) {
                    deleteUnlessTerminating(s.pod(), DeletionReason.RESTART);
                } else {
                    missing.add(s.slot());
                }
            }

            scaleDown(topology);
            if (!serviceExists) {
                serviceToCreate = PodTemplates.headlessService(job, topology);
            }
            createPodGroupIfMissing(topology);
            boolean resumed = Conditions.find(previous.conditions, JobCondition.PAUSED) != null;
            for (ReplicaSlot slot : missing) {
                creates.add(PodTemplates.pod(job, topology, slot,
                        resumed ? PodOverrides.resume(spec, slot.type()) : PodOverrides.NONE));
            }
            if (!creates.isEmpty()) {
                if (next.startTime == null) {
                    next.startTime = nowText;
                }
                events.add(JobEvent.normal("PodsCreated", "Created pods " + creates.stream()
                        .map(p -> p.getMetadata().getName()).collect(Collectors.joining(", "))));
            }
            deadline().ifPresent(d -> recheckAfter = Duration.between(now, d).plusSeconds(1));

            next.tasks = tasks(topology, true);
            next.aggregate = aggregate(next.tasks);
            if (spec.elastic != null && spec.elastic.isOn()) {
                next.elastic = new ElasticStatus();
                next.elastic.currentReplicas = (int) topology.slots().stream().filter(s -> pods.containsKey(s.podName())).count();
            }
            boolean allCreated = serviceExists && topology.slots().stream().allMatch(s -> pods.containsKey(s.podName()));
            boolean allRunning = topology.slots().stream().allMatch(s -> isRunningOrDone(s, pods.get(s.podName())));
            boolean initialized = allCreated || Conditions.isTrue(previous.conditions, JobCondition.INITIALIZED);
            boolean running = allRunning || Conditions.isTrue(previous.conditions, JobCondition.RUNNING);
            next.phase = running ? JobPhase.Running : resumed ? JobPhase.Resuming : JobPhase.Pending;
            next.conditions = new Conditions(previous.conditions, nowText)
                    .set(JobCondition.INITIALIZED, initialized, initialized ? "PodsCreated" : "CreatingPods",
                            initialized ? "The job's Service and pods have been created." : "Creating the job's Service and pods.")
                    .set(JobCondition.RUNNING, running, running ? "AllReplicasRunning" : "WaitingForReplicas",
                            running ? "All replicas have started running." : "Waiting for all replicas to run.")
                    .set(JobCondition.REPLICA_FAILURE, !failed.isEmpty() || hasCountedRestarts(),
                            !failed.isEmpty() || hasCountedRestarts() ? "ReplicaRestarting" : "AllReplicasHealthy",
                            replicaFailureMessage(failed))
                    .set(JobCondition.COMPLETED, false, "Active", "The job has not finished.")
                    .set(JobCondition.FAILED, false, "Active", "The job has not failed.")
                    .build();
            return finish();
        }

        /** Pods beyond the replicas wanted (elastic scale-down) are deleted on purpose, never counted. */
        private void scaleDown(JobTopology topology) {
            Set<String> wanted = topology.slots().stream().map(ReplicaSlot::podName)
                    .collect(Collectors.toSet());
            pods.values().stream()
                    .filter(pod -> !wanted.contains(pod.getMetadata().getName()))
                    .forEach(pod -> deleteUnlessTerminating(pod, DeletionReason.SCALE_DOWN));
        }

        private void countRestart(Stopped s) {
            next.backoffCount++;
            TaskStatus task = taskOf(next.tasks, s.slot().type());
            int typeRestarts = task == null || task.restartCount == null ? 0 : task.restartCount;
            restartCounts.merge(s.slot().type(), typeRestarts + 1, Math::max);
            if (next.countedRestarts == null) {
                next.countedRestarts = new ArrayList<>();
            }
            next.countedRestarts.add(new CountedRestart(s.slot().podName(), s.podUid()));
            restarts.add(new Plan.RestartCounted(s.slot().type(),
                    s.ending().cause() == ReplicaEnding.Cause.FAILED && s.ending().exitCode() != null
                            ? s.ending().exitCode().toString()
                            : s.ending().cause().name().toLowerCase()));
            events.add(JobEvent.warning("ReplicaRestarted", "Restarting " + s.ending().describe() + " (restart "
                    + next.backoffCount + " of backoffLimit " + backoffLimit() + ")"));
        }

        /** Restart counts raised this pass, by replica type; merged into tasks. */
        private final Map<String, Integer> restartCounts = new LinkedHashMap<>();

        private String replicaFailureMessage(List<Stopped> stopped) {
            if (!stopped.isEmpty()) {
                return stopped.stream().map(s -> s.ending().describe()).collect(Collectors.joining("; "));
            }
            if (hasCountedRestarts()) {
                return "Restarting " + next.countedRestarts.stream().map(c -> c.pod).collect(Collectors.joining(", ")) + ".";
            }
            return "All replicas are healthy.";
        }

        // ---- run modes (spec §9) and scheduling (spec §10) ---------------------------------------

        /** Pause: delete every pod (never counted), create none; Paused once all are gone. */
        private Plan paused(JobTopology topology) {
            pods.values().forEach(pod -> deleteUnlessTerminating(pod, DeletionReason.PAUSE));
            boolean allGone = pods.isEmpty();
            next.countedRestarts = null;
            next.tasks = tasks(topology, false);
            // Pods deleted by the pause are forgotten, so resuming never takes them for vanished.
            next.tasks.forEach(task -> task.replicas.stream().filter(r -> r.phase == ReplicaPhase.Deleted).forEach(r -> r.uid = null));
            next.aggregate = aggregate(next.tasks);
            next.phase = allGone ? JobPhase.Paused : previous.phase == null ? JobPhase.Pending : previous.phase;
            boolean initialized = Conditions.isTrue(previous.conditions, JobCondition.INITIALIZED);
            String pausedMessage = allGone ? "All pods are deleted; set runMode.pause.enabled to false to resume."
                    : "Deleting " + pods.size() + " pods.";
            next.conditions = new Conditions(previous.conditions, nowText)
                    .set(JobCondition.INITIALIZED, initialized, initialized ? "PodsCreated" : "Paused",
                            initialized ? "The job's Service and pods have been created." : "The job was created paused.")
                    .set(JobCondition.RUNNING, false, "Paused", pausedMessage)
                    .set(JobCondition.REPLICA_FAILURE, false, "Paused", pausedMessage)
                    .set(JobCondition.COMPLETED, false, "Paused", "The job has not finished.")
                    .set(JobCondition.FAILED, false, "Paused", "The job has not failed.")
                    .set(JobCondition.PAUSED, allGone, allGone ? "Paused" : "Pausing", pausedMessage)
                    .build();
            if (allGone && !Conditions.isTrue(previous.conditions, JobCondition.PAUSED)) {
                events.add(JobEvent.normal("Paused", "The job is paused: " + pausedMessage));
            }
            return finish();
        }

        /** Debug: the environment of a training replica, the debug command, no restarts, no outcome. */
        private Plan debug(JobTopology topology) {
            List<ReplicaSlot> missing = topology.slots().stream().filter(s -> !pods.containsKey(s.podName())).toList();
            if (!serviceExists) {
                serviceToCreate = PodTemplates.headlessService(job, topology);
            }
            createPodGroupIfMissing(topology);
            for (ReplicaSlot slot : missing) {
                creates.add(PodTemplates.pod(job, topology, slot, PodOverrides.debug(spec, slot.type())));
            }
            if (!creates.isEmpty()) {
                if (next.startTime == null) {
                    next.startTime = nowText;
                }
                events.add(JobEvent.normal("PodsCreated", "Created debug pods " + creates.stream()
                        .map(p -> p.getMetadata().getName()).collect(Collectors.joining(", "))));
            }
            next.countedRestarts = null;
            next.tasks = tasks(topology, true);
            next.aggregate = aggregate(next.tasks);
            boolean allCreated = serviceExists && missing.isEmpty();
            boolean allRunning = topology.slots().stream().allMatch(s -> "Running".equals(phaseOrNull(pods.get(s.podName()))));
            boolean initialized = allCreated || Conditions.isTrue(previous.conditions, JobCondition.INITIALIZED);
            boolean running = allRunning || Conditions.isTrue(previous.conditions, JobCondition.RUNNING);
            List<String> failed = topology.slots().stream().filter(s -> "Failed".equals(phaseOrNull(pods.get(s.podName()))))
                    .map(ReplicaSlot::podName).toList();
            String debugMessage = "Debug mode: the pods run the debug command; the operator restarts nothing and decides no outcome.";
            next.phase = running ? JobPhase.Running : JobPhase.Pending;
            next.conditions = new Conditions(previous.conditions, nowText)
                    .set(JobCondition.INITIALIZED, initialized, initialized ? "PodsCreated" : "CreatingPods",
                            initialized ? "The job's Service and pods have been created." : "Creating the job's Service and pods.")
                    .set(JobCondition.RUNNING, running, running ? REASON_DEBUG_MODE : "WaitingForReplicas",
                            running ? debugMessage : "Waiting for all debug pods to run.")
                    .set(JobCondition.REPLICA_FAILURE, !failed.isEmpty(), REASON_DEBUG_MODE,
                            failed.isEmpty() ? "All replicas are healthy." : "Debug pods failed (not restarted): " + String.join(", ", failed))
                    .set(JobCondition.COMPLETED, false, REASON_DEBUG_MODE, debugMessage)
                    .set(JobCondition.FAILED, false, REASON_DEBUG_MODE, debugMessage)
                    .build();
            return finish();
        }

        /** Without the PodGroup API the T9k scheduler cannot gang-schedule: wait, create nothing, say why. */
        private Plan schedulerUnavailable(JobTopology topology) {
            String message = "The T9k scheduler's PodGroup API (" + PodTemplates.POD_GROUP_API_VERSION
                    + ") is not installed in this cluster: install the T9k scheduler, or remove spec.scheduler to use the default scheduler.";
            next.phase = JobPhase.Pending;
            next.tasks = tasks(topology, true);
            next.aggregate = aggregate(next.tasks);
            next.conditions = new Conditions(previous.conditions, nowText)
                    .set(JobCondition.INITIALIZED, false, REASON_SCHEDULER_UNAVAILABLE, message)
                    .set(JobCondition.RUNNING, false, "WaitingForScheduler", message)
                    .set(JobCondition.REPLICA_FAILURE, false, "AllReplicasHealthy", "All replicas are healthy.")
                    .set(JobCondition.COMPLETED, false, "Active", "The job has not finished.")
                    .set(JobCondition.FAILED, false, "Active", "The job has not failed.")
                    .build();
            JobCondition before = Conditions.find(previous.conditions, JobCondition.INITIALIZED);
            if (before == null || !REASON_SCHEDULER_UNAVAILABLE.equals(before.reason)) {
                events.add(JobEvent.warning(REASON_SCHEDULER_UNAVAILABLE, message));
            }
            recheckAfter = SCHEDULER_RECHECK; // the API may be installed later; no event would tell us
            return finish();
        }

        private void createPodGroupIfMissing(JobTopology topology) {
            if (podGroup == Observation.PodGroupState.MISSING) {
                podGroupToCreate = PodTemplates.podGroup(job, topology);
            }
        }

        private boolean hasResumeSpecs() {
            return spec.runMode != null && spec.runMode.pause != null && spec.runMode.pause.resumeSpecs != null
                    && !spec.runMode.pause.resumeSpecs.isEmpty();
        }

        /** Spec §12: accepted for compatibility, said once. */
        private void warnAboutFieldsNotActedOn() {
            if (spec.tensorboardSpec != null) {
                events.add(JobEvent.warning("TensorBoardNotManaged",
                        "spec.tensorboardSpec is kept, but TensorBoard is not managed by this operator."));
            }
            if (spec.torchrunConfig != null && spec.torchrunConfig.minNodes != null) {
                events.add(JobEvent.warning("IgnoredField",
                        "spec.torchrunConfig.minNodes is a legacy field and is ignored; use elastic.minReplicas."));
            }
        }

        private static String phaseOrNull(Pod pod) {
            return pod == null ? null : phaseOf(pod);
        }

        // ---- terminal transitions --------------------------------------------------------------

        private Plan succeed(JobTopology topology) {
            next.phase = JobPhase.Succeeded;
            next.completionTime = nowText;
            next.countedRestarts = null;
            String message = "The job has finished successfully: master pod " + topology.master().podName() + " succeeded.";
            next.tasks = tasks(topology, false);
            cleanUp(REASON_SUCCEEDED);
            next.aggregate = aggregate(next.tasks);
            next.conditions = new Conditions(previous.conditions, nowText)
                    .set(JobCondition.INITIALIZED, true, "PodsCreated", "The job's Service and pods have been created.")
                    .set(JobCondition.RUNNING, false, REASON_SUCCEEDED, message)
                    .set(JobCondition.REPLICA_FAILURE, false, REASON_SUCCEEDED, message)
                    .set(JobCondition.COMPLETED, true, REASON_SUCCEEDED, message)
                    .set(JobCondition.FAILED, false, REASON_SUCCEEDED, message)
                    .build();
            events.add(JobEvent.normal(REASON_SUCCEEDED, message));
            return finish();
        }

        private Plan fail(String reason, String message, JobTopology topology) {
            next.phase = JobPhase.Failed;
            next.completionTime = nowText;
            next.countedRestarts = null;
            next.tasks = topology != null ? tasks(topology, false) : refreshedTasks();
            cleanUp(reason);
            next.aggregate = aggregate(next.tasks);
            boolean initialized = Conditions.isTrue(previous.conditions, JobCondition.INITIALIZED);
            boolean replicaFailed = !REASON_INVALID_SPEC.equals(reason) && !REASON_DEADLINE_EXCEEDED.equals(reason);
            next.conditions = new Conditions(previous.conditions, nowText)
                    .set(JobCondition.INITIALIZED, initialized, initialized ? "PodsCreated" : reason,
                            initialized ? "The job's Service and pods have been created." : message)
                    .set(JobCondition.RUNNING, false, reason, message)
                    .set(JobCondition.REPLICA_FAILURE, replicaFailed, reason, replicaFailed ? message : "No replica failed.")
                    .set(JobCondition.COMPLETED, false, reason, message)
                    .set(JobCondition.FAILED, true, reason, message)
                    .build();
            events.add(JobEvent.warning("Failed", "Job failed (" + reason + "): " + message));
            return finish();
        }

        /** A finished job keeps its outcome forever; only clean-up and the replica view move on. */
        private Plan finished() {
            next.tasks = refreshedTasks();
            cleanUp(failedReason());
            next.aggregate = aggregate(next.tasks);
            if (spec != null && spec.runMode != null && spec.runMode.pause != null && spec.runMode.pause.isOn()) {
                JobCondition paused = Conditions.find(previous.conditions, JobCondition.PAUSED);
                if (paused == null || !"JobFinished".equals(paused.reason)) {
                    events.add(JobEvent.warning("PauseIgnored", "The job has " + previous.phase + "; pausing it changes nothing."));
                }
                next.conditions = new Conditions(previous.conditions, nowText)
                        .set(JobCondition.PAUSED, false, "JobFinished", "The job has finished; pausing it changes nothing.")
                        .build();
            }
            return finish();
        }

        private String failedReason() {
            JobCondition failed = Conditions.find(previous.conditions, JobCondition.FAILED);
            return previous.phase == JobPhase.Failed && failed != null ? failed.reason : REASON_SUCCEEDED;
        }

        /** cleanUpPolicy after the outcome; a deadline also deletes unfinished pods whatever the policy. */
        private void cleanUp(String reason) {
            CleanUpPolicy policy = spec == null || spec.runPolicy == null || spec.runPolicy.cleanUpPolicy == null
                    ? CleanUpPolicy.None
                    : spec.runPolicy.cleanUpPolicy;
            boolean deadline = REASON_DEADLINE_EXCEEDED.equals(reason);
            for (Pod pod : pods.values()) {
                boolean unfinished = !ReplicaPhase.valueOf(phaseOrUnknown(pod)).isFinished();
                if (policy == CleanUpPolicy.All || (unfinished && (policy == CleanUpPolicy.Unfinished || deadline))) {
                    deleteUnlessTerminating(pod, deadline && unfinished ? DeletionReason.DEADLINE : DeletionReason.CLEAN_UP);
                }
            }
        }

        private Plan finish() {
            if (resuming) {
                // Whatever path the pass took (training, debug, waiting for the scheduler), the pause is over.
                next.conditions.stream().filter(c -> JobCondition.PAUSED.equals(c.type)).forEach(c -> {
                    c.status = "False";
                    c.reason = "Resumed";
                    c.message = "The job was paused and has been resumed.";
                    c.lastTransitionTime = nowText;
                });
            }
            boolean changed = !JSON.valueToTree(next).equals(JSON.valueToTree(previous));
            return new Plan(next, changed, Optional.ofNullable(serviceToCreate), Optional.ofNullable(podGroupToCreate),
                    List.copyOf(creates), List.copyOf(deletes),
                    List.copyOf(events), List.copyOf(restarts), Optional.ofNullable(recheckAfter));
        }

        // ---- replica view ------------------------------------------------------------------------

        /** One task per replica group in spec order, one replica entry per slot in index order. */
        private List<TaskStatus> tasks(JobTopology topology, boolean active) {
            Map<String, TaskStatus> byType = new LinkedHashMap<>();
            for (ReplicaSlot slot : topology.slots()) {
                TaskStatus task = byType.computeIfAbsent(slot.type(), type -> {
                    TaskStatus t = new TaskStatus();
                    t.type = type;
                    TaskStatus before = taskOf(previous.tasks, type);
                    int restarts = before == null || before.restartCount == null ? 0 : before.restartCount;
                    t.restartCount = Math.max(restarts, restartCounts.getOrDefault(type, 0));
                    return t;
                });
                task.replicas.add(replica(slot.podName(), active));
            }
            return new ArrayList<>(byType.values());
        }

        /** The replicas the status already lists, brought up to date with the pods observed. */
        private List<TaskStatus> refreshedTasks() {
            List<TaskStatus> tasks = new ArrayList<>();
            for (TaskStatus before : previous.tasks == null ? List.<TaskStatus>of() : previous.tasks) {
                TaskStatus task = new TaskStatus();
                task.type = before.type;
                task.restartCount = before.restartCount;
                for (ReplicaStatus replica : before.replicas) {
                    task.replicas.add(replica(replica.name, false));
                }
                tasks.add(task);
            }
            return tasks;
        }

        private ReplicaStatus replica(String podName, boolean active) {
            Pod pod = pods.get(podName);
            ReplicaStatus before = previousReplica(podName);
            ReplicaStatus replica = new ReplicaStatus();
            replica.name = podName;
            if (pod == null) {
                // Keep the last pod's UID: it tells a pod that vanished from one never created.
                replica.uid = before == null ? null : before.uid;
                replica.phase = active ? ReplicaPhase.Creating : ReplicaPhase.Deleted;
                return replica;
            }
            // A pod on its way out that we did not count keeps the UID last recorded: a pod deleted by
            // someone else is then seen to vanish, while one never recorded (scale-down, pause) is not.
            replica.uid = isTerminating(pod) && !isCounted(pod) ? (before == null ? null : before.uid) : uidOf(pod);
            replica.phase = ReplicaPhase.valueOf(phaseOrUnknown(pod));
            if (pod.getStatus() != null && pod.getStatus().getContainerStatuses() != null) {
                for (ContainerStatus status : pod.getStatus().getContainerStatuses()) {
                    replica.containers.add(containerOf(status));
                }
            }
            return replica;
        }

        private static ReplicaStatus.ContainerStatus containerOf(ContainerStatus status) {
            ReplicaStatus.ContainerStatus container = new ReplicaStatus.ContainerStatus();
            container.name = status.getName();
            ContainerState state = status.getState();
            if (state != null && state.getTerminated() != null) {
                container.state = "Terminated";
                container.exitCode = state.getTerminated().getExitCode();
                container.reason = state.getTerminated().getReason();
            } else if (state != null && state.getRunning() != null) {
                container.state = "Running";
            } else {
                container.state = "Waiting";
                container.reason = state != null && state.getWaiting() != null ? state.getWaiting().getReason() : null;
            }
            return container;
        }

        private static AggregateStatus aggregate(List<TaskStatus> tasks) {
            AggregateStatus aggregate = new AggregateStatus();
            tasks.forEach(task -> task.replicas.forEach(replica -> aggregate.add(replica.phase)));
            return aggregate;
        }

        // ---- helpers ----------------------------------------------------------------------------

        private boolean isRunningOrDone(ReplicaSlot slot, Pod pod) {
            if (pod == null) {
                return false;
            }
            String phase = phaseOf(pod);
            return "Running".equals(phase) || ("Succeeded".equals(phase) && !slot.isMaster());
        }

        private Optional<Instant> deadline() {
            if (spec.runPolicy == null || spec.runPolicy.activeDeadlineSeconds == null || next.startTime == null) {
                return Optional.empty();
            }
            try {
                return Optional.of(Instant.parse(next.startTime).plusSeconds(spec.runPolicy.activeDeadlineSeconds));
            } catch (DateTimeParseException e) {
                return Optional.empty();
            }
        }

        private int backoffLimit() {
            RunPolicy policy = spec.runPolicy;
            return policy == null || policy.backoffLimit == null ? RunPolicy.DEFAULT_BACKOFF_LIMIT : policy.backoffLimit;
        }

        private static RestartPolicy policyOf(ReplicaSlot slot) {
            return slot.group().restartPolicy == null ? RestartPolicy.OnFailure : slot.group().restartPolicy;
        }

        /** Counted restarts stay until a pod with another UID is seen under the same name. */
        private void pruneCountedRestarts() {
            if (next.countedRestarts == null) {
                return;
            }
            next.countedRestarts.removeIf(counted -> {
                Pod pod = pods.get(counted.pod);
                return pod != null && !Objects.equals(uidOf(pod), counted.uid);
            });
            if (next.countedRestarts.isEmpty()) {
                next.countedRestarts = null;
            }
        }

        private boolean hasCountedRestarts() {
            return next.countedRestarts != null && !next.countedRestarts.isEmpty();
        }

        private boolean isCounted(Pod pod) {
            return isCounted(pod.getMetadata().getName(), uidOf(pod));
        }

        private boolean isCounted(String podName, String uid) {
            return next.countedRestarts != null && uid != null && next.countedRestarts.stream()
                    .anyMatch(c -> podName.equals(c.pod) && uid.equals(c.uid));
        }

        private void deleteUnlessTerminating(Pod pod, DeletionReason reason) {
            if (!isTerminating(pod)) {
                deletes.add(new PodDeletion(pod.getMetadata().getName(), uidOf(pod), pod.getMetadata().getResourceVersion(), reason));
            }
        }

        private ReplicaStatus previousReplica(String podName) {
            if (previous.tasks == null) {
                return null;
            }
            for (TaskStatus task : previous.tasks) {
                for (ReplicaStatus replica : task.replicas) {
                    if (podName.equals(replica.name)) {
                        return replica;
                    }
                }
            }
            return null;
        }

        private static TaskStatus taskOf(List<TaskStatus> tasks, String type) {
            return tasks == null ? null : tasks.stream().filter(t -> type.equals(t.type)).findFirst().orElse(null);
        }

        private static boolean isTerminating(Pod pod) {
            return pod.getMetadata().getDeletionTimestamp() != null;
        }

        private static String uidOf(Pod pod) {
            return pod.getMetadata().getUid();
        }

        private static String phaseOf(Pod pod) {
            return pod.getStatus() == null ? null : pod.getStatus().getPhase();
        }

        /** A pod with no phase yet was just created: Pending. */
        private static String phaseOrUnknown(Pod pod) {
            String phase = phaseOf(pod);
            if (phase == null || phase.isEmpty()) {
                return "Pending";
            }
            return switch (phase) {
                case "Pending", "Running", "Succeeded", "Failed" -> phase;
                default -> "Unknown";
            };
        }

        /** Only pods this job controls: a pod left by an older job of the same name is not ours. */
        private static Map<String, Pod> ownedPods(PyTorchTrainingJob job, Collection<Pod> observed) {
            Map<String, Pod> owned = new LinkedHashMap<>();
            String uid = job.getMetadata().getUid();
            for (Pod pod : observed) {
                List<OwnerReference> owners = pod.getMetadata().getOwnerReferences();
                boolean ours = owners != null && owners.stream()
                        .anyMatch(o -> Boolean.TRUE.equals(o.getController()) && Objects.equals(o.getUid(), uid));
                if (ours) {
                    owned.put(pod.getMetadata().getName(), pod);
                }
            }
            return owned;
        }
    }
}
