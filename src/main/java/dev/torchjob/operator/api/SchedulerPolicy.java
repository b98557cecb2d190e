package dev.torchjob.operator.api;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class SchedulerPolicy {

    @JsonPropertyDescription("Gang-schedule the pods with the T9k scheduler.")
    public T9kScheduler t9kScheduler;

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class T9kScheduler {
        @JsonPropertyDescription("Queue the pods wait in.")
        public String queue;

        @Default("0")
        @Min(0)
        @Max(100)
        @JsonPropertyDescription("Priority in the queue, 0 to 100.")
        @JsonDeserialize(using = SaturatingInteger.class)
        public Integer priority = 0;
    }
}
