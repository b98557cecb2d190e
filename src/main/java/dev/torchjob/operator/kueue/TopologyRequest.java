package dev.torchjob.operator.kueue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A podSet's topologyRequest for Kueue's topology-aware scheduling, read from a replica template's
 * annotations as Kueue's own integrations read them, and the annotations Kueue's job webhook would
 * refuse, said in the job's terms (these kinds have no such webhook: the job is not queued instead).
 */
public final class TopologyRequest {
    public static final String REQUIRED = "kueue.x-k8s.io/podset-required-topology";
    public static final String PREFERRED = "kueue.x-k8s.io/podset-preferred-topology";
    public static final String UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology";
    /** podSets of one group (a master and its workers) are placed in one topology domain together. */
    public static final String GROUP = "kueue.x-k8s.io/podset-group-name";
    /** Slices of {@link #SLICE_SIZE} pods, each placed within one domain of this level. */
    public static final String SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology";
    public static final String SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size";
    /** Up to three layers of slices, coarsest first, as a JSON array of {topology, size}. */
    public static final String SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints";
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A label key: an optional DNS subdomain prefix and a name of at most 63 characters. */
    private static final Pattern LABEL_NAME = Pattern.compile("[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
    private static final Pattern DNS_SUBDOMAIN = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

    private TopologyRequest() {
    }

    /**
     * The topologyRequest: required, else preferred, else unconstrained; the slice layers; the pods'
     * index label and, for a required or preferred level, the podSet group. None when nothing asks
     * for one. Read from annotations {@link #problems} finds nothing wrong with.
     */
    public static Optional<Map<String, Object>> of(Map<String, String> annotations, String podIndexLabel) {
        Map<String, Object> request = new LinkedHashMap<>();
        if (annotations.containsKey(REQUIRED)) {
            request.put("required", annotations.get(REQUIRED));
        } else if (annotations.containsKey(PREFERRED)) {
            request.put("preferred", annotations.get(PREFERRED));
        } else if (annotations.containsKey(UNCONSTRAINED)) {
            request.put("unconstrained", parseBoolean(annotations.get(UNCONSTRAINED)).orElse(false));
        }
        if (annotations.containsKey(SLICE_CONSTRAINTS)) {
            request.put("podsetSliceRequiredTopologyConstraints", constraints(annotations.get(SLICE_CONSTRAINTS)).orElse(List.of()));
        } else if (annotations.containsKey(SLICE_REQUIRED) && annotations.containsKey(SLICE_SIZE)) {
            request.put("podSetSliceRequiredTopology", annotations.get(SLICE_REQUIRED));
            request.put("podSetSliceSize", positive(annotations.get(SLICE_SIZE)).orElse(0));
        }
        if (request.isEmpty() && podIndexLabel == null) {
            return Optional.empty();
        }
        if (podIndexLabel != null) {
            request.put("podIndexLabel", podIndexLabel);
        }
        if (annotations.containsKey(GROUP) && (request.containsKey("required") || request.containsKey("preferred"))) {
            request.put("podSetGroupName", annotations.get(GROUP));
        }
        return Optional.of(request);
    }

    /** What Kueue's webhook would refuse in one replica group's template annotations; {@code count}: its pods. */
    public static List<String> problems(String podSet, Map<String, String> annotations, int count) {
        List<String> problems = new ArrayList<>();
        String where = "replica " + podSet + ": ";
        long levels = List.of(REQUIRED, PREFERRED, UNCONSTRAINED).stream().filter(annotations::containsKey).count();
        if (levels > 1) {
            problems.add(where + "at most one of the annotations " + REQUIRED + ", " + PREFERRED + " and " + UNCONSTRAINED);
        }
        for (String key : List.of(REQUIRED, PREFERRED, SLICE_REQUIRED)) {
            if (annotations.containsKey(key) && !isLabelName(annotations.get(key))) {
                problems.add(where + key + " is \"" + annotations.get(key) + "\": it must be a node label (a level of the Topology)");
            }
        }
        if (annotations.containsKey(UNCONSTRAINED) && parseBoolean(annotations.get(UNCONSTRAINED)).isEmpty()) {
            problems.add(where + UNCONSTRAINED + " is \"" + annotations.get(UNCONSTRAINED) + "\": it must be true or false");
        }
        String group = annotations.get(GROUP);
        if (group != null) {
            if (group.matches("[0-9]+")) {
                problems.add(where + GROUP + " is \"" + group + "\": it must not be a number");
            }
            if (!annotations.containsKey(REQUIRED) && !annotations.containsKey(PREFERRED)) {
                problems.add(where + GROUP + " needs " + REQUIRED + " or " + PREFERRED);
            }
            if (annotations.containsKey(SLICE_REQUIRED) || annotations.containsKey(SLICE_SIZE) || annotations.containsKey(SLICE_CONSTRAINTS)) {
                problems.add(where + GROUP + " cannot be used with slices");
            }
        }
        String size = annotations.get(SLICE_SIZE);
        if (size != null) {
            Optional<Integer> slice = positive(size);
            if (slice.isEmpty()) {
                problems.add(where + SLICE_SIZE + " is \"" + size + "\": it must be a whole number of pods, at least 1");
            } else if (slice.get() > count) {
                problems.add(where + SLICE_SIZE + " is " + size + ": more than the " + count + " replica(s) of " + podSet);
            }
        }
        if (annotations.containsKey(SLICE_REQUIRED) != annotations.containsKey(SLICE_SIZE)) {
            problems.add(where + SLICE_REQUIRED + " and " + SLICE_SIZE + " go together");
        }
        String layers = annotations.get(SLICE_CONSTRAINTS);
        if (layers != null) {
            if (annotations.containsKey(SLICE_REQUIRED) || annotations.containsKey(SLICE_SIZE)) {
                problems.add(where + SLICE_CONSTRAINTS + " replaces " + SLICE_REQUIRED + " and " + SLICE_SIZE + ": use one or the other");
            }
            Optional<List<Map<String, Object>>> parsed = constraints(layers);
            if (parsed.isEmpty() || parsed.get().isEmpty() || parsed.get().size() > 3) {
                problems.add(where + SLICE_CONSTRAINTS + " is '" + layers + "': it must be a JSON array of 1 to 3 "
                        + "{\"topology\": <node label>, \"size\": <pods>}, coarsest first");
            } else {
                Set<Object> seen = new LinkedHashSet<>();
                for (Map<String, Object> layer : parsed.get()) {
                    Object topology = layer.get("topology");
                    if (!(topology instanceof String t) || !isLabelName(t) || !seen.add(t)) {
                        problems.add(where + SLICE_CONSTRAINTS + ": each layer's topology must be a distinct node label, not " + topology);
                    }
                    if (!(layer.get("size") instanceof Integer s) || s < 1) {
                        problems.add(where + SLICE_CONSTRAINTS + ": each layer's size must be a whole number of pods, at least 1, not "
                                + layer.get("size"));
                    }
                }
                if (parsed.get().get(0).get("size") instanceof Integer first && first > count) {
                    problems.add(where + SLICE_CONSTRAINTS + ": the first layer's size " + first + " is more than the " + count
                            + " replica(s) of " + podSet);
                }
            }
        }
        return problems;
    }

    /**
     * What Kueue's webhook would refuse in the podSet groups: a group is exactly two replica groups,
     * one of them a single pod, asking for the same level the same way (required or preferred).
     */
    public static List<String> groupProblems(List<KueueWorkload.PodSet> podSets) {
        Map<String, List<KueueWorkload.PodSet>> groups = new LinkedHashMap<>();
        for (KueueWorkload.PodSet podSet : podSets) {
            String group = annotationsOf(podSet).get(GROUP);
            if (group != null) {
                groups.computeIfAbsent(group, g -> new ArrayList<>()).add(podSet);
            }
        }
        List<String> problems = new ArrayList<>();
        groups.forEach((group, members) -> {
            List<String> names = members.stream().map(KueueWorkload.PodSet::name).toList();
            if (members.size() != 2) {
                problems.add(GROUP + " " + group + " is on " + names + ": a group is exactly two replica groups");
                return;
            }
            if (members.get(0).count() != 1 && members.get(1).count() != 1) {
                problems.add(GROUP + " " + group + ": one of " + names + " must have a single replica");
            }
            Map<String, String> a = annotationsOf(members.get(0));
            Map<String, String> b = annotationsOf(members.get(1));
            if (!Objects.equals(a.get(REQUIRED), b.get(REQUIRED)) || !Objects.equals(a.get(PREFERRED), b.get(PREFERRED))) {
                problems.add(GROUP + " " + group + ": " + names + " must ask for the same level, both with " + REQUIRED + " or both with "
                        + PREFERRED);
            }
        });
        return problems;
    }

    static Map<String, String> annotationsOf(KueueWorkload.PodSet podSet) {
        var meta = podSet.template().getMetadata();
        return meta == null || meta.getAnnotations() == null ? Map.of() : meta.getAnnotations();
    }

    /** As Go's strconv.ParseBool, which Kueue reads the annotation with. */
    private static Optional<Boolean> parseBoolean(String value) {
        return switch (value) {
            case "1", "t", "T", "TRUE", "true", "True" -> Optional.of(true);
            case "0", "f", "F", "FALSE", "false", "False" -> Optional.of(false);
            default -> Optional.empty();
        };
    }

    private static Optional<Integer> positive(String value) {
        try {
            int n = Integer.parseInt(value);
            return n >= 1 ? Optional.of(n) : Optional.empty();
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    @SuppressWarnings("unchecked")
    private static Optional<List<Map<String, Object>>> constraints(String json) {
        try {
            Object parsed = JSON.readValue(json, Object.class);
            if (parsed instanceof List<?> list && list.stream().allMatch(Map.class::isInstance)) {
                return Optional.of((List<Map<String, Object>>) list);
            }
        } catch (JsonProcessingException e) {
            // not JSON: said by problems()
        }
        return Optional.empty();
    }

    /** A label key as Kubernetes validates it: [prefix/]name, the prefix a DNS subdomain. */
    static boolean isLabelName(String key) {
        int slash = key.lastIndexOf('/');
        String name = slash < 0 ? key : key.substring(slash + 1);
        if (slash >= 0) {
            String prefix = key.substring(0, slash);
            if (prefix.isEmpty() || prefix.length() > 253 || !DNS_SUBDOMAIN.matcher(prefix).matches()) {
                return false;
            }
        }
        return LABEL_NAME.matcher(name).matches();
    }
}
