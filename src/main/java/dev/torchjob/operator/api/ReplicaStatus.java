package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.quarkus.runtime.annotations.RegisterForReflection;
import dev.torchjob.operator.engine.ReplicaPhase;

/** State of one replica: its pod, or the absence of one. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class ReplicaStatus {
    @JsonPropertyDescription("Pod name.")
    public String name;
    @JsonPropertyDescription("UID of the pod last seen for this replica.")
    public String uid;
    @JsonPropertyDescription("Phase of the pod as its training container decides it (a sidecar running on does not keep the replica Running), or Creating (not seen yet) or Deleted (gone).")
    public ReplicaPhase phase;
    @JsonPropertyDescription("State of each container of the pod.")
    public List<ContainerStatus> containers = new ArrayList<>();
    @JsonPropertyDescription("How this replica's last failed pod ended, with the end of its output (at most 1024 characters); kept after the pod is restarted or deleted.")
    public String lastFailure;
    @JsonPropertyDescription("Failures of this replica in a row, without a run long enough in between; the restart back-off doubles with each.")
    public Integer failuresInARow;
    @JsonPropertyDescription("Container restarts the kubelet made in this pod (pod restartPolicy OnFailure or Always) that were counted against the budget.")
    public Integer restartsInPlace;
    @JsonPropertyDescription("Why this replica's pod cannot start, while it cannot (the pod waits; nothing is counted).")
    public CannotStart cannotStart;
    @JsonPropertyDescription("Pods of this replica in a row that their kubelet refused to run (OutOfcpu, NodeShutdown, UnexpectedAdmissionError, ...), until a kubelet takes one: each is replaced, nothing is counted, and the wait before the next one doubles with each.")
    public Integer refusalsInARow;

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class CannotStart {
        @JsonPropertyDescription("The scheduler's or the kubelet's reason, e.g. Unschedulable, ImagePullBackOff, ErrImageNeverPull, CreateContainerConfigError or FailedMount.")
        public String reason;
        @JsonPropertyDescription("What the scheduler or the kubelet said.")
        public String message;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class ContainerStatus {
        @JsonPropertyDescription("Container name.")
        public String name;
        @JsonPropertyDescription("Waiting, Running or Terminated.")
        public String state;
        @JsonPropertyDescription("Exit code, once terminated.")
        public Integer exitCode;
        @JsonPropertyDescription("Why the container is waiting or terminated, e.g. OOMKilled or Error.")
        public String reason;
    }
}
