package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.kubernetes.model.annotation.StatusReplicas;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonIgnoreProperties(ignoreUnknown = true)

@RegisterForReflection
public class ElasticStatus {
    @StatusReplicas
    @JsonPropertyDescription("Replicas that currently have a pod.")
    public Integer currentReplicas;
}
