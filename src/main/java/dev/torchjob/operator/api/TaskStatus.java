package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.quarkus.runtime.annotations.RegisterForReflection;

/** State of one replica group. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class TaskStatus {
    @JsonPropertyDescription("Replica type.")
    public String type;
    @JsonPropertyDescription("Restarts of replicas of this type.")
    public Integer restartCount = 0;
    @JsonPropertyDescription("One entry per replica of this type, by index.")
    public List<ReplicaStatus> replicas = new ArrayList<>();
}
