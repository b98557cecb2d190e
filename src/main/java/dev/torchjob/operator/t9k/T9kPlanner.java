package dev.torchjob.operator.t9k;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import com.fasterxml.jackson.databind.ObjectMapper;

import dev.torchjob.operator.api.AggregateStatus;
import dev.torchjob.operator.api.CountedRestart;
import dev.torchjob.operator.api.ElasticStatus;
import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.Decision.PodRequest;
import dev.torchjob.operator.engine.Decision;
import dev.torchjob.operator.engine.Engine;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.Observation.PodGroupState;
import dev.torchjob.operator.engine.Observation;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.engine.ReplicaHealth;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.engine.Situation;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.status.ReplicaRecords;
import dev.torchjob.operator.status.StatusTime;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;

/**
 * The PyTorchTrainingJob adapter: the job and its status into the engine's model, the engine's
 * decision back into T9k's status, pods, Service, PodGroup and events. Pure.
 */
public final class T9kPlanner {
    private static final ObjectMapper JSON = new ObjectMapper();

    private T9kPlanner() {
    }

    /** What is observed of a job that does not use the T9k scheduler, or whose PodGroup is still to be created. */
    public static Observation<PyTorchTrainingJob> observe(PyTorchTrainingJob job, Collection<Pod> pods, boolean serviceExists, Instant now) {
        return new Observation<>(job, pods, serviceExists, usesT9kScheduler(job) ? PodGroupState.MISSING : PodGroupState.NOT_NEEDED, now);
    }

    /** runMode.pause is on. */
    public static boolean pauseRequested(PyTorchTrainingJob job) {
        return job.getSpec() != null && job.getSpec().runMode != null && job.getSpec().runMode.pause != null
                && job.getSpec().runMode.pause.isOn();
    }

    public static boolean usesT9kScheduler(PyTorchTrainingJob job) {
        return job.getSpec() != null && job.getSpec().scheduler != null && job.getSpec().scheduler.t9kScheduler != null;
    }

    public static Plan<PyTorchTrainingJobStatus> plan(PyTorchTrainingJob job, Collection<Pod> pods, boolean serviceExists, Instant now) {
        return plan(observe(job, pods, serviceExists, now), RestartBackoff.NONE);
    }

    public static Plan<PyTorchTrainingJobStatus> plan(Observation<PyTorchTrainingJob> observation, RestartBackoff backoff) {
        PyTorchTrainingJob submitted = observation.job();
        Optional<String> rejectedEdit = rejectedEdit(submitted);
        // A refused edit of a job under way: the job goes on with the spec it had.
        PyTorchTrainingJob job = rejectedEdit.isPresent() ? withLastValidSpec(submitted) : submitted;
        QueueAdmission queue = observation.queue();
        TrainingJob model = queue instanceof QueueAdmission.Admitted admitted ? T9kModel.job(job).admitted(admitted.replicas())
                : T9kModel.job(job);
        JobState before = T9kModel.state(job.getStatus());
        T9kWording wording = new T9kWording(job.getSpec());
        Decision decided = Engine.decide(model, before, observation, wording, backoff);
        Decision decision = endsUnseenRunning(before, decided) ? ranFirst(before, decided) : decided;

        List<JobEvent> events = new ArrayList<>();
        if (!before.planned() && model.problem().isEmpty()) {
            events.addAll(fieldsNotActedOn(job.getSpec()));
        }
        JobCondition rejectedBefore = submitted.getStatus() == null ? null
                : Conditions.find(submitted.getStatus().conditions, JobCondition.SPEC_REJECTED);
        rejectedEdit.filter(problem -> rejectedBefore == null || !rejectedBefore.isTrue() || !problem.equals(rejectedBefore.message))
                .ifPresent(problem -> events.add(JobEvent.warning(JobCondition.SPEC_REJECTED, problem)));
        events.addAll(decision.events());
        List<Pod> pods = new ArrayList<>();
        Service service = null;
        GenericKubernetesResource podGroup = null;
        if (decision.createService() || decision.createPodGroup() || !decision.podsToCreate().isEmpty()) {
            PodTemplates templates = new PodTemplates(job, JobTopology.of(model));
            QueueAdmission.PodAdmission admission = queue instanceof QueueAdmission.Admitted admitted ? admitted.pods()
                    : QueueAdmission.PodAdmission.NONE;
            for (PodRequest request : decision.podsToCreate()) {
                String type = request.slot().type();
                pods.add(admission.admit(type, templates.pod(request.slot(), switch (request.mode()) {
                    case TRAIN -> PodOverrides.NONE;
                    case DEBUG -> PodOverrides.debug(job.getSpec(), type);
                    case RESUME -> PodOverrides.resume(job.getSpec(), type);
                })));
            }
            service = decision.createService() ? templates.headlessService() : null;
            podGroup = decision.createPodGroup() ? templates.podGroup() : null;
        }

        PyTorchTrainingJobStatus previous = job.getStatus() == null ? new PyTorchTrainingJobStatus() : job.getStatus();
        PyTorchTrainingJobStatus next = status(job, previous, decision, wording);
        specInForce(next, submitted, model, rejectedEdit, rejectedBefore, decision.decidedAt());
        boolean changed = !JSON.valueToTree(next).equals(JSON.valueToTree(previous));
        return Plan.of(decision, before, next, changed, events, new Plan.ApiObjects(pods, service == null ? List.of() : List.of(service),
                List.of(), Optional.ofNullable(podGroup), List.of(), List.of()));
    }

