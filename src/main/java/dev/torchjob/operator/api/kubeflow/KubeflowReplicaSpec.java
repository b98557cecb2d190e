package dev.torchjob.operator.api.kubeflow;

import java.util.Map;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;

import dev.torchjob.operator.api.OpenObject;
import dev.torchjob.operator.api.SaturatingInteger;
import io.fabric8.crd.generator.annotation.PreserveUnknownFields;
import io.fabric8.crd.generator.annotation.SchemaFrom;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.Required;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** The Master or the Workers of a PyTorchJob, as in kubeflow.org/v1. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class KubeflowReplicaSpec {

    @Default("1")
    @Min(1)
    @Max(1000)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("Number of pods of this replica type (Master: exactly 1). A job has at most 1000 replicas in all.")
    public Integer replicas = 1;

    @Default("OnFailure")
    @JsonPropertyDescription("Always, OnFailure, Never or ExitCode. Always and OnFailure restart the container in place (the pod's restartPolicy); "
            + "ExitCode recreates the pod when the exit code is 128 or more. Every restart counts against runPolicy.backoffLimit.")
    public KubeflowRestartPolicy restartPolicy = KubeflowRestartPolicy.OnFailure;

    // Open, and kept as raw JSON: a malformed template fails its job alone (see ReplicaSpec of the T9k API).
    @Required
    @PreserveUnknownFields
    @SchemaFrom(type = OpenObject.class)
    @JsonPropertyDescription("Pod template. Needs a container named pytorch (the training container). Its schema is kept open; the operator checks what it relies on.")
    public Map<String, Object> template;
}
