package dev.torchjob.operator.api.kubeflow;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.quarkus.runtime.annotations.RegisterForReflection;

/** A job condition as kubeflow.org/v1 writes it. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class KubeflowCondition {
    @JsonPropertyDescription("Created, Running, Restarting, Succeeded, Failed or Suspended (and this operator's ReconcileError).")
    public String type;
    @JsonPropertyDescription("True, False or Unknown.")
    public String status;
    @JsonPropertyDescription("PyTorchJobCreated, PyTorchJobRunning, PyTorchJobRestarting, PyTorchJobSucceeded, PyTorchJobFailed, PyTorchJobSuspended or PyTorchJobResumed.")
    public String reason;
    @JsonPropertyDescription("What happened, for people.")
    public String message;
    @JsonPropertyDescription("When the condition was last updated.")
    public String lastUpdateTime;
    @JsonPropertyDescription("When status last changed.")
    public String lastTransitionTime;
}
