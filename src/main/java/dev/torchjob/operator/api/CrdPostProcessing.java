package dev.torchjob.operator.api;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import io.fabric8.crdv2.generator.CRDPostProcessor;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceColumnDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceSubresourceScaleBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceSubresourcesBuilder;

/**
 * Runs inside the CRD generator at build time, for what its annotations cannot say: printer columns
 * in the order users read them (the generator sorts them by name), and PyTorchJob's scale
 * subresource, whose paths go through the Worker key of a map.
 */
public class CrdPostProcessing implements CRDPostProcessor {
    static final List<String> ORDER = List.of("PHASE", "STATE", "RUNNING", "SUCCEEDED", "FAILED", "RESTARTS", "AGE",
            "STARTED", "COMPLETED", "QUEUE");

    @Override
    public HasMetadata process(HasMetadata crd, String crdSpecVersion) {
        if (crd instanceof CustomResourceDefinition definition) {
            definition.getSpec().getVersions().forEach(version -> {
                List<CustomResourceColumnDefinition> columns = new ArrayList<>(version.getAdditionalPrinterColumns());
                columns.sort(Comparator.comparingInt(column -> rank(column.getName())));
                version.setAdditionalPrinterColumns(columns);
                if (PyTorchJob.CRD_NAME.equals(definition.getMetadata().getName())) {
                    // As Kubeflow's: kubectl scale and an HPA change the number of workers.
                    version.setSubresources(new CustomResourceSubresourcesBuilder(version.getSubresources())
                            .withScale(new CustomResourceSubresourceScaleBuilder()
                                    .withSpecReplicasPath(".spec.pytorchReplicaSpecs.Worker.replicas")
                                    .withStatusReplicasPath(".status.replicaStatuses.Worker.active")
                                    .withLabelSelectorPath(".status.replicaStatuses.Worker.selector")
                                    .build())
                            .build());
                }
            });
        }
        return crd;
    }

    private static int rank(String name) {
        int index = ORDER.indexOf(name.toUpperCase(Locale.ROOT));
        return index < 0 ? ORDER.size() : index;
    }
}
