package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.kubernetes.model.annotation.LabelSelector;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class PyTorchTrainingJobStatus {

    @JsonPropertyDescription("Pending, Running, Paused, Resuming, Succeeded, Failed or Unknown.")
    public JobPhase phase;

    @JsonPropertyDescription("metadata.generation of the spec this status describes.")
    public Long observedGeneration;

    @JsonPropertyDescription("When pods were first created (reset on resume).")
    public String startTime;

    @JsonPropertyDescription("When the job succeeded or failed.")
    public String completionTime;

    @JsonPropertyDescription("Restarts so far, of all replicas together; limited by runPolicy.backoffLimit.")
    public Integer backoffCount;

    @JsonPropertyDescription("Initialized, Running, ReplicaFailure, Completed, Failed and Paused conditions.")
    public List<JobCondition> conditions = new ArrayList<>();

    @JsonPropertyDescription("State of each replica group and its pods.")
    public List<TaskStatus> tasks = new ArrayList<>();

    @JsonPropertyDescription("Number of replicas in each phase.")
    public AggregateStatus aggregate;

    @LabelSelector
    @JsonPropertyDescription("Label selector of the job's pods (used by the scale subresource).")
    public String selector;

    @JsonPropertyDescription("Elastic state, when elastic training is enabled.")
    public ElasticStatus elastic;

    @JsonPropertyDescription("Restarts counted whose replacement pod has not been seen yet: the pod UIDs already counted, so a restart is counted exactly once even across operator restarts.")
    public List<CountedRestart> countedRestarts;
}
