package dev.torchjob.operator.kueue;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The kinds Kueue knows as owners of jobs: its built-in integrations, as its configuration's
 * {@code integrations.frameworks} names them (those enabled there it manages; the others it only walks
 * through), and its {@code externalFrameworks} ({@code Kind.version.group}), which it manages too.
 * Kueue v0.19.2's names and versions. Pure.
 *
 * @param known every kind Kueue walks up through, as {@code apiVersion/Kind}
 * @param managed the kinds whose objects Kueue manages (queues), as {@code apiVersion/Kind}
 */
public record KueueIntegrations(Set<String> known, Set<String> managed) {
    /** Kueue's built-in frameworks: name to the apiVersion and kind of its objects. */
    static final Map<String, String> BUILT_IN = builtIn();
    /** The frameworks Kueue's shipped configuration enables. */
    public static final String KUEUE_DEFAULT = "batch/job,kubeflow.org/mpijob,ray.io/rayjob,ray.io/raycluster,ray.io/rayservice,"
            + "jobset.x-k8s.io/jobset,workload.codeflare.dev/appwrapper,trainer.kubeflow.org/trainjob,pod,deployment,statefulset,"
            + "leaderworkerset.x-k8s.io/leaderworkerset";
    /** The setting this is read from, as a user writes it. */
    public static final String SETTING = "TORCHJOB_KUEUE_INTEGRATIONS";

    private static Map<String, String> builtIn() {
        Map<String, String> kinds = new LinkedHashMap<>();
        kinds.put("batch/job", "batch/v1/Job");
        kinds.put("kubeflow.org/mpijob", "kubeflow.org/v2beta1/MPIJob");
        kinds.put("kubeflow.org/pytorchjob", "kubeflow.org/v1/PyTorchJob");
        kinds.put("kubeflow.org/tfjob", "kubeflow.org/v1/TFJob");
        kinds.put("kubeflow.org/paddlejob", "kubeflow.org/v1/PaddleJob");
        kinds.put("kubeflow.org/xgboostjob", "kubeflow.org/v1/XGBoostJob");
        kinds.put("kubeflow.org/jaxjob", "kubeflow.org/v1/JAXJob");
        kinds.put("ray.io/rayjob", "ray.io/v1/RayJob");
        kinds.put("ray.io/raycluster", "ray.io/v1/RayCluster");
        kinds.put("ray.io/rayservice", "ray.io/v1/RayService");
        kinds.put("jobset.x-k8s.io/jobset", "jobset.x-k8s.io/v1alpha2/JobSet");
        kinds.put("workload.codeflare.dev/appwrapper", "workload.codeflare.dev/v1beta2/AppWrapper");
        kinds.put("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org/v1alpha1/TrainJob");
        kinds.put("sparkoperator.k8s.io/sparkapplication", "sparkoperator.k8s.io/v1beta2/SparkApplication");
        kinds.put("pod", "v1/Pod");
        kinds.put("deployment", "apps/v1/Deployment");
        kinds.put("statefulset", "apps/v1/StatefulSet");
        kinds.put("leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet");
        return Map.copyOf(kinds);
    }

    /** The setting cannot be read: what is wrong with it, and how it is written. */
    public static final class Invalid extends IllegalArgumentException {
        Invalid(String problem) {
            super(SETTING + " (as Kueue's integrations.frameworks and externalFrameworks) " + problem + "; write Kueue's names, "
                    + "comma-separated, e.g. " + KUEUE_DEFAULT + " (Kueue's default), and an external framework as Kind.version.group");
        }
    }

    /**
     * @param frameworks the enabled frameworks by Kueue's names, and external ones as {@code Kind.version.group}
     * @throws Invalid naming the entry Kueue would not start with
     */
    public static KueueIntegrations parse(List<String> frameworks) {
        Set<String> managed = new LinkedHashSet<>();
        Set<String> known = new LinkedHashSet<>(BUILT_IN.values());
        // An interim owner from a Pod to a Deployment: Kueue walks through it without its being listed.
        known.add("apps/v1/ReplicaSet");
        for (String entry : frameworks) {
            String name = entry.strip();
            if (name.isEmpty()) {
                continue;
            }
            String kind = BUILT_IN.get(name);
            if (kind == null) {
                String[] parts = name.split("\\.", 3);
                if (parts.length < 3 || parts[0].isEmpty() || !Character.isUpperCase(parts[0].charAt(0)) || parts[1].isEmpty()
                        || parts[2].isEmpty()) {
                    throw new Invalid("names " + name + ", neither one of Kueue's frameworks (" + String.join(", ",
                            new java.util.TreeSet<>(BUILT_IN.keySet())) + ") nor an external one");
                }
                kind = parts[2] + "/" + parts[1] + "/" + parts[0];
            }
            managed.add(kind);
            known.add(kind);
        }
        return new KueueIntegrations(Set.copyOf(known), Set.copyOf(managed));
    }

    /** Whether Kueue walks up through an owner of this apiVersion and kind. */
    public boolean knows(String apiVersion, String kind) {
        return known.contains(apiVersion + "/" + kind);
    }

    /** Whether Kueue manages objects of this apiVersion and kind (queues them, with their children). */
    public boolean manages(String apiVersion, String kind) {
        return managed.contains(apiVersion + "/" + kind);
    }
}
