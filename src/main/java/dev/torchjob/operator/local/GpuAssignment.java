package dev.torchjob.operator.local;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import dev.torchjob.operator.engine.TrainingContainer;
import dev.torchjob.operator.local.MachineGpus.Gpu;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;

/**
 * Which replica holds which of this machine's GPUs, as NVIDIA's device plugin gives them to pods: each pod
 * exactly the {@code nvidia.com/gpu} its training container's limits ask for, GPUs no other pod holds, until
 * the pod ends (a restart in place keeps them); a replica's next pod gets the GPUs its last one had where they
 * are free. Shared ({@code --share-gpus}), pods may hold the same GPUs: each gets the least shared ones.
 */
final class GpuAssignment {
    static final String NVIDIA_GPU = "nvidia.com/gpu";
    static final String SHARE_OPTION = "--share-gpus";
    /** What NVIDIA's container toolkit reads as "no GPU". */
    static final String NO_GPU = "void";

    private final MachineGpus machine;
    private final boolean shared;
    private final Map<String, List<Gpu>> heldByPodUid = new LinkedHashMap<>();
    private final Map<String, List<Gpu>> lastByReplica = new HashMap<>();

    GpuAssignment(MachineGpus machine, boolean shared) {
        this.machine = machine;
        this.shared = shared;
    }

    MachineGpus machine() {
        return machine;
    }

    /** The GPUs a pod's training container asks for: its limits, as Kubernetes takes extended resources (0 when unreadable). */
    static int asked(Pod pod) {
        Quantity limit = quantities(TrainingContainer.of(pod), true).get(NVIDIA_GPU);
        BigDecimal amount = limit == null ? BigDecimal.ZERO : amountOf(limit);
        return amount == null || amount.signum() < 0 || amount.stripTrailingZeros().scale() > 0 ? 0 : amount.intValue();
    }

