package dev.torchjob.operator.t9k;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * Jobs as a careless or hostile user with {@code create} on PyTorchTrainingJob writes them: a valid
 * job with one to three mutations (integer edges and overflows, 100 KB strings, unicode in names
 * and env, wrong types inside the open template, duplicate types and names, removed parts). Raw
 * JSON, as kubectl sends it: the API server may refuse some, the operator must cope with the rest.
 * Seeded: a job is reproduced from its seed.
 */
public final class HostileJobs {
    static final KubernetesSerialization JSON = new KubernetesSerialization();
    static final String HUGE = "x".repeat(100_000);
    /** Integers at and beyond the edges of the schema and of Java's int and long. */
    static final List<Object> INTEGER_EDGES = List.of(-1, 0, 1, 2, 1001, Integer.MAX_VALUE, 2147483648L, Long.MAX_VALUE,
            Integer.MIN_VALUE, new BigInteger("100000000000000000000000000000"));

    /** One generated job: its JSON and what was done to it. */
    public record HostileJob(long seed, String name, String json, List<String> mutations) {
    }

    private HostileJobs() {
    }

    public static HostileJob generate(long seed) {
        Random random = new Random(seed);
        String name = "h" + seed;
        Map<String, Object> job = valid(name, random.nextBoolean());
        List<String> mutations = new ArrayList<>();
        int count = 1 + random.nextInt(3);
        for (int i = 0; i < count; i++) {
            mutations.add(mutate(job, random));
        }
        return new HostileJob(seed, name, JSON.asJson(job), mutations);
    }

    /** A job every API server and the operator accept: optionally a master, then two workers. */
    static Map<String, Object> valid(String name, boolean withMaster) {
        List<Object> groups = new ArrayList<>();
        if (withMaster) {
            groups.add(group("master", 1));
        }
        groups.add(group("worker", 2));
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("replicaSpecs", groups);
        spec.put("runPolicy", new LinkedHashMap<>(Map.of("backoffLimit", 3)));
        Map<String, Object> job = new LinkedHashMap<>();
        job.put("apiVersion", "batch.tensorstack.dev/v1beta1");
        job.put("kind", "PyTorchTrainingJob");
        job.put("metadata", new LinkedHashMap<>(Map.of("name", name)));
        job.put("spec", spec);
        return job;
    }

    static Map<String, Object> group(String type, int replicas) {
        Map<String, Object> container = new LinkedHashMap<>();
        container.put("name", "pytorch");
        container.put("image", "torch");
        container.put("command", new ArrayList<>(List.of("python", "train.py")));
        container.put("env", new ArrayList<>(List.of(new LinkedHashMap<>(Map.of("name", "EPOCHS", "value", "3")))));
        Map<String, Object> podSpec = new LinkedHashMap<>();
        podSpec.put("containers", new ArrayList<>(List.of(container)));
        Map<String, Object> template = new LinkedHashMap<>();
        template.put("spec", podSpec);
        Map<String, Object> group = new LinkedHashMap<>();
        group.put("type", type);
        group.put("replicas", replicas);
        group.put("restartPolicy", "OnFailure");
        group.put("template", template);
        return group;
    }

