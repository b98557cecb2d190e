package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;
import io.fabric8.generator.annotation.ValidationRule;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class RunMode {

    @JsonPropertyDescription("Debug mode: pods get the training environment but run a debug command instead of training. Fixed at creation.")
    public Debug debug;

    @JsonPropertyDescription("Pause mode: while enabled the job has no pods.")
    public Pause pause;

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class Debug extends Toggle {
        @Size(max = 16)
        @JsonPropertyDescription("Per replica type debug settings; types not listed use the defaults.")
        public List<DebugReplicaSpec> replicaSpecs;

    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class DebugReplicaSpec {
        @Required
        @JsonPropertyDescription("Replica type these settings apply to.")
        public String type;

        @Default("false")
        @JsonPropertyDescription("Drop the template's init containers.")
        public Boolean skipInitContainer = false;

        @JsonPropertyDescription("Command run while waiting for a debugger (default sleep inf).")
        public List<String> command;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class Pause extends Toggle {
        @Size(max = 16)
        @ValidationRule(value = "self == oldSelf", message = "runMode.pause.resumeSpecs is immutable once set")
        @JsonPropertyDescription("Per replica type overrides used when the job resumes; immutable once set.")
        public List<ResumeReplicaSpec> resumeSpecs;

    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class ResumeReplicaSpec {
        @Required
        @JsonPropertyDescription("Replica type these settings apply to.")
        public String type;

        @Default("false")
        @JsonPropertyDescription("Drop the template's init containers when resuming.")
        public Boolean skipInitContainer = false;

        @Size(max = 64)
        @JsonPropertyDescription("Command of the training container when resuming (default: the template's).")
        public List<String> command;

        @Size(max = 256)
        @JsonPropertyDescription("Args of the training container when resuming (default: the template's).")
        public List<String> args;
    }
}
