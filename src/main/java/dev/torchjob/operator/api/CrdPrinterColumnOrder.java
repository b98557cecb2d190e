package dev.torchjob.operator.api;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import io.fabric8.crdv2.generator.CRDPostProcessor;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceColumnDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;

/**
 * Runs inside the CRD generator at build time: the generator sorts printer columns by name,
 * but kubectl shows them in the order of the CRD, so put them back in the order users read them.
 */
public class CrdPrinterColumnOrder implements CRDPostProcessor {
    static final List<String> ORDER = List.of("PHASE", "RUNNING", "SUCCEEDED", "FAILED", "RESTARTS", "AGE",
            "STARTED", "COMPLETED", "QUEUE");

    @Override
    public HasMetadata process(HasMetadata crd, String crdSpecVersion) {
        if (crd instanceof CustomResourceDefinition definition) {
            definition.getSpec().getVersions().forEach(version -> {
                List<CustomResourceColumnDefinition> columns = new ArrayList<>(version.getAdditionalPrinterColumns());
                columns.sort(Comparator.comparingInt(column -> rank(column.getName())));
                version.setAdditionalPrinterColumns(columns);
            });
        }
        return crd;
    }

    private static int rank(String name) {
        int index = ORDER.indexOf(name);
        return index < 0 ? ORDER.size() : index;
    }
}
