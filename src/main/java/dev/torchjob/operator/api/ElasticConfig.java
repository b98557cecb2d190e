package dev.torchjob.operator.api;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.fabric8.generator.annotation.Max;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.ValidationRule;
import io.fabric8.kubernetes.model.annotation.SpecReplicas;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@ValidationRule(value = "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
        message = "elastic.minReplicas must not exceed elastic.maxReplicas")
@ValidationRule(value = "!has(self.expectedReplicas) || ((!has(self.minReplicas) || self.minReplicas <= self.expectedReplicas) && (!has(self.maxReplicas) || self.expectedReplicas <= self.maxReplicas))",
        message = "elastic.expectedReplicas must be between elastic.minReplicas and elastic.maxReplicas")
@ValidationRule(value = "!((has(self.enabled) && self.enabled) || (has(self.enable) && self.enable)) || (has(self.minReplicas) && has(self.maxReplicas))",
        message = "elastic training needs elastic.minReplicas and elastic.maxReplicas")
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class ElasticConfig extends Toggle {

    @Min(1)
    @ValidationRule(value = "self == oldSelf", message = "elastic.minReplicas is immutable")
    @JsonPropertyDescription("Fewest replicas; immutable.")
    @Max(1000)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer minReplicas;

    @Min(1)
    @ValidationRule(value = "self == oldSelf", message = "elastic.maxReplicas is immutable")
    @JsonPropertyDescription("Most replicas; immutable.")
    @Max(1000)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer maxReplicas;

    @Min(1)
    @SpecReplicas
    @JsonPropertyDescription("Replicas wanted now (default minReplicas); change it, or use kubectl scale, to scale the job.")
    @Max(1000)
    @JsonDeserialize(using = SaturatingInteger.class)
    public Integer expectedReplicas;

}
