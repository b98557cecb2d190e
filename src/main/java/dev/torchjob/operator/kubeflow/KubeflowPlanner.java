package dev.torchjob.operator.kubeflow;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import com.fasterxml.jackson.databind.ObjectMapper;

import dev.torchjob.operator.api.CountedRestart;
import dev.torchjob.operator.api.kubeflow.KubeflowCondition;
import dev.torchjob.operator.api.kubeflow.KubeflowReplicaStatus;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import dev.torchjob.operator.engine.Decision;
import dev.torchjob.operator.engine.Engine;
import dev.torchjob.operator.engine.Gang;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.Pause;
import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.Observation;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.Pods;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.engine.Situation;
import dev.torchjob.operator.engine.StartBlocker;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.engine.Wording;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.status.ReplicaRecords;
import dev.torchjob.operator.status.StatusTime;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;

/**
 * The PyTorchJob adapter: the job and its status into the engine's model, the engine's decision
 * back into Kubeflow's status, pods, Services and events. Pure.
 */
public final class KubeflowPlanner {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** runPolicy.managedBy of a job MultiKueue dispatches to another cluster. */
    public static final String MULTIKUEUE = "kueue.x-k8s.io/multikueue";

    private KubeflowPlanner() {
    }

    /** One pass of a job with no autoscaler, queue, gang scheduler or pods removed lately: a dry run, another controller's pods. */
    public static Plan<PyTorchJobStatus> plan(PyTorchJob job, Collection<Pod> pods, Set<String> services, Instant now,
            Map<String, String> createdPods, RestartBackoff backoff) {
        return plan(job, pods, services, Optional.empty(), now, createdPods, backoff, QueueAdmission.NOT_QUEUED, Map.of(),
                GangObservation.NONE, Map.of());
    }

    /**
     * One pass. {@code services}: the names of the job's Services that exist; {@code autoscaler}: its
     * HorizontalPodAutoscaler as observed (elastic jobs with metrics); {@code createdPods}: pods this operator
     * created that no status named yet, {@code podWarnings}: the Warning events of pods slow to start,
     * {@code gonePods}: the job's pods removed lately, as last seen (see {@link Observation}); {@code queue}:
     * where the job stands with its queue (Kueue); {@code gang}: the operator's gang scheduler and the job's
     * PodGroup (Kubeflow's --gang-scheduler-name).
     */
    public static Plan<PyTorchJobStatus> plan(PyTorchJob job, Collection<Pod> pods, Set<String> services,
            Optional<HorizontalPodAutoscaler> autoscaler, Instant now, Map<String, String> createdPods, RestartBackoff backoff,
            QueueAdmission queue, Map<String, List<StartBlocker.PodWarning>> podWarnings, GangObservation gang,
            Map<String, Pod> gonePods) {
        if (dispatchedByMultiKueue(job)) {
            // MultiKueue runs it on another cluster and mirrors its status here: not ours to touch (as in Kubeflow).
            return Plan.nothing(job.getStatus(), state(job.getStatus()), now);
        }
        TrainingJob model = queue instanceof QueueAdmission.Admitted admitted ? KubeflowModel.job(job).admitted(admitted.replicas())
                : KubeflowModel.job(job);
        boolean servicesExist = model.problem().isPresent()
                || JobTopology.of(model).slots().stream().allMatch(slot -> services.contains(slot.podName()));
        Optional<GangScheduler> gangScheduler = gang.scheduler();
        Observation.PodGroupState podGroupApi = gangScheduler.isPresent() && !gang.apiInstalled()
                ? Observation.PodGroupState.API_MISSING : Observation.PodGroupState.NOT_NEEDED;
        Gang gangScheduling = gangScheduler.map(scheduler -> Gang.scheduling(scheduler.hold(gang.podGroup(), job.getMetadata().getName())))
                .orElse(Gang.NONE);
        Observation<PyTorchJob> observation = new Observation<>(job, pods, servicesExist, podGroupApi, now, createdPods, queue, podWarnings,
                gangScheduling, gonePods);
        JobState before = state(job.getStatus());
        Decision decision = Engine.decide(model, before, observation, wording(job.getMetadata().getName(), gangScheduler), backoff);
        List<Plan.JobEvent> events = new ArrayList<>(decision.events());

        ToCreate created = toCreate(job, model, decision, services, queue, gang, events);
        // A replica's Service goes with its pod when the pod goes for good; a restart keeps it.
        List<String> servicesToDelete = decision.podsToDelete().stream().filter(d -> d.reason() != DeletionReason.RESTART)
                .map(Plan.PodDeletion::name).filter(services::contains).toList();
        Companions companions = companions(job, model, decision, autoscaler, gang);

        PyTorchJobStatus previous = job.getStatus() == null ? new PyTorchJobStatus() : job.getStatus();
        PyTorchJobStatus next = status(job, previous, decision, pods);
        boolean changed = !JSON.valueToTree(next).equals(JSON.valueToTree(previous));
        return Plan.of(decision, before, next, changed, events, new Plan.ApiObjects(created.pods(), created.services(), servicesToDelete,
                Optional.empty(), companions.apply(), companions.delete()));
    }

