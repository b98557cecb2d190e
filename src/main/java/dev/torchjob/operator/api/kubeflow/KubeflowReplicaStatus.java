package dev.torchjob.operator.api.kubeflow;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.kubernetes.api.model.LabelSelector;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** Pods of one replica type by state, as kubeflow.org/v1 counts them. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class KubeflowReplicaStatus {
    @JsonPropertyDescription("Pods running.")
    public Integer active;
    @JsonPropertyDescription("Pods that succeeded.")
    public Integer succeeded;
    @JsonPropertyDescription("Pods that failed.")
    public Integer failed;
    @JsonPropertyDescription("Deprecated: the selector of this type's pods as a LabelSelector; use selector.")
    public LabelSelector labelSelector;
    @JsonPropertyDescription("The label selector of this type's pods, as a string (for the scale subresource).")
    public String selector;
}