    /**
     * Whether the job's pods all ran and ended between two passes, so that this pass would end a job
     * whose status never said it ran. T9k keeps one {@code Running} condition, which one status write
     * cannot show True and then False; Kubeflow's condition list records both in the ending write.
     */
    static boolean endsUnseenRunning(JobState before, Decision decision) {
        JobState.Outcome outcome = decision.state().outcome();
        return outcome != null && before.outcome() == null && !before.running() && before.phase() != JobPhase.Running
                && (outcome == JobState.Outcome.Succeeded || outcome == JobState.Outcome.BackoffLimitExceeded
                        || outcome == JobState.Outcome.ReplicaFailedPermanently);
    }

    /**
     * The pass before the end: the status says the job ran (phase Running, {@code Running=True}) and
     * nothing else happens — no restart counted, no pod deleted, no event; the next pass, a moment
     * later, decides the outcome again from the same pods and does all of that once.
     */
    static Decision ranFirst(JobState before, Decision ending) {
        JobState ended = ending.state();
        // The replicas as observed, with the restart counts of before: this pass counts nothing.
        List<JobState.ReplicaGroupState> groups = ended.replicaGroups().stream().map(group -> new JobState.ReplicaGroupState(group.type(),
                before.group(group.type()) == null ? 0 : before.group(group.type()).restartCount(), group.replicas())).toList();
        JobState ran = new JobState(true, JobPhase.Running, ended.startTime(), null, before.backoffCount(), before.countedRestarts(),
                groups, ended.elasticReplicas(), true, true, before.pause(), false, false, null);
        return new Decision(ran, new Situation.Active(false, ReplicaHealth.HEALTHY), false, false, false, List.of(), List.of(),
                List.of(), List.of(), Optional.empty(), List.of(), Optional.of(Duration.ZERO), ending.decidedAt(), false, ending.queue());
    }

