package dev.torchjob.operator.podtemplate;

import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;

/**
 * What a pod made from a template asks of a node, as kube-scheduler and the kubelet count it (Kubernetes 1.37):
 * its containers' requests, a resource a container only limits at its limit (as the API server defaults the
 * request); sidecars (init containers that keep running) added, an ordinary init container counted beside the
 * sidecars started before it and only where it needs more than the rest; pod-level requests (cpu, memory,
 * hugepages; limits where a resource has no request anywhere) in place of the containers' sum; the overhead the
 * template carries added. A gang scheduler that is told less than this admits a gang the cluster cannot hold.
 */
public final class PodRequests {
    private PodRequests() {
    }

    /** Each resource's amount, in resource-name order, written as Kubernetes writes it. */
    public static Map<String, Quantity> of(PodSpec pod) {
        Amounts requests = new Amounts();
        for (Container container : listed(pod.getContainers())) {
            requests.add(requested(container.getResources()));
        }
        Amounts sidecars = new Amounts();
        Amounts initNeeds = new Amounts();
        for (Container init : listed(pod.getInitContainers())) {
            Amounts own = requested(init.getResources());
            Amounts whileItStarts = new Amounts();
            if ("Always".equals(init.getRestartPolicy())) {
                requests.add(own);
                sidecars.add(own);
            } else {
                whileItStarts.add(own);
            }
            whileItStarts.add(sidecars);
            initNeeds.max(whileItStarts);
        }
        requests.max(initNeeds);
        podLevel(pod.getResources(), requests);
        if (pod.getOverhead() != null) {
            requests.add(Amounts.of(pod.getOverhead()));
        }
        return requests.quantities();
    }

    private static List<Container> listed(List<Container> containers) {
        return containers == null ? List.of() : containers;
    }

    /** A container's requests once defaulted: its limits where it names no request. */
    private static Amounts requested(ResourceRequirements resources) {
        Amounts requested = new Amounts();
        if (resources != null) {
            Map<String, Quantity> defaulted = new LinkedHashMap<>();
            if (resources.getLimits() != null) {
                defaulted.putAll(resources.getLimits());
            }
            if (resources.getRequests() != null) {
                defaulted.putAll(resources.getRequests());
            }
            requested.add(Amounts.of(defaulted));
        }
        return requested;
    }

    /** Pod-level resources replace the containers' sum for the resources they may name; other names are not the pod's to set. */
    private static void podLevel(ResourceRequirements pod, Amounts requests) {
        if (pod == null) {
            return;
        }
        if (pod.getLimits() != null) {
            pod.getLimits().forEach((name, limit) -> {
                if (podLevelResource(name) && !requests.has(name)) {
                    requests.set(name, limit);
                }
            });
        }
        if (pod.getRequests() != null) {
            pod.getRequests().forEach((name, request) -> {
                if (podLevelResource(name)) {
                    requests.set(name, request);
                }
            });
        }
    }

    private static boolean podLevelResource(String name) {
        return name.equals("cpu") || name.equals("memory") || name.startsWith("hugepages-");
    }

    /** The amounts of several pods together (a gang's), written as {@link #of} writes them. */
    public static Map<String, Quantity> total(Iterable<Map<String, Quantity>> pods) {
        Amounts total = new Amounts();
        pods.forEach(pod -> total.add(Amounts.of(pod)));
        return total.quantities();
    }

    private static final String[] BINARY = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    private static final String[] DECIMAL = {"", "k", "M", "G", "T", "P", "E"};

    /**
     * As Kubernetes writes a quantity: a whole number in the largest unit that keeps it whole, binary units where
     * the first quantity was binary (memory: {@code 8448Mi}, not {@code 8.25Gi}), decimal otherwise (cpu: {@code 1250m}).
     */
    private static Quantity written(BigDecimal amount, String firstFormat) {
        boolean binary = firstFormat != null && firstFormat.endsWith("i");
        String[] units = binary ? BINARY : DECIMAL;
        BigDecimal step = BigDecimal.valueOf(binary ? 1024 : 1000);
        if (amount.signum() == 0) {
            return new Quantity("0");
        }
        if (!binary && amount.stripTrailingZeros().scale() > 0) {
            BigDecimal millis = amount.movePointRight(3).stripTrailingZeros();
            return millis.scale() <= 0 ? new Quantity(millis.toPlainString() + "m") : Quantity.fromNumericalAmount(amount, firstFormat);
        }
        // Exact powers (fabric8 rounds 1Ei), from the largest unit down to the one that keeps the number whole.
        for (int power = units.length - 1; power >= 0; power--) {
            BigDecimal[] division = amount.divideAndRemainder(step.pow(power));
            if (division[1].signum() == 0) {
                return new Quantity(division[0].toBigInteger() + units[power]);
            }
        }
        return Quantity.fromNumericalAmount(amount, firstFormat);
    }

    /** Amounts by resource name, each remembering the format it was first written in. */
    private static final class Amounts {
        private final Map<String, BigDecimal> amounts = new TreeMap<>();
        private final Map<String, String> formats = new LinkedHashMap<>();

        static Amounts of(Map<String, Quantity> quantities) {
            Amounts amounts = new Amounts();
            quantities.forEach(amounts::set);
            return amounts;
        }

        boolean has(String name) {
            return amounts.containsKey(name);
        }

        void set(String name, Quantity quantity) {
            amounts.put(name, quantity.getNumericalAmount());
            formats.putIfAbsent(name, quantity.getFormat());
        }

        void add(Amounts other) {
            other.amounts.forEach((name, amount) -> amounts.merge(name, amount, BigDecimal::add));
            other.formats.forEach(formats::putIfAbsent);
        }

        void max(Amounts other) {
            other.amounts.forEach((name, amount) -> amounts.merge(name, amount, BigDecimal::max));
            other.formats.forEach(formats::putIfAbsent);
        }

        Map<String, Quantity> quantities() {
            Map<String, Quantity> quantities = new LinkedHashMap<>();
            amounts.forEach((name, amount) -> quantities.put(name, written(amount, formats.get(name))));
            return quantities;
        }
    }
}
