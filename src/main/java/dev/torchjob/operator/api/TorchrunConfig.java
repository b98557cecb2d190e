package dev.torchjob.operator.api;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.fabric8.generator.annotation.Max;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.Pattern;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class TorchrunConfig extends Toggle {

    @Default("0")
    @Min(0)
    @JsonPropertyDescription("torchrun --max_restarts: restarts of the worker processes inside a pod.")
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer maxRestarts = 0;

    @Default("1")
    @Pattern("^([1-9][0-9]*|gpu|cpu|auto)$")
    @JsonPropertyDescription("torchrun --nproc_per_node: a positive number, or gpu, cpu or auto.")
    public String procPerNode = "1";

    @Default("c10d")
    @JsonPropertyDescription("torchrun --rdzv_backend: c10d, etcd or etcd-v2.")
    public RendezvousBackend rdzvBackend = RendezvousBackend.C10D;

    @JsonPropertyDescription("More torchrun options, appended verbatim before the script.")
    public List<String> extraOptions = new ArrayList<>();

    @JsonPropertyDescription("Legacy field; ignored (a Warning event says so).")
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer minNodes;

}