    /**
     * What the job asks its queue for: one podSet per replica group, from the pod its first replica
     * gets; an elastic group asks for maxReplicas and can run with minReplicas (partial admission).
     * Empty for a job that cannot run (its spec is invalid).
     */
    public static List<KueueWorkload.PodSet> podSets(PyTorchTrainingJob submitted) {
        PyTorchTrainingJob job = rejectedEdit(submitted).isPresent() ? withLastValidSpec(submitted) : submitted;
        TrainingJob model = T9kModel.job(job);
        if (model.problem().isPresent()) {
            return List.of();
        }
        JobTopology topology = JobTopology.of(model);
        PodTemplates templates = new PodTemplates(job, topology);
        List<KueueWorkload.PodSet> podSets = new ArrayList<>();
        for (TrainingJob.ReplicaGroup group : model.groups()) {
            topology.slots().stream().filter(slot -> slot.type().equals(group.type())).findFirst().ifPresent(first -> {
                Pod pod = templates.pod(first, PodOverrides.NONE);
                podSets.add(model.elastic()
                        ? KueueWorkload.PodSet.of(group.type(), pod, job.getSpec().elastic.maxReplicas,
                                Optional.of(job.getSpec().elastic.minReplicas), JobLabels.REPLICA_INDEX)
                        : KueueWorkload.PodSet.of(group.type(), pod, group.replicas(), Optional.empty(), JobLabels.REPLICA_INDEX));
            });
        }
        return podSets;
    }

    /**
     * The problem with an edit of a job under way that the operator must refuse (the API server could
     * not check it): a job that has a last valid spec and has not finished keeps running on it.
     */
    private static Optional<String> rejectedEdit(PyTorchTrainingJob job) {
        PyTorchTrainingJobStatus status = job.getStatus();
        if (status == null || status.lastValidSpec == null || status.phase == null || status.phase.isTerminal()) {
            return Optional.empty();
        }
        return SpecValidator.problemWith(job).map(problem -> problem + "; the job goes on with its last valid spec "
                + "(status.lastValidSpec) until the spec is fixed");
    }

    private static PyTorchTrainingJob withLastValidSpec(PyTorchTrainingJob job) {
        PyTorchTrainingJob effective = new PyTorchTrainingJob();
        effective.setMetadata(job.getMetadata());
        effective.setStatus(job.getStatus());
        effective.setSpec(JSON.convertValue(job.getStatus().lastValidSpec, PyTorchTrainingJobSpec.class));
        return effective;
    }

    /** status.lastValidSpec follows every accepted spec while the job is under way; SpecRejected says when an edit is refused. */
    private static void specInForce(PyTorchTrainingJobStatus next, PyTorchTrainingJob submitted, TrainingJob model,
            Optional<String> rejectedEdit, JobCondition rejectedBefore, Instant now) {
        if (next.phase != null && next.phase.isTerminal()) {
            next.lastValidSpec = null; // nothing will be built from it again
        } else if (rejectedEdit.isEmpty() && model.problem().isEmpty()) {
            next.lastValidSpec = asStored(submitted.getSpec());
        }
        if (rejectedEdit.isPresent() || rejectedBefore != null) {
            JobCondition condition = new JobCondition(JobCondition.SPEC_REJECTED, rejectedEdit.isPresent(),
                    rejectedEdit.isPresent() ? "InvalidSpec" : "SpecAccepted",
                    rejectedEdit.orElse("The job runs on its spec as written."));
            condition.lastTransitionTime = rejectedBefore != null && rejectedBefore.isTrue() == rejectedEdit.isPresent()
                    ? rejectedBefore.lastTransitionTime : now.toString();
            int at = next.conditions.indexOf(next.conditions.stream()
                    .filter(c -> JobCondition.SPEC_REJECTED.equals(c.type)).findFirst().orElse(null));
            if (at >= 0) {
                next.conditions.set(at, condition);
            } else {
                next.conditions.add(condition);
            }
        }
    }

    /**
     * The spec as the API server will hand it back: through JSON text, so numbers come back as the
     * same types and an unchanged spec compares equal (no status write for it).
     */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> asStored(PyTorchTrainingJobSpec spec) {
        try {
            return JSON.readValue(JSON.writeValueAsString(spec), Map.class);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("a spec that was read cannot be written back: " + e.getMessage(), e);
        }
    }

