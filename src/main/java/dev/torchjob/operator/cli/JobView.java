package dev.torchjob.operator.cli;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cli.CliArguments.JobKind;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobState;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.kubeflow.KubeflowLabels;
import dev.torchjob.operator.kubeflow.KubeflowModel;
import dev.torchjob.operator.kubeflow.KubeflowPlanner;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.podtemplate.PodTemplateCheck.Scope;
import dev.torchjob.operator.status.StatusTime;
import dev.torchjob.operator.t9k.JobLabels;
import dev.torchjob.operator.t9k.T9kModel;
import io.fabric8.kubernetes.api.model.ObjectMeta;

/**
 * A job of either API as the command line shows it: its phase, conditions, replica groups, restarts
 * against its budget, queue and the labels that find its pods. Built by the same adapters the
 * operator uses, so "restarts 1/3" means what the operator counts; the pod templates are the
 * operator's to judge (its InvalidSpec), not read again here.
 */
public record JobView(
        JobKind kind,
        String name,
        String namespace,
        Optional<Instant> created,
        JobPhase phase,
        List<Condition> conditions,
        List<TrainingJob.ReplicaGroup> groups,
        int restarts,
        TrainingJob.RunPolicy runPolicy,
        Optional<String> queue,
        Map<String, String> podSelector,
        String replicaTypeLabel) {

    /** A condition of the job's status, in either API's shape. */
    public record Condition(String type, boolean status, String reason, String message, Optional<Instant> at) {
    }

    public static JobView of(PyTorchTrainingJob job) {
        var status = job.getStatus();
        List<Condition> conditions = new ArrayList<>();
        if (status != null && status.conditions != null) {
            status.conditions.forEach(c -> conditions.add(new Condition(c.type, c.isTrue(), c.reason, c.message, instant(c.lastTransitionTime))));
        }
        TrainingJob model = T9kModel.job(job, Scope.SPEC_BUT_TEMPLATES);
        return new JobView(JobKind.T9K, job.getMetadata().getName(), job.getMetadata().getNamespace(),
                instant(job.getMetadata().getCreationTimestamp()),
                status == null || status.phase == null ? JobPhase.Pending : status.phase, List.copyOf(conditions),
                groups(model, T9kModel.state(status)),
                status == null || status.backoffCount == null ? 0 : status.backoffCount, model.runPolicy(), queue(job.getMetadata()),
                Map.of(JobLabels.OWNER_KIND, PyTorchTrainingJob.KIND, JobLabels.OWNER_NAME, job.getMetadata().getName()),
                JobLabels.REPLICA_TYPE);
    }

    public static JobView of(PyTorchJob job) {
        var status = job.getStatus();
        List<Condition> conditions = new ArrayList<>();
        if (status != null && status.conditions != null) {
            status.conditions.forEach(c -> conditions.add(new Condition(c.type, "True".equals(c.status), c.reason, c.message,
                    instant(c.lastTransitionTime))));
        }
        TrainingJob model = KubeflowModel.job(job, Scope.SPEC_BUT_TEMPLATES);
        return new JobView(JobKind.KUBEFLOW, job.getMetadata().getName(), job.getMetadata().getNamespace(),
                instant(job.getMetadata().getCreationTimestamp()),
                status == null || status.phase == null ? JobPhase.Pending : status.phase, List.copyOf(conditions),
                groups(model, KubeflowPlanner.state(status)),
                status == null || status.backoffCount == null ? 0 : status.backoffCount, model.runPolicy(), queue(job.getMetadata()),
                Map.of(KubeflowLabels.JOB_NAME, job.getMetadata().getName()), KubeflowLabels.REPLICA_TYPE);
    }

    /** None for a job the operator failed InvalidSpec: its templates are checked there, not here. */
    private static List<TrainingJob.ReplicaGroup> groups(TrainingJob model, JobState state) {
        return state.outcome() == Outcome.InvalidSpec ? List.of() : model.groups();
    }

    private static Optional<String> queue(ObjectMeta meta) {
        return Optional.ofNullable(meta.getLabels()).map(l -> l.get(KueueWorkload.QUEUE_LABEL));
    }

    /** A status or metadata time; one that does not parse is absent, as the operator treats it. */
    static Optional<Instant> instant(String time) {
        return Optional.ofNullable(StatusTime.parse(time));
    }

    public boolean ended() {
        return phase.isTerminal();
    }

    public Optional<Condition> condition(String type) {
        return conditions.stream().filter(c -> c.type().equals(type)).findFirst();
    }

    /**
     * Not waiting in Kueue: admitted, or without a queue from the start. A job without a queue label
     * that waits all the same (held until it names one, or leaving the one it had) is not admitted.
     */
    public boolean admitted() {
        return condition("Queued").map(q -> !q.status()).orElse(queue.isEmpty() || phase != JobPhase.Pending);
    }

    /** Why the job ended, as its status says: the condition that ended it, reason and message. */
    public Optional<String> outcome() {
        if (!ended()) {
            return Optional.empty();
        }
        List<String> types = phase == JobPhase.Succeeded ? List.of("Completed", "Succeeded") : List.of("Failed");
        Optional<Condition> ending = conditions.stream().filter(c -> c.status() && types.contains(c.type()))
                .max(Comparator.comparing(c -> c.at().orElse(Instant.EPOCH)));
        // The reason is left out where it only repeats the phase (Kubeflow's condition reasons often do).
        return Optional.of("job " + name + " " + phase + ending.map(c -> (c.reason() == null || c.reason().equals(phase.name()) ? "" : ": " + c.reason())
                // One line: the replica's last output that a failure's message carries is in its log already.
                + (c.message() == null || c.message().isBlank() ? "" : " (" + JobHistory.firstLine(c.message()) + ")")).orElse(""));
    }

    /** restarts/backoffLimit, or restarts/- when the job's API sets no limit. */
    public String restartsOfLimit() {
        return restarts + "/" + (runPolicy.backoffLimit() >= Integer.MAX_VALUE - 1 ? "-" : String.valueOf(runPolicy.backoffLimit()));
    }

    /** The group of this name, however the user cased it (Kubeflow's are Master/Worker, the pods' labels master/worker). */
    public Optional<TrainingJob.ReplicaGroup> group(String type) {
        return groups.stream().filter(g -> g.type().equalsIgnoreCase(type)).findFirst();
    }

    /** The replica a pod runs, as the pod's name says it after the job's: "worker-1". */
    public String replicaOf(String podName) {
        return podName.startsWith(name + "-") ? podName.substring(name.length() + 1) : podName;
    }

    /** The label value a replica group's pods carry (Kubeflow lowercases the type). */
    public String typeLabelValue(TrainingJob.ReplicaGroup group) {
        return kind == JobKind.KUBEFLOW ? group.type().toLowerCase(Locale.ROOT) : group.type();
    }
}
