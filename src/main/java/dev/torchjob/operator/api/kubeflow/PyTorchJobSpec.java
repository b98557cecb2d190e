package dev.torchjob.operator.api.kubeflow;

import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import dev.torchjob.operator.api.Unreadable;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;
import io.fabric8.generator.annotation.ValidationRule;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** The spec of a kubeflow.org/v1 PyTorchJob, with Kubeflow's defaults and the webhook's rules as CEL. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@ValidationRule(value = "!has(self.elasticPolicy) || self.pytorchReplicaSpecs.exists(k, k.lowerAscii() == 'worker')",
        message = "elasticPolicy needs a Worker in pytorchReplicaSpecs")
@ValidationRule(value = "!has(self.nprocPerNode) || !has(self.elasticPolicy) || !has(self.elasticPolicy.nProcPerNode)",
        message = "nprocPerNode and the deprecated elasticPolicy.nProcPerNode cannot both be set: keep nprocPerNode")
@RegisterForReflection
public class PyTorchJobSpec extends Unreadable.Part {

    @Required
    @Size(min = 1, max = 2)
    @ValidationRule(value = "self.all(k, k.lowerAscii() == 'master' || k.lowerAscii() == 'worker')",
            message = "pytorchReplicaSpecs takes only Master and Worker")
    @ValidationRule(value = "self.all(k, k.lowerAscii() != 'master' || !has(self[k].replicas) || self[k].replicas == 1)",
            message = "pytorchReplicaSpecs.Master.replicas must be 1")
    @JsonPropertyDescription("The replica types, Master (one pod, rank 0) and Worker (ranks 1..n), keyed by type in any casing.")
    public Map<String, KubeflowReplicaSpec> pytorchReplicaSpecs = new LinkedHashMap<>();

    @JsonPropertyDescription("Restart budget, deadline, clean-up, time to live, suspension.")
    public KubeflowRunPolicy runPolicy;

    @JsonPropertyDescription("Elastic training: torchrun rendezvous between minReplicas and maxReplicas workers.")
    public ElasticPolicy elasticPolicy;

    @Pattern("^([1-9][0-9]*|auto|cpu|gpu)$")
    @JsonPropertyDescription("Processes per pod for torchrun (PET_NPROC_PER_NODE): a number, auto, cpu or gpu. Default auto.")
    public String nprocPerNode;

    /** Reads a spec, or an empty one that names the field it could not read. */
    @RegisterForReflection
    public static class Reader extends Unreadable<PyTorchJobSpec> {
        public Reader() {
            super(PyTorchJobSpec.class, "spec", PyTorchJobSpec::new);
        }
    }
}
