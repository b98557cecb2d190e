package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.quarkus.runtime.annotations.RegisterForReflection;

/** State of one replica: its pod, or the absence of one. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class ReplicaStatus {
    @JsonPropertyDescription("Pod name.")
    public String name;
    @JsonPropertyDescription("UID of the pod last seen for this replica.")
    public String uid;
    @JsonPropertyDescription("Pod phase, or Creating (not seen yet) or Deleted (gone).")
    public ReplicaPhase phase;
    public List<ContainerStatus> containers = new ArrayList<>();

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class ContainerStatus {
        public String name;
        @JsonPropertyDescription("Waiting, Running or Terminated.")
        public String state;
        public Integer exitCode;
        public String reason;
    }
}
