package dev.torchjob.operator.podtemplate;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;

/**
 * What every job API checks in a replica's pod template, whose schema is open so the API server
 * checks nothing: its shape, a container with a name and an image, ports in range. The message
 * names the field.
 */
public final class PodTemplateCheck {
    private PodTemplateCheck() {
    }

    /**
     * How much of a spec a validation reads. The operator reads it all. The command line leaves the
     * templates to the operator's verdict (its InvalidSpec): reading one into Kubernetes' pod model
     * costs a short command a tenth of its time.
     */
    public enum Scope {
        WHOLE_SPEC,
        SPEC_BUT_TEMPLATES
    }

    /**
     * @param field the template's owner, e.g. {@code spec.replicaSpecs[0]}
     * @param requiredContainer a container name the API requires (Kubeflow: pytorch), if any
     */
    public static Optional<String> problemWith(Map<String, Object> raw, String field, Optional<String> requiredContainer) {
        PodTemplateSpec template;
        try {
            template = PodTemplateParser.parse(raw);
        } catch (IllegalArgumentException e) {
            return Optional.of(field + ".template is not a valid pod template: " + e.getMessage());
        }
        if (template == null || template.getSpec() == null) {
            return Optional.of(field + ".template.spec is missing; give the pod template at least one container");
        }
        List<Container> containers = template.getSpec().getContainers();
        if (containers == null || containers.isEmpty()) {
            return Optional.of(field + ".template.spec.containers must list at least one container");
        }
        for (int c = 0; c < containers.size(); c++) {
            Container container = containers.get(c);
            String containerField = field + ".template.spec.containers[" + c + "]";
            if (container == null || container.getName() == null || container.getName().isBlank()) {
                return Optional.of(containerField + ".name is required" + requiredContainer.map(n -> " (name the training container " + n + ")")
                        .orElse(" (name the training container python or pytorch)"));
            }
            if (container.getImage() == null || container.getImage().isBlank()) {
                return Optional.of(containerField + ".image is required");
            }
            // The master's pytorchjob-port becomes MASTER_PORT and a Service's port: refused there, it would stop the job late.
            List<ContainerPort> ports = container.getPorts() == null ? List.of() : container.getPorts();
            for (int p = 0; p < ports.size(); p++) {
                Integer port = ports.get(p) == null ? null : ports.get(p).getContainerPort();
                if (port == null || port < 1 || port > 65535) {
                    return Optional.of(containerField + ".ports[" + p + "].containerPort must be between 1 and 65535 (found " + port + ")");
                }
            }
        }
        if (requiredContainer.isPresent() && containers.stream().noneMatch(c -> requiredContainer.get().equals(c.getName()))) {
            return Optional.of(field + ".template.spec.containers has no container named " + requiredContainer.get()
                    + ": name the training container " + requiredContainer.get());
        }
        return Optional.empty();
    }
}
