package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.crd.generator.annotation.PreserveUnknownFields;
import io.fabric8.crd.generator.annotation.SchemaFrom;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;
import io.fabric8.generator.annotation.ValidationRule;
import io.quarkus.runtime.annotations.RegisterForReflection;

@JsonInclude(JsonInclude.Include.NON_NULL)
@ValidationRule(value = "!(has(self.elastic) && ((has(self.elastic.enabled) && self.elastic.enabled) || (has(self.elastic.enable) && self.elastic.enable))) "
        + "|| (has(self.torchrunConfig) && ((has(self.torchrunConfig.enabled) && self.torchrunConfig.enabled) || (has(self.torchrunConfig.enable) && self.torchrunConfig.enable)))",
        message = "elastic.enabled requires torchrunConfig.enabled: elastic training is run by torchrun")
@ValidationRule(value = "!(has(self.elastic) && ((has(self.elastic.enabled) && self.elastic.enabled) || (has(self.elastic.enable) && self.elastic.enable))) || size(self.replicaSpecs) == 1",
        message = "elastic training needs exactly one entry in replicaSpecs")
@ValidationRule(value = "(has(self.runMode) && has(self.runMode.debug) && ((has(self.runMode.debug.enabled) && self.runMode.debug.enabled) || (has(self.runMode.debug.enable) && self.runMode.debug.enable))) "
        + "== (has(oldSelf.runMode) && has(oldSelf.runMode.debug) && ((has(oldSelf.runMode.debug.enabled) && oldSelf.runMode.debug.enabled) || (has(oldSelf.runMode.debug.enable) && oldSelf.runMode.debug.enable)))",
        message = "runMode.debug.enabled is fixed at creation: delete and recreate the job to change it")
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class PyTorchTrainingJobSpec extends Unreadable.Part {

    @Required
    @Size(min = 1, max = 16)
    @ValidationRule(value = "self.all(a, self.filter(b, b.type == a.type).size() == 1)",
            message = "replicaSpecs[].type must be unique")
    @JsonPropertyDescription("Groups of replicas. The first replica (index 0) of the first group is the master; a group of type master must come first and have 1 replica.")
    public List<ReplicaSpec> replicaSpecs = new ArrayList<>();

    @JsonPropertyDescription("How failures, time limits and finished pods are handled.")
    public RunPolicy runPolicy;

    @JsonPropertyDescription("Launch the training container with torchrun instead of its own command.")
    public TorchrunConfig torchrunConfig;

    @JsonPropertyDescription("Elastic training between minReplicas and maxReplicas (torchrun only, one replica group).")
    public ElasticConfig elastic;

    @JsonPropertyDescription("Which scheduler places the pods. Without it the cluster's default scheduler is used.")
    public SchedulerPolicy scheduler;

    @JsonPropertyDescription("Debug and pause modes.")
    public RunMode runMode;

    // Open, as T9k documents it: {image: ..., trainingLogFilesets: [...]} and whatever else it grows.
    @PreserveUnknownFields
    @SchemaFrom(type = OpenObject.class)
    @JsonPropertyDescription("Accepted and preserved for T9k compatibility; TensorBoard is not managed by this operator.")
    public Map<String, Object> tensorboardSpec;

    /** Reads a spec, or an empty one that names the field it could not read. */
    @RegisterForReflection
    public static class Reader extends Unreadable<PyTorchTrainingJobSpec> {
        public Reader() {
            super(PyTorchTrainingJobSpec.class, "spec", PyTorchTrainingJobSpec::new);
        }
    }
}