    /** The pods and Services a pass creates, as Kubeflow makes them. */
    private record ToCreate(List<Pod> pods, List<Service> services) {
    }

    /**
     * The pods the decision asks for (with the gang scheduler's fields and the queue's admission) and the
     * missing Services; a template the gang scheduler cannot follow is said in {@code events}.
     */
    private static ToCreate toCreate(PyTorchJob job, TrainingJob model, Decision decision, Set<String> services, QueueAdmission queue,
            GangObservation gang, List<Plan.JobEvent> events) {
        List<Pod> podsToCreate = new ArrayList<>();
        List<Service> servicesToCreate = new ArrayList<>();
        if (decision.createService() || !decision.podsToCreate().isEmpty()) {
            JobTopology topology = JobTopology.of(model);
            KubeflowPods templates = new KubeflowPods(job, topology);
            QueueAdmission.PodAdmission admission = queue instanceof QueueAdmission.Admitted admitted ? admitted.pods()
                    : QueueAdmission.PodAdmission.NONE;
            for (var request : decision.podsToCreate()) {
                Pod pod = templates.pod(request.slot());
                gang.scheduler().ifPresent(scheduler -> scheduler.decorate(pod, job, request.slot().type(), gang.podGroup()));
                podsToCreate.add(admission.admit(request.slot().type(), pod));
            }
            gang.scheduler().map(scheduler -> scheduler.typesWithAnotherScheduler(job)).filter(types -> !types.isEmpty() && !podsToCreate.isEmpty())
                    .ifPresent(types -> events.add(Plan.JobEvent.warning("SetPodTemplateSchedulerName", "Another scheduler is specified in "
                            + String.join(" and ", types) + "'s template when gang-scheduling is enabled and it will not be overwritten;"
                            + " those pods are not gang-scheduled")));
            gang.scheduler().map(scheduler -> scheduler.typesWithAnotherPriority(job, gang.podGroup())).filter(types -> !types.isEmpty()
                    && !podsToCreate.isEmpty()).ifPresent(types -> events.add(Plan.JobEvent.warning("SetPodTemplatePriorityClassName",
                            "A gang is scheduled at one priority: " + String.join(" and ", types) + "'s pods get the PodGroup's priority class ("
                            + Optional.ofNullable(podsToCreate.get(0).getSpec().getPriorityClassName()).orElse("none")
                            + ") in place of their template's")));
            if (decision.createService()) {
                topology.slots().stream().filter(slot -> !services.contains(slot.podName())).forEach(slot -> servicesToCreate.add(templates.service(slot)));
            }
        }
        return new ToCreate(List.copyOf(podsToCreate), List.copyOf(servicesToCreate));
    }

    /** What follows the job beside its pods: its elastic autoscaler and its gang's PodGroup, applied or deleted. */
    private record Companions(List<HasMetadata> apply, List<HasMetadata> delete) {
    }

