package dev.torchjob.operator.kueue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * The Workload (kueue.x-k8s.io/v1beta2) through which a job asks Kueue for quota, as Kueue's own
 * integrations make it: named by {@link WorkloadName}, owned by the job, labelled with its UID,
 * held by Kueue's finalizer until the job is done, one podSet per replica group.
 */
public final class KueueWorkload {
    public static final String API_VERSION = "kueue.x-k8s.io/v1beta2";
    public static final String KIND = "Workload";
    public static final String QUEUE_LABEL = "kueue.x-k8s.io/queue-name";
    /** Job annotations carried to the Workload for Kueue's ProvisioningRequest admission check (its ProvReqAnnotationPrefix). */
    public static final String PROVISIONING_PREFIX = "provreq.kueue.x-k8s.io/";
    public static final String PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class";
    public static final String JOB_UID_LABEL = "kueue.x-k8s.io/job-uid";
    public static final String FINALIZER = "kueue.x-k8s.io/resource-in-use";
    /** The longest the job may run admitted, in seconds, summed over its admissions: Kueue deactivates its Workload then. */
    public static final String MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds";
    /** Kueue keeps at most this many podSets in a Workload. */
    public static final int MAX_POD_SETS = 18;
    private static final KubernetesSerialization JSON = new KubernetesSerialization();

    private KueueWorkload() {
    }

    /**
     * One replica group as Kueue counts it: its pods' final template (quota is computed from it),
     * how many, for an elastic group the fewest it can run with (partial admission), and the label
     * that holds each pod's index (topology-aware scheduling places the pods in index order; may be null).
     */
    public record PodSet(String name, PodTemplateSpec template, int count, Optional<Integer> minCount, String podIndexLabel) {
        /** The podSet of a replica type, from the pod its first replica gets (named as Kueue names them: the type in lower case). */
        public static PodSet of(String replicaType, Pod pod, int count, Optional<Integer> minCount, String podIndexLabel) {
            PodTemplateSpec template = new PodTemplateSpec();
            ObjectMeta meta = new ObjectMeta();
            meta.setLabels(pod.getMetadata().getLabels());
            meta.setAnnotations(pod.getMetadata().getAnnotations());
            template.setMetadata(meta);
            template.setSpec(JSON.clone(pod).getSpec());
            return new PodSet(replicaType.toLowerCase(Locale.ROOT), template, count, minCount, podIndexLabel);
        }

        /** The podSet's topologyRequest, from its template's annotations, as Kueue's own integrations build it. */
        public Optional<Map<String, Object>> topologyRequest() {
            return TopologyRequest.of(TopologyRequest.annotationsOf(this), podIndexLabel);
        }
    }

    /** A priority Kueue resolved: a WorkloadPriorityClass (from the job's label) or a PriorityClass (from the template). */
    public record Priority(String group, String kind, String name, int value) {
    }

    /** The queue a job asks for, from its label; empty when it is not queued with Kueue. */
    public static Optional<String> queueOf(HasMetadata job) {
        Map<String, String> labels = job.getMetadata().getLabels();
        return Optional.ofNullable(labels == null ? null : labels.get(QUEUE_LABEL)).filter(q -> !q.isBlank());
    }

    /** Kueue labels or annotations of the job that Kueue's webhook would refuse: the job cannot be queued as it is. */
    public static final class Invalid extends IllegalArgumentException {
        Invalid(String message) {
            super(message);
        }
    }

    /**
     * What Kueue's webhook would refuse in the job's Kueue labels and its replica templates' topology
     * annotations, all of it in one message; nothing when the job can be queued.
     */
    public static void check(HasMetadata job, List<PodSet> podSets) {
        List<String> problems = new ArrayList<>();
        try {
            maxExecutionSecondsOf(job);
        } catch (Invalid e) {
            problems.add(e.getMessage());
        }
        for (PodSet podSet : podSets) {
            problems.addAll(TopologyRequest.problems(podSet.name(), TopologyRequest.annotationsOf(podSet), podSet.count()));
        }
        problems.addAll(TopologyRequest.groupProblems(podSets));
        if (!problems.isEmpty()) {
            throw new Invalid(String.join("; ", problems) + ". Fix " + (problems.size() == 1 ? "it" : "them") + " to queue the job.");
        }
    }

    /**
     * The job's maximum execution time (its label {@value #MAX_EXEC_TIME_LABEL}), as Kueue's integrations
     * carry it to the Workload; a value that is not a whole number of seconds from 1 to 2147483647 is
     * refused, as Kueue's webhook refuses it.
     */
    public static Optional<Integer> maxExecutionSecondsOf(HasMetadata job) {
        Map<String, String> labels = job.getMetadata().getLabels();
        String value = labels == null ? null : labels.get(MAX_EXEC_TIME_LABEL);
        if (value == null) {
            return Optional.empty();
        }
        int seconds;
        try {
            seconds = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            seconds = 0;
        }
        if (seconds <= 0) {
            throw new Invalid("the label " + MAX_EXEC_TIME_LABEL + " is \"" + value + "\": Kueue takes a whole number of seconds "
                    + "greater than 0 (at most 2147483647)");
        }
        return Optional.of(seconds);
    }