    @SuppressWarnings("unchecked")
    static String mutate(Map<String, Object> job, Random random) {
        Map<String, Object> spec = (Map<String, Object>) job.get("spec");
        List<Object> groups = (List<Object>) spec.get("replicaSpecs");
        if (groups.isEmpty()) {
            groups.add(group("worker", 1));
        }
        int at = random.nextInt(groups.size());
        Map<String, Object> group = (Map<String, Object>) groups.get(at);
        Map<String, Object> template = (Map<String, Object>) group.computeIfAbsent("template", k -> new LinkedHashMap<>());
        Object podSpecValue = template.computeIfAbsent("spec", k -> new LinkedHashMap<>());
        Map<String, Object> podSpec = podSpecValue instanceof Map<?, ?> m ? (Map<String, Object>) m : new LinkedHashMap<>();
        Object containersValue = podSpec.computeIfAbsent("containers", k -> new ArrayList<>(List.of(new LinkedHashMap<>(Map.of("name", "pytorch")))));
        Map<String, Object> container = containersValue instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof Map<?, ?> c
                ? (Map<String, Object>) c : new LinkedHashMap<>();
        String where = "replicaSpecs[" + at + "]";
        Object edge = pick(random, INTEGER_EDGES.toArray());
        Object other = pick(random, INTEGER_EDGES.toArray());
        Map<String, Object> runPolicy = (Map<String, Object>) spec.computeIfAbsent("runPolicy", k -> new LinkedHashMap<>());
        return switch (random.nextInt(24)) {
            case 0 -> put(group, "replicas", edge, where);
            case 1 -> put(runPolicy, "backoffLimit", edge, "runPolicy");
            case 2 -> put(runPolicy, "activeDeadlineSeconds", edge, "runPolicy");
            case 3 -> put(spec, "torchrunConfig", Map.of("enabled", true, "maxRestarts", edge,
                    "procPerNode", pick(random, "1", "gpu", "0", "-1", HUGE)), "");
            case 4 -> {
                spec.put("torchrunConfig", mutable(Map.of("enabled", true)));
                yield put(spec, "elastic", Map.of("enabled", true, "minReplicas", edge, "maxReplicas", other), "");
            }
            case 5 -> put(container, "ports", List.of(Map.of("name", "pytorchjob-port", "containerPort", edge)), where + " container");
            case 6 -> put(container, "image", HUGE, where + " container");
            case 7 -> put(container, "command", List.of("python", "-c", HUGE), where + " container");
            case 8 -> put(container, "env", List.of(Map.of("name", "BIG", "value", HUGE), Map.of("name", "TEXT", "value", "训练 🚀 ü")),
                    where + " container");
            case 9 -> put(template, "metadata", Map.of("annotations", Map.of("note", HUGE)), where + " template");
            case 10 -> put(group, "type", pick(random, "wörker", "Worker", "w".repeat(70), "", "master", "worker"), where);
            case 11 -> put(container, "name", pick(random, "pytörch", "", "PyTorch", "p".repeat(70)), where + " container");
            case 12 -> put(container, "env", List.of(Map.of("name", pick(random, "1X", "ÄÖ", "", "A B"), "value", "1")), where + " container");
            case 13 -> put(podSpec, "containers", pick(random, "not a list", List.of(42), List.of(), List.of("pytorch")), where + " pod");
            case 14 -> put(container, "ports", pick(random, "x", List.of("x"), Map.of("containerPort", 1)), where + " container");
            case 15 -> put(container, "env", pick(random, Map.of("A", "b"), "A=b", List.of(Map.of("value", "no name"))), where + " container");
            case 16 -> put(container, "resources", pick(random, 5, "lots", Map.of("limits", Map.of("cpu", "many"))), where + " container");
            case 17 -> put(template, "spec", pick(random, 42, "pod", List.of()), where + " template");
            case 18 -> {
                groups.add(group(String.valueOf(group.get("type")), 1));
                yield "replicaSpecs: type " + group.get("type") + " twice";
            }
            case 19 -> put(podSpec, "containers", List.of(Map.of("name", "pytorch", "image", "a"), Map.of("name", "pytorch", "image", "b")),
                    where + " pod (two containers named pytorch)");
            case 20 -> {
                String field = pick(random, "template", "type", "replicas");
                group.remove(field);
                yield where + "." + field + " removed";
            }
            case 21 -> put(spec, "replicaSpecs", pick(random, new ArrayList<>(), new ArrayList<>(java.util.Collections.nCopies(17, group)),
                    new ArrayList<>(List.of(group("worker", 1), group("master", 1)))), "");
            case 22 -> put((Map<String, Object>) job.get("metadata"), "name", pick(random, "Jöb", "j".repeat(64), "j-"), "metadata");
            default -> put(spec, "runMode", pick(random, Map.of("pause", Map.of("enabled", true)), Map.of("debug", Map.of("enabled", true)),
                    Map.of("pause", Map.of("enabled", "yes"))), "");
        };
    }

    /** Sets the field and says what was set, long values cut short. */
    private static String put(Map<String, Object> parent, String field, Object value, String where) {
        parent.put(field, mutable(value));
        String shown = JSON.asJson(value);
        shown = shown.length() <= 60 ? shown : shown.substring(0, 60) + "… (" + shown.length() + " chars)";
        return (where.isEmpty() ? "" : where + ".") + field + "=" + shown;
    }

    /** A deep copy that later mutations can change. */
    private static Object mutable(Object value) {
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> copy = new LinkedHashMap<>();
            map.forEach((k, v) -> copy.put(String.valueOf(k), mutable(v)));
            return copy;
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(v -> copy.add(mutable(v)));
            return copy;
        }
        return value;
    }

    @SafeVarargs
    static <T> T pick(Random random, T... values) {
        return values[random.nextInt(values.length)];
    }
}