    private static Companions companions(PyTorchJob job, TrainingJob model, Decision decision, Optional<HorizontalPodAutoscaler> autoscaler,
            GangObservation gang) {
        // The elastic autoscaler follows the spec while the job is active; a suspended job has none.
        List<HasMetadata> apply = new ArrayList<>();
        List<HasMetadata> delete = new ArrayList<>();
        boolean finished = decision.state().phase() != null && decision.state().phase().isTerminal();
        boolean active = model.problem().isEmpty() && !finished
                && !(decision.situation() instanceof Situation.Pausing) && !(decision.situation() instanceof Situation.Queued);
        Optional<HorizontalPodAutoscaler> wanted = model.problem().isEmpty() ? ElasticAutoscaler.wanted(job, active) : Optional.empty();
        if (wanted.isPresent() && (autoscaler.isEmpty() || !ElasticAutoscaler.same(autoscaler.get(), wanted.get()))) {
            apply.add(wanted.get());
        }
        if (wanted.isEmpty() && autoscaler.isPresent() && !finished) {
            delete.add(autoscaler.get());
        }
        // The gang's PodGroup follows the spec while the job is active (minMember through elastic scaling);
        // the end and a suspension delete it, as Kubeflow does.
        if (gang.scheduler().isPresent() && gang.apiInstalled()) {
            GangScheduler scheduler = gang.scheduler().get();
            if (active) {
                var podGroup = scheduler.podGroup(job, gang.podGroup());
                if (gang.podGroup().isEmpty() || !ObservedPodGroup.hasSpec(gang.podGroup().get(), podGroup)) {
                    apply.add(podGroup);
                }
            } else if (model.problem().isEmpty()) {
                // Kubernetes' PodGroup stays, terminating, until no running pod names it: deleted once, not every pass.
                gang.podGroup().filter(podGroup -> podGroup.getMetadata().getDeletionTimestamp() == null).ifPresent(delete::add);
            }
        }
        return new Companions(List.copyOf(apply), List.copyOf(delete));
    }

    /**
     * What the job asks its queue for: Master then Worker, each from the pod its first replica gets;
     * an elastic job's workers ask for maxReplicas and can run with minReplicas (partial admission).
     * Empty for a job that cannot run (its spec is invalid).
     */
    public static List<KueueWorkload.PodSet> podSets(PyTorchJob job) {
        TrainingJob model = KubeflowModel.job(job);
        if (model.problem().isPresent()) {
            return List.of();
        }
        JobTopology topology = JobTopology.of(model);
        KubeflowPods templates = new KubeflowPods(job, topology);
        List<KueueWorkload.PodSet> podSets = new ArrayList<>();
        for (TrainingJob.ReplicaGroup group : model.groups()) {
            topology.slots().stream().filter(slot -> slot.type().equals(group.type())).findFirst().ifPresent(first -> {
                boolean elasticWorkers = model.elastic() && ReplicaTypes.WORKER.equals(group.type());
                podSets.add(elasticWorkers
                        ? KueueWorkload.PodSet.of(group.type(), templates.pod(first), KubeflowModel.elasticMax(job.getSpec()),
                                Optional.of(KubeflowModel.elasticMin(job.getSpec())), KubeflowLabels.REPLICA_INDEX)
                        : KueueWorkload.PodSet.of(group.type(), templates.pod(first), group.replicas(), Optional.empty(),
                                KubeflowLabels.REPLICA_INDEX));
            });
        }
        return podSets;
    }

    /** MultiKueue runs the job on another cluster and mirrors its status here: not this operator's to run or queue. */
    public static boolean dispatchedByMultiKueue(PyTorchJob job) {
        return job.getSpec() != null && job.getSpec().runPolicy != null && MULTIKUEUE.equals(job.getSpec().runPolicy.managedBy);
    }

    /** What the last status written says, in the engine's terms. */
    public static JobState state(PyTorchJobStatus status) {
        if (status == null) {
            return JobState.NEW;
        }
        KubeflowCondition suspended = KubeflowConditions.find(status.conditions, KubeflowConditions.SUSPENDED);
        // Suspended turns True at the first pass of a suspension, which forgets the pods it deletes: resuming
        // then, even before they are gone, starts the job anew.
        KubeflowCondition queued = KubeflowConditions.find(status.conditions, KubeflowConditions.QUEUED);
        boolean waiting = queued != null && "True".equals(queued.status);
        Pause pause = suspended != null && "True".equals(suspended.status) ? Pause.PAUSED
                : waiting && Situation.Queued.afterEviction(queued.reason) ? Pause.EVICTED
                : suspended == null ? Pause.NEVER : Pause.NOT_PAUSED;
        KubeflowCondition running = KubeflowConditions.find(status.conditions, KubeflowConditions.RUNNING);
        Outcome outcome = status.phase == JobPhase.Succeeded ? Outcome.Succeeded
                : status.phase == JobPhase.Failed && status.failureReason != null ? outcomeOf(status.failureReason) : null;
        return new JobState(
                status.observedGeneration != null,
                status.phase,
                StatusTime.parse(status.startTime),
                StatusTime.parse(status.completionTime),
                status.backoffCount == null ? 0 : status.backoffCount,
                status.countedRestarts == null ? List.of()
                        : status.countedRestarts.stream().map(c -> new JobState.CountedRestart(c.pod, c.uid, StatusTime.parse(c.restartAt))).toList(),
                ReplicaRecords.state(status.tasks),
                null,
                false,
                running != null && "True".equals(running.status),
                pause,
                false,
                waiting,
                outcome);
    }

