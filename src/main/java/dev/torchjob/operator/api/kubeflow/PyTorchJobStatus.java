package dev.torchjob.operator.api.kubeflow;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import dev.torchjob.operator.api.CountedRestart;
import dev.torchjob.operator.api.TaskStatus;
import dev.torchjob.operator.api.Unreadable;
import dev.torchjob.operator.engine.JobPhase;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * The status of a kubeflow.org/v1 PyTorchJob: Kubeflow's fields as Kubeflow writes them, then this
 * operator's own (restart accounting), which tools that know only Kubeflow's ignore.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class PyTorchJobStatus extends Unreadable.Part {
    @JsonPropertyDescription("Conditions in the order they were first set; the State column shows the last one's type.")
    public List<KubeflowCondition> conditions = new ArrayList<>();

    @JsonPropertyDescription("Pods by replica type (Master, Worker): active, succeeded, failed, and their selector.")
    public Map<String, KubeflowReplicaStatus> replicaStatuses = new LinkedHashMap<>();

    @JsonPropertyDescription("When the job's pods were first created (reset when a suspended job resumes).")
    public String startTime;

    @JsonPropertyDescription("When the job succeeded or failed.")
    public String completionTime;

    @JsonPropertyDescription("Kept for Kubeflow compatibility; not written.")
    public String lastReconcileTime;

    @JsonPropertyDescription("metadata.generation of the spec this status describes.")
    public Long observedGeneration;

    @JsonPropertyDescription("This operator's phase of the job: Pending, Running, Paused (suspended), Resuming, Succeeded or Failed.")
    public JobPhase phase;

    @JsonPropertyDescription("Why the job failed, as this operator names it: InvalidSpec, BackoffLimitExceeded, ReplicaFailedPermanently or DeadlineExceeded.")
    public String failureReason;

    @JsonPropertyDescription("Every replica by type, as last seen: its pod's UID and phase, how it last failed, restarts counted.")
    public List<TaskStatus> tasks;

    @JsonPropertyDescription("Restarts counted against runPolicy.backoffLimit: in place (container restarts) and recreated pods, each once.")
    public Integer backoffCount;

    @JsonPropertyDescription("The replicas whose restarts were counted, with their pod's UID and in-place restarts, so each is counted once across operator restarts.")
    public List<CountedRestart> countedRestarts;

    /** Reads a status, or an empty one that names the field it could not read. */
    @RegisterForReflection
    public static class Reader extends Unreadable<PyTorchJobStatus> {
        public Reader() {
            super(PyTorchJobStatus.class, "status", PyTorchJobStatus::new);
        }
    }
}