    /** The engine's next state in T9k's status; fields the engine does not own are kept as they were. */
    private static PyTorchTrainingJobStatus status(PyTorchTrainingJob job, PyTorchTrainingJobStatus previous, Decision decision,
            T9kWording wording) {
        JobState state = decision.state();
        PyTorchTrainingJobStatus next = JSON.convertValue(previous, PyTorchTrainingJobStatus.class);
        next.observedGeneration = job.getMetadata().getGeneration();
        next.selector = JobLabels.selectorOf(job.getMetadata().getName());
        next.phase = state.phase();
        next.startTime = state.startTime() == null ? null : state.startTime().toString();
        next.completionTime = state.completionTime() == null ? null : state.completionTime().toString();
        next.backoffCount = state.backoffCount();
        next.countedRestarts = state.countedRestarts().isEmpty() ? null
                : state.countedRestarts().stream().map(c -> new CountedRestart(c.pod(), c.uid(),
                        c.restartAt() == null ? null : c.restartAt().toString())).toList();
        next.tasks = ReplicaRecords.of(state);
        next.aggregate = new AggregateStatus();
        next.tasks.forEach(task -> task.replicas.forEach(replica -> next.aggregate.add(replica.phase)));
        if (state.elasticReplicas() != null) {
            next.elastic = new ElasticStatus();
            next.elastic.currentReplicas = state.elasticReplicas();
        }
        next.conditions = T9kConditions.of(previous.conditions, decision, wording);
        return next;
    }

    /** Since when the status's ReconcileError condition has been True, if it is. */
    public static Optional<Instant> errorSince(PyTorchTrainingJobStatus status) {
        JobCondition error = status == null ? null : Conditions.find(status.conditions, JobCondition.RECONCILE_ERROR);
        return error == null || !error.isTrue() ? Optional.empty() : Optional.ofNullable(StatusTime.parse(error.lastTransitionTime));
    }

    /**
     * The status with the ReconcileError condition set (the operator could not apply its decision,
     * {@code message} says why) or cleared (null message); empty when the status says so already.
     */
    public static Optional<PyTorchTrainingJobStatus> withReconcileError(PyTorchTrainingJobStatus status, String reason,
            String message, Instant now) {
        PyTorchTrainingJobStatus current = status == null ? new PyTorchTrainingJobStatus() : status;
        JobCondition before = Conditions.find(current.conditions, JobCondition.RECONCILE_ERROR);
        boolean failing = message != null;
        if (before == null ? !failing : before.isTrue() == failing && (!failing || message.equals(before.message))) {
            return Optional.empty();
        }
        PyTorchTrainingJobStatus next = JSON.convertValue(current, PyTorchTrainingJobStatus.class);
        JobCondition condition = new JobCondition(JobCondition.RECONCILE_ERROR, failing, failing ? reason : "Recovered",
                failing ? message : "The operator applies its decisions again.");
        condition.lastTransitionTime = before != null && before.isTrue() == failing ? before.lastTransitionTime
                : now.truncatedTo(ChronoUnit.SECONDS).toString();
        // In place (or last): the passes that follow keep the conditions' order, so they see no change.
        next.conditions.removeIf(c -> JobCondition.RECONCILE_ERROR.equals(c.type));
        int at = before == null ? next.conditions.size() : current.conditions.indexOf(before);
        next.conditions.add(Math.min(at, next.conditions.size()), condition);
        return Optional.of(next);
    }

    /** Spec §12: accepted for compatibility, said once. */
    private static List<JobEvent> fieldsNotActedOn(PyTorchTrainingJobSpec spec) {
        List<JobEvent> events = new ArrayList<>();
        if (spec.tensorboardSpec != null) {
            events.add(JobEvent.warning("TensorBoardNotManaged",
                    "spec.tensorboardSpec is kept, but TensorBoard is not managed by this operator."));
        }
        if (spec.torchrunConfig != null && spec.torchrunConfig.minNodes != null) {
            events.add(JobEvent.warning("IgnoredField",
                    "spec.torchrunConfig.minNodes is a legacy field and is ignored; use elastic.minReplicas."));
        }
        return events;
    }
}