    private static Outcome outcomeOf(String reason) {
        try {
            return Outcome.valueOf(reason);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static PyTorchJobStatus status(PyTorchJob job, PyTorchJobStatus previous, Decision decision, Collection<Pod> pods) {
        JobState state = decision.state();
        PyTorchJobStatus next = JSON.convertValue(previous, PyTorchJobStatus.class);
        String name = job.getMetadata().getName();
        boolean hasMaster = job.getSpec() != null && job.getSpec().unreadable == null
                && ReplicaTypes.of(job.getSpec()).containsKey(ReplicaTypes.MASTER);
        next.conditions = KubeflowConditions.of(previous.conditions, decision, name, job.getMetadata().getNamespace() + "/" + name, hasMaster);
        boolean endedBefore = previous.phase == JobPhase.Succeeded || previous.phase == JobPhase.Failed;
        next.replicaStatuses = endedBefore ? afterTheEnd(previous.replicaStatuses, replicaStatuses(job, state, pods, true))
                : replicaStatuses(job, state, pods, false);
        next.startTime = state.startTime() == null ? null : state.startTime().toString();
        next.completionTime = state.completionTime() == null ? null : state.completionTime().toString();
        next.observedGeneration = job.getMetadata().getGeneration();
        next.phase = state.phase();
        next.failureReason = state.outcome() != null && state.outcome().isFailure() ? state.outcome().name() : null;
        next.backoffCount = state.backoffCount();
        next.countedRestarts = state.countedRestarts().isEmpty() ? null
                : state.countedRestarts().stream().map(c -> new CountedRestart(c.pod(), c.uid(),
                        c.restartAt() == null ? null : c.restartAt().toString())).toList();
        next.tasks = ReplicaRecords.of(state);
        next.lastReconcileTime = null; // not kept by this operator: one another controller wrote does not stay
        return next;
    }

    /**
     * An ended job's counts agree with its pods while they are all there: pods a clean-up policy of None keeps
     * go on (the kubelet may restart one in place and it succeeds). A type whose pods clean-up deleted keeps the
     * counts of the moment the job ended, as Kubeflow keeps them for every type.
     */
    private static Map<String, KubeflowReplicaStatus> afterTheEnd(Map<String, KubeflowReplicaStatus> atTheEnd,
            Map<String, KubeflowReplicaStatus> now) {
        if (atTheEnd == null || atTheEnd.isEmpty()) {
            return now;
        }
        Map<String, KubeflowReplicaStatus> statuses = new LinkedHashMap<>(now);
        atTheEnd.forEach((type, ended) -> {
            KubeflowReplicaStatus current = now.get(type);
            if (current == null || pods(current) < pods(ended)) {
                statuses.put(type, ended);
            }
        });
        return statuses;
    }

    private static int pods(KubeflowReplicaStatus status) {
        return (status.active == null ? 0 : status.active) + (status.succeeded == null ? 0 : status.succeeded)
                + (status.failed == null ? 0 : status.failed);
    }

    /**
     * Pods of each type by state, as Kubeflow counts them; once the job succeeded, the active ones count as
     * succeeded. After the end, a pod being deleted is clean-up's, not a failure: it is not counted.
     */
    private static Map<String, KubeflowReplicaStatus> replicaStatuses(PyTorchJob job, JobState state, Collection<Pod> pods, boolean ended) {
        Map<String, KubeflowReplicaStatus> statuses = new LinkedHashMap<>();
        if (job.getSpec() == null || job.getSpec().unreadable != null) {
            return statuses;
        }
        String name = job.getMetadata().getName();
        for (String type : ReplicaTypes.of(job.getSpec()).keySet()) {
            int active = 0;
            int succeeded = 0;
            int failed = 0;
            for (Pod pod : pods) {
                var labels = pod.getMetadata().getLabels();
                boolean ofType = labels != null && name.equals(labels.get(KubeflowLabels.JOB_NAME))
                        && type.toLowerCase(Locale.ROOT).equals(labels.get(KubeflowLabels.REPLICA_TYPE));
                if (!ofType || pod.getStatus() == null || pod.getStatus().getPhase() == null
                        || ended && pod.getMetadata().getDeletionTimestamp() != null) {
                    continue;
                }
                // By its training container: a sidecar running on does not keep a replica active.
                switch (Pods.replicaPhase(pod)) {
                    case Running -> {
                        if (pod.getMetadata().getDeletionTimestamp() != null) {
                            failed++; // its node is gone: Kubeflow counts it failed
                        } else {
                            active++;
                        }
                    }
                    case Succeeded -> succeeded++;
                    case Failed -> failed++;
                    default -> {
                    }
                }
            }
            if (state.outcome() == Outcome.Succeeded) {
                succeeded += active;
                active = 0;
            }
            if (state.pause() == Pause.PAUSED) {
                active = 0;
            }
            KubeflowReplicaStatus status = new KubeflowReplicaStatus();
            status.active = active == 0 ? null : active;
            status.succeeded = succeeded == 0 ? null : succeeded;
            status.failed = failed == 0 ? null : failed;
            Map<String, String> matchLabels = new LinkedHashMap<>();
            matchLabels.put(KubeflowLabels.OPERATOR_NAME, KubeflowLabels.OPERATOR);
            matchLabels.put(KubeflowLabels.JOB_NAME, name);
            matchLabels.put(KubeflowLabels.REPLICA_TYPE, type.toLowerCase(Locale.ROOT));
            status.labelSelector = new LabelSelectorBuilder().withMatchLabels(matchLabels).build();
            status.selector = KubeflowLabels.selectorOfType(name, type);
            statuses.put(type, status);
        }
        return statuses;
    }

    /** Since when the status's ReconcileError condition has been True, if it is. */
    public static Optional<Instant> errorSince(PyTorchJobStatus status) {
        KubeflowCondition error = status == null ? null : KubeflowConditions.find(status.conditions, KubeflowConditions.RECONCILE_ERROR);
        return error == null || !"True".equals(error.status) ? Optional.empty() : Optional.ofNullable(StatusTime.parse(error.lastTransitionTime));
    }

    /** The status with ReconcileError set or cleared; empty when it says so already. */
    public static java.util.Optional<PyTorchJobStatus> withReconcileError(PyTorchJobStatus status, String reason, String message,
            Instant now) {
        PyTorchJobStatus current = status == null ? new PyTorchJobStatus() : status;
        List<KubeflowCondition> conditions = KubeflowConditions.withReconcileError(current.conditions, reason, message,
                now.truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString());
        if (conditions == null) {
            return java.util.Optional.empty();
        }
        PyTorchJobStatus next = JSON.convertValue(current, PyTorchJobStatus.class);
        next.conditions = conditions;
        return java.util.Optional.of(next);
    }

    private static Wording wording(String job, Optional<GangScheduler> gang) {
        return new Wording() {
            @Override
            public String paused() {
                return "PyTorchJob " + job + " is suspended.";
            }

            @Override
            public String pausing(int podsLeft) {
                return "PyTorchJob " + job + " is being suspended: " + podsLeft + " pod(s) left to delete.";
            }

            @Override
            public String resuming() {
                return "PyTorchJob " + job + " is resumed.";
            }

            @Override
            public String pauseIgnored(JobPhase phase) {
                return "PyTorchJob " + job + " has finished (" + phase + "); runPolicy.suspend changes nothing.";
            }

            @Override
            public String awaitingAdmission() {
                return gang.map(scheduler -> "PyTorchJob " + job + " waits: the gang scheduler " + scheduler.setting()
                        + " is set, and its PodGroup API (" + scheduler.podGroups().getGroup() + "/" + scheduler.podGroups().getVersion()
                        + ") is not installed in the cluster; the pods are created once it is.")
                        .orElse("PyTorchJob " + job + " waits to be admitted.");
            }
        };
    }

}
