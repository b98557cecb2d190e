package dev.torchjob.operator.local;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVarSource;
import io.fabric8.kubernetes.api.model.ObjectFieldSelector;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceFieldSelector;

/**
 * An env var's {@code valueFrom} as the kubelet resolves it, for a pod on this machine: the pod's own fields
 * ({@code fieldRef}: its name, namespace, UID, a label or annotation, the node's name, the service account, its
 * IP, which is 127.0.0.1 here) and its container's resources ({@code resourceFieldRef}, in the divisor's units,
 * rounded up; a limit not set is what the node can give, as the kubelet says it). A ConfigMap's or Secret's key
 * is not on this machine: that stays unresolved, with the reason.
 */
final class DownwardApi {
    private static final Pattern SUBSCRIPTED = Pattern.compile("^(metadata\\.labels|metadata\\.annotations)\\['(.*)'\\]$");
    private static final String HERE = "127.0.0.1";

    /** The node a replica runs on: its name, and what it gives a container that sets no limit (the kubelet's allocatable). */
    record Node(String name, Map<String, Quantity> allocatable) {
        /** This machine: its host name, CPUs, memory and root file system. */
        static Node thisMachine() {
            String name = read(Path.of("/proc/sys/kernel/hostname")).map(String::strip).filter(n -> !n.isEmpty()).orElse("localhost");
            long memory = read(Path.of("/proc/meminfo")).flatMap(DownwardApi::memTotalBytes).orElse(Runtime.getRuntime().maxMemory());
            return new Node(name, Map.of("cpu", new Quantity(String.valueOf(Runtime.getRuntime().availableProcessors())),
                    "memory", new Quantity(String.valueOf(memory)),
                    "ephemeral-storage", new Quantity(String.valueOf(Path.of("/").toFile().getTotalSpace()))));
        }
    }

    /** The value, or why it has none here. */
    sealed interface Resolved {
        record Value(String value) implements Resolved {
        }

        record Unresolved(String why) implements Resolved {
        }
    }

    private DownwardApi() {
    }

    static Resolved of(EnvVarSource source, Pod pod, Container container, Node node) {
        if (source.getFieldRef() != null) {
            return field(source.getFieldRef(), pod, node);
        }
        if (source.getResourceFieldRef() != null) {
            return resource(source.getResourceFieldRef(), pod, container, node);
        }
        if (source.getConfigMapKeyRef() != null) {
            return new Resolved.Unresolved("its ConfigMap " + source.getConfigMapKeyRef().getName() + " is not on this machine");
        }
        if (source.getSecretKeyRef() != null) {
            return new Resolved.Unresolved("its Secret " + source.getSecretKeyRef().getName() + " is not on this machine");
        }
        return new Resolved.Unresolved("its source is not one the local mode knows");
    }

    private static Resolved field(ObjectFieldSelector selector, Pod pod, Node node) {
        String path = selector.getFieldPath() == null ? "" : selector.getFieldPath();
        Matcher subscripted = SUBSCRIPTED.matcher(path);
        if (subscripted.matches()) {
            Map<String, String> map = subscripted.group(1).equals("metadata.labels") ? pod.getMetadata().getLabels()
                    : pod.getMetadata().getAnnotations();
            return new Resolved.Value(map == null ? "" : map.getOrDefault(subscripted.group(2), ""));
        }
        return switch (path) {
            case "metadata.name" -> new Resolved.Value(pod.getMetadata().getName());
            case "metadata.namespace" -> new Resolved.Value(pod.getMetadata().getNamespace());
            case "metadata.uid" -> new Resolved.Value(pod.getMetadata().getUid());
            case "spec.nodeName" -> new Resolved.Value(node.name());
            // The API server's default, which the embedded one does not apply.
            case "spec.serviceAccountName" -> new Resolved.Value(Optional.ofNullable(pod.getSpec().getServiceAccountName())
                    .filter(name -> !name.isEmpty()).orElse("default"));
            case "status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs" -> new Resolved.Value(HERE);
            default -> new Resolved.Unresolved("fieldPath " + path + " is not one Kubernetes gives a container's env");
        };
    }

    private static Resolved resource(ResourceFieldSelector selector, Pod pod, Container own, Node node) {
        Container container = own;
        if (selector.getContainerName() != null && !selector.getContainerName().isEmpty()) {
            container = pod.getSpec().getContainers().stream().filter(c -> selector.getContainerName().equals(c.getName())).findFirst()
                    .orElse(null);
            if (container == null) {
                return new Resolved.Unresolved("the pod has no container " + selector.getContainerName());
            }
        }
        String field = selector.getResource() == null ? "" : selector.getResource();
        int dot = field.indexOf('.');
        String kind = dot < 0 ? "" : field.substring(0, dot);
        String resource = field.substring(dot + 1);
        if (!(kind.equals("limits") || kind.equals("requests")) || !List.of("cpu", "memory", "ephemeral-storage").contains(resource)) {
            return new Resolved.Unresolved("resource " + field + " is not one the local mode gives (limits or requests of cpu, memory,"
                    + " ephemeral-storage)");
        }
        Map<String, Quantity> limits = container.getResources() == null || container.getResources().getLimits() == null ? Map.of()
                : container.getResources().getLimits();
        Map<String, Quantity> requests = container.getResources() == null || container.getResources().getRequests() == null ? Map.of()
                : container.getResources().getRequests();
        // A request not set is the limit (the API server's defaulting), else none; a limit not set is the node's allocatable.
        Quantity amount = kind.equals("limits") ? limits.getOrDefault(resource, node.allocatable().get(resource))
                : requests.getOrDefault(resource, limits.getOrDefault(resource, new Quantity("0")));
        Quantity divisor = selector.getDivisor() == null || selector.getDivisor().getAmount() == null
                || selector.getDivisor().getAmount().isEmpty() ? new Quantity("1") : selector.getDivisor();
        try {
            return new Resolved.Value(inUnitsOf(amount == null ? new Quantity("0") : amount, divisor, resource.equals("cpu")));
        } catch (ArithmeticException | IllegalArgumentException e) {
            return new Resolved.Unresolved("resource " + field + " of " + amount + " in units of " + divisor + " is not a number");
        }
    }

    /** As the kubelet: CPU in millicores, others in whole units, divided by the divisor and rounded up. */
    static String inUnitsOf(Quantity amount, Quantity divisor, boolean cpu) {
        BigDecimal value = Quantity.getAmountInBytes(amount);
        BigDecimal by = Quantity.getAmountInBytes(divisor);
        if (cpu) {
            value = value.movePointRight(3).setScale(0, RoundingMode.CEILING);
            by = by.movePointRight(3).setScale(0, RoundingMode.CEILING);
        } else {
            value = value.setScale(0, RoundingMode.CEILING);
            by = by.setScale(0, RoundingMode.CEILING);
        }
        if (by.signum() <= 0) {
            throw new ArithmeticException("divisor " + divisor);
        }
        return value.divide(by, 0, RoundingMode.CEILING).toPlainString();
    }

    private static Optional<String> read(Path file) {
        try {
            return Optional.of(Files.readString(file));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** {@code MemTotal:  16318468 kB} in bytes. */
    static Optional<Long> memTotalBytes(String meminfo) {
        Matcher matcher = Pattern.compile("(?m)^MemTotal:\\s+(\\d+) kB").matcher(meminfo);
        return matcher.find() ? Optional.of(Long.parseLong(matcher.group(1)) * 1024) : Optional.empty();
    }
}
