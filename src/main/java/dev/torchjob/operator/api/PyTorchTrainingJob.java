package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;

import io.fabric8.crd.generator.annotation.AdditionalPrinterColumn;
import io.fabric8.crd.generator.annotation.PrinterColumnFormat;
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
 * A distributed PyTorch training job: groups of replicas, one pod each, that train together.
 * Compatible with T9k's PyTorchTrainingJob (batch.tensorstack.dev/v1beta1).
 */
@Group(PyTorchTrainingJob.GROUP)
@Version(PyTorchTrainingJob.VERSION)
@Kind(PyTorchTrainingJob.KIND)
@Plural("pytorchtrainingjobs")
@Singular("pytorchtrainingjob")
@ShortNames("pj")
@Categories({"t9k", "trainingjobs"})
@AdditionalPrinterColumn(name = "PHASE", jsonPath = ".status.phase")
@AdditionalPrinterColumn(name = "RUNNING", jsonPath = ".status.aggregate.running", type = AdditionalPrinterColumn.Type.INTEGER)
@AdditionalPrinterColumn(name = "SUCCEEDED", jsonPath = ".status.aggregate.succeeded", type = AdditionalPrinterColumn.Type.INTEGER)
@AdditionalPrinterColumn(name = "FAILED", jsonPath = ".status.aggregate.failed", type = AdditionalPrinterColumn.Type.INTEGER)
@AdditionalPrinterColumn(name = "RESTARTS", jsonPath = ".status.backoffCount", type = AdditionalPrinterColumn.Type.INTEGER)
@AdditionalPrinterColumn(name = "AGE", jsonPath = ".metadata.creationTimestamp", type = AdditionalPrinterColumn.Type.DATE)
@AdditionalPrinterColumn(name = "STARTED", jsonPath = ".status.startTime", type = AdditionalPrinterColumn.Type.DATE, priority = 1)
@AdditionalPrinterColumn(name = "COMPLETED", jsonPath = ".status.completionTime", type = AdditionalPrinterColumn.Type.DATE, priority = 1)
@AdditionalPrinterColumn(name = "QUEUE", jsonPath = ".spec.scheduler.t9kScheduler.queue", priority = 1)
// Kueue's LocalQueue, from the label Kueue's users set (QUEUE is the T9k scheduler's, as in T9k).
@AdditionalPrinterColumn(name = "LOCALQUEUE", jsonPath = ".metadata.labels.kueue\\.x-k8s\\.io/queue-name", priority = 1)
// The job name names the Service and prefixes every pod hostname (spec §2).
@ValidationRule(value = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        message = "metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter), because it names the job's Service")
@ValidationRule(value = "!has(self.spec) || self.spec.replicaSpecs.all(r, size(self.metadata.name) + size(r.type) + "
        + "size(string((has(self.spec.elastic) && ((has(self.spec.elastic.enabled) && self.spec.elastic.enabled) || (has(self.spec.elastic.enable) && self.spec.elastic.enable)) && has(self.spec.elastic.maxReplicas) ? self.spec.elastic.maxReplicas : r.replicas) - 1)) + 2 <= 63)",
        message = "pod names <job>-<type>-<index> must be at most 63 characters: shorten metadata.name or replicaSpecs[].type")
@RegisterForReflection
public class PyTorchTrainingJob extends CustomResource<PyTorchTrainingJobSpec, PyTorchTrainingJobStatus> implements Namespaced {
    public static final String GROUP = "batch.tensorstack.dev";
    public static final String VERSION = "v1beta1";
    public static final String KIND = "PyTorchTrainingJob";
    public static final String CRD_NAME = "pytorchtrainingjobs." + GROUP;

    // Overridden only to describe the two fields for kubectl explain.
    @Override
    @JsonPropertyDescription("What to train: replica groups and their pod templates, restart and clean-up policies, run mode, elastic scaling, scheduler.")
    public PyTorchTrainingJobSpec getSpec() {
        return super.getSpec();
    }

    @Override
    @JsonPropertyDescription("What the operator observed and decided: phase, conditions, replicas by type, restarts counted against the budget. Written only by the operator.")
    public PyTorchTrainingJobStatus getStatus() {
        return super.getStatus();
    }

    // Read leniently: a value the types cannot hold fails this job alone, not the informer (Unreadable).
    @Override
    @JsonDeserialize(using = PyTorchTrainingJobSpec.Reader.class)
    public void setSpec(PyTorchTrainingJobSpec spec) {
        super.setSpec(spec);
    }

    @Override
    @JsonDeserialize(using = PyTorchTrainingJobStatus.Reader.class)
    public void setStatus(PyTorchTrainingJobStatus status) {
        super.setStatus(status);
    }

    @Override
    protected PyTorchTrainingJobStatus initStatus() {
        return new PyTorchTrainingJobStatus();
    }
}