    /**
     * Why these pods cannot have their GPUs on this machine, in one line, or empty: a count Kubernetes would
     * refuse, more than the machine has in all (unless shared), or more than it has for one pod.
     */
    static Optional<String> refusal(MachineGpus machine, List<Pod> pods, boolean shared) {
        for (Pod pod : pods) {
            Optional<String> invalid = invalidCount(pod);
            if (invalid.isPresent()) {
                return invalid;
            }
        }
        Map<String, Integer> asks = new LinkedHashMap<>();
        pods.stream().filter(pod -> asked(pod) > 0).forEach(pod -> asks.put(pod.getMetadata().getName(), asked(pod)));
        int total = asks.values().stream().mapToInt(Integer::intValue).sum();
        int has = machine.gpus().size();
        if (total == 0 || total <= has) {
            return Optional.empty();
        }
        String each = asks.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", "));
        if (has == 0) {
            return Optional.of("the job asks for " + gpus(total) + " (" + NVIDIA_GPU + ": " + each + ") and this machine has "
                    + machine.said());
        }
        Optional<Map.Entry<String, Integer>> tooBig = asks.entrySet().stream().filter(e -> e.getValue() > has).findFirst();
        if (tooBig.isPresent()) {
            return Optional.of(tooBig.get().getKey() + " asks for " + gpus(tooBig.get().getValue()) + " (" + NVIDIA_GPU
                    + ") and this machine has " + machine.said() + "; no replica can have more GPUs than there are, shared or not");
        }
        if (shared) {
            return Optional.empty();
        }
        return Optional.of("the job asks for " + gpus(total) + " (" + NVIDIA_GPU + ": " + each + ") and this machine has "
                + machine.said() + "; " + SHARE_OPTION + " lets replicas share them for a small test");
    }

    /** A GPU count Kubernetes would refuse in the pod: not whole, in requests but not limits, or requests unequal to limits. */
    private static Optional<String> invalidCount(Pod pod) {
        Container container = TrainingContainer.of(pod);
        Quantity limit = quantities(container, true).get(NVIDIA_GPU);
        Quantity request = quantities(container, false).get(NVIDIA_GPU);
        String where = "pod " + pod.getMetadata().getName() + " (container " + container.getName() + "): ";
        if (limit == null && request != null) {
            return Optional.of(where + "resources.requests[" + NVIDIA_GPU + "] without limits: Kubernetes takes extended resources"
                    + " from limits (set resources.limits[" + NVIDIA_GPU + "])");
        }
        if (limit == null) {
            return Optional.empty();
        }
        BigDecimal amount = amountOf(limit);
        if (amount == null || amount.signum() < 0 || amount.stripTrailingZeros().scale() > 0) {
            return Optional.of(where + "resources.limits[" + NVIDIA_GPU + "] " + limit + " is not a whole number of GPUs");
        }
        BigDecimal requested = request == null ? null : amountOf(request);
        if (request != null && (requested == null || requested.compareTo(amount) != 0)) {
            return Optional.of(where + "resources.requests[" + NVIDIA_GPU + "] " + request + " differs from its limits " + limit
                    + ": Kubernetes requires them equal for extended resources");
        }
        return Optional.empty();
    }

    /**
     * Extended resources other than NVIDIA GPUs that pods ask for, and devices they claim through Dynamic Resource
     * Allocation (the pod's {@code resourceClaims}: a ResourceClaimTemplate the job file does not hold says what they
     * are): the local mode does not give them, one line each.
     */
    static List<String> notGiven(List<Pod> pods) {
        List<String> lines = new ArrayList<>();
        String seesTheMachine = "its process sees what this machine has (only " + NVIDIA_GPU + " in limits is assigned, as NVIDIA's"
                + " device plugin would)";
        for (Pod pod : pods) {
            Container container = TrainingContainer.of(pod);
            Set<String> names = new java.util.TreeSet<>(quantities(container, true).keySet());
            names.addAll(quantities(container, false).keySet());
            names.stream().filter(name -> name.contains("/") && !name.equals(NVIDIA_GPU) && !name.startsWith("kubernetes.io/"))
                    .forEach(name -> lines.add(pod.getMetadata().getName() + " asks for " + name + ", which the local mode does not"
                            + " give: " + seesTheMachine));
            if (pod.getSpec().getResourceClaims() != null && !pod.getSpec().getResourceClaims().isEmpty()) {
                lines.add(pod.getMetadata().getName() + " claims devices through resourceClaims ("
                        + pod.getSpec().getResourceClaims().stream().map(io.fabric8.kubernetes.api.model.PodResourceClaim::getName).collect(Collectors.joining(", "))
                        + "), which the local mode does not allocate: " + seesTheMachine);
            }
        }
        return lines;
    }

    /**
     * GPUs for a pod's process, or empty while too few are free (a pod of the last group still stopping
     * holds them). The pod keeps them until {@link #release}; asked again (a restart in place), it gets the same.
     */
    synchronized Optional<List<Gpu>> take(String replica, String podUid, int count) {
        List<Gpu> held = heldByPodUid.get(podUid);
        if (held != null || count == 0) {
            return Optional.of(held == null ? List.of() : held);
        }
        List<Gpu> before = lastByReplica.getOrDefault(replica, List.of());
        Map<Gpu, Long> holders = heldByPodUid.values().stream().flatMap(List::stream)
                .collect(Collectors.groupingBy(gpu -> gpu, Collectors.counting()));
        List<Gpu> candidates = machine.gpus().stream().filter(gpu -> shared || !holders.containsKey(gpu))
                .sorted(Comparator.comparing((Gpu gpu) -> holders.getOrDefault(gpu, 0L))
                        .thenComparing(gpu -> before.contains(gpu) ? 0 : 1).thenComparing(Gpu::index))
                .toList();
        if (candidates.size() < count) {
            return Optional.empty();
        }
        List<Gpu> chosen = candidates.subList(0, count).stream().sorted(Comparator.comparing(Gpu::index)).toList();
        heldByPodUid.put(podUid, chosen);
        lastByReplica.put(replica, chosen);
        return Optional.of(chosen);
    }

    /** The pod ended or was deleted: its GPUs are free. */
    synchronized void release(String podUid) {
        heldByPodUid.remove(podUid);
    }

    /**
     * What makes a process see exactly these GPUs, as a container with them would ({@code cuda:0} is the first),
     * and none when there are none; nothing on a machine without NVIDIA GPUs (nothing to hide). A
     * {@code CUDA_VISIBLE_DEVICES} the container sets itself counts within its GPUs, as in its pod.
     */
    Map<String, String> environment(List<Gpu> gpus, String containersOwn) {
        if (machine.gpus().isEmpty()) {
            return Map.of();
        }
        String ids = gpus.stream().map(Gpu::id).collect(Collectors.joining(","));
        Map<String, String> env = new LinkedHashMap<>();
        env.put("CUDA_VISIBLE_DEVICES", containersOwn == null ? ids : withinGiven(containersOwn, gpus));
        env.put("NVIDIA_VISIBLE_DEVICES", gpus.isEmpty() ? NO_GPU : ids);
        return env;
    }

    /** The container's own CUDA_VISIBLE_DEVICES, its indices turned into the GPUs they are among those given. */
    private static String withinGiven(String own, List<Gpu> gpus) {
        List<String> ids = new ArrayList<>();
        for (String entry : own.split(",", -1)) {
            String trimmed = entry.trim();
            if (!trimmed.matches("\\d+") || Integer.parseInt(trimmed) >= gpus.size()) {
                break; // CUDA stops at the first entry that names no GPU it has
            }
            ids.add(gpus.get(Integer.parseInt(trimmed)).id());
        }
        return String.join(",", ids);
    }

    private static Map<String, Quantity> quantities(Container container, boolean limits) {
        if (container.getResources() == null) {
            return Map.of();
        }
        Map<String, Quantity> quantities = limits ? container.getResources().getLimits() : container.getResources().getRequests();
        return quantities == null ? Map.of() : quantities;
    }

    private static BigDecimal amountOf(Quantity quantity) {
        try {
            return quantity.getNumericalAmount();
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static String gpus(int count) {
        return count + (count == 1 ? " GPU" : " GPUs");
    }
}
