package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class JobCondition {
    public static final String INITIALIZED = "Initialized";
    public static final String RUNNING = "Running";
    public static final String REPLICA_FAILURE = "ReplicaFailure";
    public static final String COMPLETED = "Completed";
    public static final String FAILED = "Failed";
    public static final String PAUSED = "Paused";
    /** This operator's, for jobs queued with Kueue: True while the job waits for admission. */
    public static final String QUEUED = "Queued";
    /** True while the operator cannot apply its decision (the API server refuses a write); the message is the server's. */
    public static final String RECONCILE_ERROR = "ReconcileError";
    /** True while an edit of the spec is refused: the job runs on status.lastValidSpec; the message names the field. */
    public static final String SPEC_REJECTED = "SpecRejected";

    @JsonPropertyDescription("Initialized, Running, ReplicaFailure, Completed, Failed or Paused.")
    public String type;
    @JsonPropertyDescription("True, False or Unknown.")
    public String status;
    @JsonPropertyDescription("Machine-readable reason in CamelCase, e.g. BackoffLimitExceeded.")
    public String reason;
    @JsonPropertyDescription("What happened, for people: names the pod, container and exit code where one is involved.")
    public String message;
    @JsonPropertyDescription("When status last changed.")
    public String lastTransitionTime;

    public JobCondition() {
    }

    public JobCondition(String type, boolean status, String reason, String message) {
        this.type = type;
        this.status = status ? "True" : "False";
        this.reason = reason;
        this.message = message;
    }

    @JsonIgnore
    public boolean isTrue() {
        return "True".equals(status);
    }
}
