package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.quarkus.runtime.annotations.RegisterForReflection;
import dev.torchjob.operator.engine.ReplicaPhase;

/** Number of replicas in each phase. */
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class AggregateStatus {
    @JsonPropertyDescription("Replicas whose pod is being created (not seen yet).")
    public int creating;
    @JsonPropertyDescription("Replicas whose pod is Pending (waiting to be scheduled or started).")
    public int pending;
    @JsonPropertyDescription("Replicas whose pod is Running.")
    public int running;
    @JsonPropertyDescription("Replicas whose pod Succeeded.")
    public int succeeded;
    @JsonPropertyDescription("Replicas whose pod Failed.")
    public int failed;
    @JsonPropertyDescription("Replicas whose pod is in phase Unknown (node unreachable).")
    public int unknown;
    @JsonPropertyDescription("Replicas whose pod was deleted and not recreated (clean-up, pause).")
    public int deleted;

    public void add(ReplicaPhase phase) {
        switch (phase) {
            case Creating -> creating++;
            case Pending -> pending++;
            case Running -> running++;
            case Succeeded -> succeeded++;
            case Failed -> failed++;
            case Unknown -> unknown++;
            case Deleted -> deleted++;
        }
    }
}
