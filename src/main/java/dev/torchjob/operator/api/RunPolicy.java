package dev.torchjob.operator.api;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.fabric8.generator.annotation.Max;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Min;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class RunPolicy {
    public static final int DEFAULT_BACKOFF_LIMIT = 3;

    @Default("3")
    @Min(0)
    @JsonPropertyDescription("Restarts allowed for the whole job, shared by all replicas (status.backoffCount counts them).")
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer backoffLimit = DEFAULT_BACKOFF_LIMIT;

    @Min(1)
    @JsonPropertyDescription("Seconds the job may run after status.startTime before it fails with DeadlineExceeded.")
    public Long activeDeadlineSeconds;

    @Default("None")
    @JsonPropertyDescription("Pods deleted when the job finishes: None keeps all, All deletes all, Unfinished deletes Pending, Running and Unknown pods.")
    public CleanUpPolicy cleanUpPolicy = CleanUpPolicy.None;
}
