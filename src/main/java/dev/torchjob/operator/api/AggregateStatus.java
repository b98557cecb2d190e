package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import io.quarkus.runtime.annotations.RegisterForReflection;

/** Number of replicas in each phase. */
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class AggregateStatus {
    public int creating;
    public int pending;
    public int running;
    public int succeeded;
    public int failed;
    public int unknown;
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
