package dev.torchjob.operator.kueue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * The namespaces whose jobs Kueue manages: its {@code managedJobsNamespaceSelector}, a label selector
 * on namespaces, written as in Kueue's configuration (YAML or JSON). Since Kueue v0.19
 * ({@code ManagedJobsNamespaceSelectorAlwaysRespected}, GA and locked on) a job in a namespace the
 * selector leaves out is not Kueue's at all: not put in the default LocalQueue, not held for a queue
 * name, and not queued even when it names a LocalQueue. Pure.
 *
 * @param matchLabels labels a managed namespace has, each with this value
 * @param matchExpressions requirements a managed namespace meets, all of them
 * @param leftOut namespaces never managed, whatever their labels (the older setting of names)
 */
public record ManagedJobsNamespaces(Map<String, String> matchLabels, List<Requirement> matchExpressions, Set<String> leftOut) {
    /** The label the API server gives every namespace, its name: a selector of it alone needs no namespace read. */
    public static final String NAME_LABEL = "kubernetes.io/metadata.name";
    /** Kueue's default: every namespace but kube-system and Kueue's own. */
    public static final String KUEUE_DEFAULT = "{matchExpressions: [{key: " + NAME_LABEL
            + ", operator: NotIn, values: [kube-system, kueue-system]}]}";
    /** The setting this is read from, as a user writes it. */
    public static final String SETTING = "TORCHJOB_KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR";
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    /** A label selector's operators, as Kubernetes spells them. */
    public enum Operator {
        In, NotIn, Exists, DoesNotExist
    }

    /** One of {@code matchExpressions}. */
    public record Requirement(String key, Operator operator, Set<String> values) {
        boolean matches(Map<String, String> labels) {
            String value = labels.get(key);
            return switch (operator) {
                case In -> value != null && values.contains(value);
                case NotIn -> value == null || !values.contains(value);
                case Exists -> value != null;
                case DoesNotExist -> value == null;
            };
        }

        @Override
        public String toString() {
            return switch (operator) {
                case In, NotIn -> key + " " + operator.name().toLowerCase(java.util.Locale.ROOT) + " (" + String.join(",", values) + ")";
                case Exists -> key;
                case DoesNotExist -> "!" + key;
            };
        }
    }

    /** The setting cannot be read: what is wrong with it, and how it is written. */
    public static final class Invalid extends IllegalArgumentException {
        Invalid(String problem) {
            super(SETTING + " (as Kueue's managedJobsNamespaceSelector) " + problem + "; write it as in Kueue's configuration, e.g. "
                    + "{matchLabels: {kueue-managed: \"true\"}} or " + KUEUE_DEFAULT + " (Kueue's default), {} for every namespace");
        }
    }

    /**
     * @param selector the selector as Kueue's configuration writes it (YAML or JSON)
     * @param leftOut namespaces never managed besides
     * @throws Invalid naming what is wrong, when it is not a label selector Kubernetes would take
     */
    public static ManagedJobsNamespaces parse(String selector, Set<String> leftOut) {
        Object read;
        try {
            read = YAML.readValue(selector, Object.class);
        } catch (JsonProcessingException e) {
            String problem = e.getCause() instanceof org.yaml.snakeyaml.error.MarkedYAMLException marked && marked.getProblem() != null
                    ? marked.getProblem() + " at line " + (marked.getProblemMark().getLine() + 1) + ", column "
                            + (marked.getProblemMark().getColumn() + 1)
                    : e.getOriginalMessage().lines().findFirst().orElse("").strip();
            throw new Invalid("cannot be read as YAML (" + problem + ")");
        }
        if (!(read instanceof Map<?, ?> fields)) {
            throw new Invalid("is not a label selector but " + (read == null ? "empty" : "'" + selector.strip() + "'"));
        }
        for (Object field : fields.keySet()) {
            if (!"matchLabels".equals(field) && !"matchExpressions".equals(field)) {
                throw new Invalid("has the field " + field + ", which a label selector does not have (only matchLabels, matchExpressions)");
            }
        }
        Map<String, String> labels = new LinkedHashMap<>();
        Object matchLabels = fields.get("matchLabels");
        if (matchLabels != null) {
            if (!(matchLabels instanceof Map<?, ?> map)) {
                throw new Invalid("has matchLabels that are not a map of label to value");
            }
            map.forEach((key, value) -> {
                if (!(value instanceof String) || String.valueOf(key).isEmpty()) {
                    throw new Invalid("has matchLabels." + key + " = " + value + ": a label's value is a string (quote true, 1)");
                }
                labels.put(String.valueOf(key), (String) value);
            });
        }
        List<Requirement> expressions = new ArrayList<>();
        Object matchExpressions = fields.get("matchExpressions");
        if (matchExpressions != null) {
            if (!(matchExpressions instanceof List<?> list)) {
                throw new Invalid("has matchExpressions that are not a list");
            }
            for (int i = 0; i < list.size(); i++) {
                expressions.add(requirement("matchExpressions[" + i + "]", list.get(i)));
            }
        }
        return new ManagedJobsNamespaces(Map.copyOf(labels), List.copyOf(expressions), Set.copyOf(leftOut));
    }

