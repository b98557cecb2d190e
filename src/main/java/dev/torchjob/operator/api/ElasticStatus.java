package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.kubernetes.model.annotation.StatusReplicas;
import io.quarkus.runtime.annotations.RegisterForReflection;

@RegisterForReflection
public class ElasticStatus {
    @StatusReplicas
    @JsonPropertyDescription("Replicas that currently have a pod.")
    public Integer currentReplicas;
}
