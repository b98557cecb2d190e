package dev.torchjob.operator.api;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.fabric8.generator.annotation.Max;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.crd.generator.annotation.PreserveUnknownFields;
import io.fabric8.crd.generator.annotation.SchemaFrom;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;
import java.util.Map;

import io.quarkus.runtime.annotations.RegisterForReflection;

/** One group of identical replicas, such as master or worker. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class ReplicaSpec {

    @Required
    @Size(max = 40)
    @Pattern("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    @JsonPropertyDescription("Role of the replicas, a lowercase DNS label such as master, worker, node or ps. Names the pods <job>-<type>-<index>.")
    public String type;

    @Default("1")
    @Min(1)
    @JsonPropertyDescription("Number of replicas (pods) in this group; a job has at most 1000 replicas in all.")
    @Max(1000)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer replicas = 1;

    @Default("OnFailure")
    @JsonPropertyDescription("When a failed replica is restarted: Never, OnFailure, Always or ExitCode (only exit codes 130, 137, 138, 143, evictions and lost pods).")
    public RestartPolicy restartPolicy = RestartPolicy.OnFailure;

    @JsonPropertyDescription("Accepted for T9k compatibility; not used.")
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer scalingWeight;

    /**
     * Kept as raw JSON: the schema is open, so the API server accepts anything here, and one job
     * with a malformed template must fail alone (InvalidSpec), not break reading all jobs.
     */
    @Required
    @PreserveUnknownFields
    @SchemaFrom(type = OpenObject.class)
    @JsonPropertyDescription("Pod template of the replicas. The training container is the one named python, else pytorch, else the first one. Its schema is kept open; the operator checks what it relies on.")
    public Map<String, Object> template;
}
