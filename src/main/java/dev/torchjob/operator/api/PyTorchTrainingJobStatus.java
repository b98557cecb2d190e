package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.crd.generator.annotation.PreserveUnknownFields;
import io.fabric8.crd.generator.annotation.SchemaFrom;
import io.fabric8.kubernetes.model.annotation.LabelSelector;
import io.quarkus.runtime.annotations.RegisterForReflection;
import dev.torchjob.operator.engine.JobPhase;

@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class PyTorchTrainingJobStatus extends Unreadable.Part {

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

    /**
     * Kept as raw JSON, like the spec's pod templates: an edit the operator must refuse leaves the
     * job running on this spec, and a job being restarted needs its templates.
     */
    @PreserveUnknownFields
    @SchemaFrom(type = OpenObject.class)
    @JsonPropertyDescription("The spec the job runs on: its spec as last accepted. An edit the operator refuses (see the SpecRejected condition) leaves the job running on this one.")
    public Map<String, Object> lastValidSpec;

    /** Reads a status, or an empty one that names the field it could not read. */
    @RegisterForReflection
    public static class Reader extends Unreadable<PyTorchTrainingJobStatus> {
        public Reader() {
            super(PyTorchTrainingJobStatus.class, "status", PyTorchTrainingJobStatus::new);
        }
    }
}