    private static Requirement requirement(String at, Object item) {
        if (!(item instanceof Map<?, ?> fields)) {
            throw new Invalid("has " + at + " that is not {key, operator, values}");
        }
        for (Object field : fields.keySet()) {
            if (!Set.of("key", "operator", "values").contains(field)) {
                throw new Invalid("has the field " + at + "." + field + " (only key, operator, values)");
            }
        }
        if (!(fields.get("key") instanceof String key) || key.isEmpty()) {
            throw new Invalid("has " + at + " without a key");
        }
        Operator operator;
        try {
            operator = Operator.valueOf(String.valueOf(fields.get("operator")));
        } catch (IllegalArgumentException e) {
            throw new Invalid("has " + at + ".operator " + fields.get("operator") + ", not one of In, NotIn, Exists, DoesNotExist");
        }
        Object values = fields.get("values");
        List<?> given = values == null ? List.of() : values instanceof List<?> l ? l : null;
        if (given == null || given.stream().anyMatch(v -> !(v instanceof String))) {
            throw new Invalid("has " + at + ".values that are not a list of strings (quote true, 1)");
        }
        boolean needsValues = operator == Operator.In || operator == Operator.NotIn;
        if (needsValues == given.isEmpty()) {
            throw new Invalid("has " + at + " with operator " + operator + (needsValues ? " and no values: it needs at least one"
                    : " and values: it takes none"));
        }
        return new Requirement(key, operator, given.stream().map(String::valueOf).collect(Collectors.toCollection(TreeSet::new)));
    }

    /** Whether a namespace's labels must be read to decide: the selector names a label other than the namespace's name. */
    public boolean needsLabels() {
        return !matchLabels.keySet().stream().allMatch(NAME_LABEL::equals)
                || !matchExpressions.stream().allMatch(r -> NAME_LABEL.equals(r.key()));
    }

    /**
     * Whether Kueue manages the jobs of this namespace.
     *
     * @param labels the namespace's labels (those read; its name label is added here, as the API server sets it)
     */
    public boolean manages(String namespace, Map<String, String> labels) {
        if (leftOut.contains(namespace)) {
            return false;
        }
        Map<String, String> all = new HashMap<>(labels);
        all.put(NAME_LABEL, namespace);
        return matchLabels.entrySet().stream().allMatch(l -> l.getValue().equals(all.get(l.getKey())))
                && matchExpressions.stream().allMatch(r -> r.matches(all));
    }

    /**
     * Whether relabelling a namespace took it into, or out of, those Kueue manages: only then may a job
     * of it that waits for a queue name go another way (one held there starts once it is left out).
     */
    public boolean relabelMatters(String namespace, Map<String, String> before, Map<String, String> after) {
        return manages(namespace, before) != manages(namespace, after);
    }

    /** The event said, once, of a job that names a LocalQueue in a namespace Kueue does not manage. */
    public static final String IGNORED = "QueueIgnored";

    /** What that event says. */
    public String ignoredMessage(String namespace, String queue) {
        String why = leftOut.contains(namespace) ? "TORCHJOB_KUEUE_UNMANAGED_NAMESPACES names it"
                : "its managedJobsNamespaceSelector, " + describe() + ", leaves it out";
        return "The label " + KueueWorkload.QUEUE_LABEL + "=" + queue + " is ignored: Kueue manages no job in namespace " + namespace
                + " (" + why + "), so the job runs without a queue, as Kueue runs its own jobs there. To queue its jobs, the platform "
                + "team includes the namespace (for a selector of labels: kubectl label namespace " + namespace + " ...)";
    }

    /** The selector as kubectl's {@code -l} writes it, for messages; "everything" when it selects all. */
    public String describe() {
        List<String> parts = new ArrayList<>();
        new java.util.TreeMap<>(matchLabels).forEach((key, value) -> parts.add(key + "=" + value));
        matchExpressions.forEach(r -> parts.add(r.toString()));
        return parts.isEmpty() ? "everything" : String.join(",", parts);
    }
}
