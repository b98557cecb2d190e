package dev.torchjob.operator.api.kubeflow;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;

import io.fabric8.crd.generator.annotation.AdditionalPrinterColumn;
import io.fabric8.generator.annotation.ValidationRule;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Categories;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.Kind;
import io.fabric8.kubernetes.model.annotation.Plural;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Singular;
import io.fabric8.kubernetes.model.annotation.Version;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * Kubeflow's PyTorchJob (kubeflow.org/v1), run by this operator's engine: the same manifests, pods,
 * environment, labels and status as Kubeflow's training-operator v1.9.
 */
@Group(PyTorchJob.GROUP)
@Version(PyTorchJob.VERSION)
@Kind(PyTorchJob.KIND)
@Plural("pytorchjobs")
@Singular("pytorchjob")
// Kubeflow's CRD has neither: ours must not take names a Kubeflow install might add later.
@ShortNames("ptj")
@Categories({"torchjob", "trainingjobs"})
@AdditionalPrinterColumn(name = "State", jsonPath = ".status.conditions[-1:].type")
@AdditionalPrinterColumn(name = "Age", jsonPath = ".metadata.creationTimestamp", type = AdditionalPrinterColumn.Type.DATE)
@AdditionalPrinterColumn(name = "Restarts", jsonPath = ".status.backoffCount", type = AdditionalPrinterColumn.Type.INTEGER, priority = 1)
@AdditionalPrinterColumn(name = "Started", jsonPath = ".status.startTime", type = AdditionalPrinterColumn.Type.DATE, priority = 1)
@AdditionalPrinterColumn(name = "Completed", jsonPath = ".status.completionTime", type = AdditionalPrinterColumn.Type.DATE, priority = 1)
// Kueue's LocalQueue, from the label Kueue's users set.
@AdditionalPrinterColumn(name = "Queue", jsonPath = ".metadata.labels.kueue\\.x-k8s\\.io/queue-name", priority = 1)
@ValidationRule(value = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        message = "metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter): it names the job's Services")
@RegisterForReflection
public class PyTorchJob extends CustomResource<PyTorchJobSpec, PyTorchJobStatus> implements Namespaced {
    public static final String GROUP = "kubeflow.org";
    public static final String VERSION = "v1";
    public static final String KIND = "PyTorchJob";
    public static final String CRD_NAME = "pytorchjobs." + GROUP;

    @Override
    @JsonPropertyDescription("Replica types with their pod templates, run policy, elastic policy.")
    public PyTorchJobSpec getSpec() {
        return super.getSpec();
    }

    @Override
    @JsonPropertyDescription("Conditions, pods by replica type, start and completion time, as Kubeflow writes them; and the restarts counted.")
    public PyTorchJobStatus getStatus() {
        return super.getStatus();
    }

    // Read leniently: a value the types cannot hold fails this job alone, not the informer (Unreadable).
    @Override
    @JsonDeserialize(using = PyTorchJobSpec.Reader.class)
    public void setSpec(PyTorchJobSpec spec) {
        super.setSpec(spec);
    }

    @Override
    @JsonDeserialize(using = PyTorchJobStatus.Reader.class)
    public void setStatus(PyTorchJobStatus status) {
        super.setStatus(status);
    }

    @Override
    protected PyTorchJobStatus initStatus() {
        return new PyTorchJobStatus();
    }
}