    /** The name of the job's Workload, as Kueue's own integrations name theirs. */
    public static String nameOf(HasMetadata job) {
        return WorkloadName.of(job.getKind(), groupOf(job), job.getMetadata().getName(), job.getMetadata().getUid());
    }

    public static GenericKubernetesResource of(HasMetadata job, String queue, List<PodSet> podSets, Optional<Priority> priority) {
        return of(job, queue, podSets, priority, Map.of(), Set.of());
    }

    /**
     * @param labels this operator's labels of the job's objects (its informers select on them)
     * @param labelKeysToCopy the job's labels the Workload gets too, as Kueue's {@code labelKeysToCopy} (those the job has)
     */
    public static GenericKubernetesResource of(HasMetadata job, String queue, List<PodSet> podSets, Optional<Priority> priority,
            Map<String, String> labels, Set<String> labelKeysToCopy) {
        ObjectMeta meta = new ObjectMeta();
        meta.setName(nameOf(job));
        meta.setNamespace(job.getMetadata().getNamespace());
        meta.setLabels(new LinkedHashMap<>());
        if (job.getMetadata().getLabels() != null) {
            job.getMetadata().getLabels().forEach((key, value) -> {
                if (labelKeysToCopy.contains(key)) {
                    meta.getLabels().put(key, value);
                }
            });
        }
        // The operator's own come last: a copied label never hides the Workload from its informer.
        meta.getLabels().putAll(labels);
        meta.getLabels().put(JOB_UID_LABEL, job.getMetadata().getUid());
        meta.setFinalizers(new ArrayList<>(List.of(FINALIZER)));
        Map<String, String> provisioning = provisioningParametersOf(job);
        if (!provisioning.isEmpty()) {
            meta.setAnnotations(provisioning);
        }
        meta.setOwnerReferences(List.of(new OwnerReferenceBuilder().withApiVersion(job.getApiVersion()).withKind(job.getKind())
                .withName(job.getMetadata().getName()).withUid(job.getMetadata().getUid()).withController(true)
                .withBlockOwnerDeletion(true).build()));

        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("queueName", queue);
        priority.ifPresent(p -> {
            spec.put("priorityClassRef", Map.of("group", p.group(), "kind", p.kind(), "name", p.name()));
            spec.put("priority", p.value());
        });
        spec.put("podSets", podSetsOf(podSets));
        maxExecutionSecondsOf(job).ifPresent(seconds -> spec.put("maximumExecutionTimeSeconds", seconds));

        GenericKubernetesResource workload = new GenericKubernetesResource();
        workload.setApiVersion(API_VERSION);
        workload.setKind(KIND);
        workload.setMetadata(meta);
        workload.setAdditionalProperty("spec", spec);
        return workload;
    }

    /**
     * The job's annotations that are parameters of a ProvisioningRequest ({@value #PROVISIONING_PREFIX}...): Kueue's
     * integrations carry them to the Workload when they make it, and Kueue's ProvisioningRequest admission check
     * passes them on to the cluster autoscaler.
     */
    static Map<String, String> provisioningParametersOf(HasMetadata job) {
        Map<String, String> parameters = new LinkedHashMap<>();
        if (job.getMetadata().getAnnotations() != null) {
            job.getMetadata().getAnnotations().forEach((key, value) -> {
                if (key.startsWith(PROVISIONING_PREFIX)) {
                    parameters.put(key, value);
                }
            });
        }
        return parameters;
    }

    /** spec.podSets as the Workload holds them. */
    @SuppressWarnings("unchecked")
    public static List<Map<String, Object>> podSetsOf(List<PodSet> podSets) {
        List<Map<String, Object>> sets = new ArrayList<>();
        for (PodSet podSet : podSets) {
            Map<String, Object> set = new LinkedHashMap<>();
            set.put("name", podSet.name());
            set.put("count", podSet.count());
            podSet.minCount().ifPresent(min -> set.put("minCount", min));
            set.put("template", JSON.convertValue(onlyLabelsAndAnnotations(podSet.template()), Map.class));
            podSet.topologyRequest().ifPresent(request -> set.put("topologyRequest", request));
            sets.add(set);
        }
        return sets;
    }

    /** A Workload's podSet template keeps only labels and annotations of the template's metadata. */
    private static PodTemplateSpec onlyLabelsAndAnnotations(PodTemplateSpec template) {
        PodTemplateSpec copy = JSON.clone(template);
        if (copy.getMetadata() != null) {
            ObjectMeta meta = new ObjectMeta();
            meta.setLabels(copy.getMetadata().getLabels());
            meta.setAnnotations(copy.getMetadata().getAnnotations());
            copy.setMetadata(meta);
        }
        return copy;
    }

    private static String groupOf(HasMetadata job) {
        String apiVersion = job.getApiVersion();
        int slash = apiVersion.indexOf('/');
        return slash < 0 ? "" : apiVersion.substring(0, slash);
    }
}
