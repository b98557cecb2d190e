package dev.torchjob.operator.kueue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

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
    public static final String PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class";
    public static final String JOB_UID_LABEL = "kueue.x-k8s.io/job-uid";
    public static final String FINALIZER = "kueue.x-k8s.io/resource-in-use";
    /** A replica template's topology request for Kueue's topology-aware scheduling, as Kueue's integrations read it. */
    public static final String REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology";
    public static final String PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology";
    public static final String UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology";
    /** podSets of one group (a master and its workers) are placed in one topology domain together. */
    public static final String POD_SET_GROUP = "kueue.x-k8s.io/podset-group-name";
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

        /**
         * The podSet's topologyRequest as Kueue's own integrations build it from the template's
         * annotations: required, else preferred, else unconstrained, with the pods' index label and,
         * for a required or preferred level, the podSet group; none without any of these.
         */
        public Optional<Map<String, Object>> topologyRequest() {
            Map<String, String> annotations = template.getMetadata() == null || template.getMetadata().getAnnotations() == null
                    ? Map.of() : template.getMetadata().getAnnotations();
            Map<String, Object> request = new LinkedHashMap<>();
            if (annotations.containsKey(REQUIRED_TOPOLOGY)) {
                request.put("required", annotations.get(REQUIRED_TOPOLOGY));
            } else if (annotations.containsKey(PREFERRED_TOPOLOGY)) {
                request.put("preferred", annotations.get(PREFERRED_TOPOLOGY));
            } else if (annotations.containsKey(UNCONSTRAINED_TOPOLOGY)) {
                // Not a boolean: written as it is, for the API server to refuse in its words.
                String value = annotations.get(UNCONSTRAINED_TOPOLOGY);
                request.put("unconstrained", "true".equalsIgnoreCase(value) || "false".equalsIgnoreCase(value) ? Boolean.valueOf(value) : value);
            }
            if (request.isEmpty() && podIndexLabel == null) {
                return Optional.empty();
            }
            if (podIndexLabel != null) {
                request.put("podIndexLabel", podIndexLabel);
            }
            if (annotations.containsKey(POD_SET_GROUP) && (request.containsKey("required") || request.containsKey("preferred"))) {
                request.put("podSetGroupName", annotations.get(POD_SET_GROUP));
            }
            return Optional.of(request);
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

    /** A Kueue label of the job with a value Kueue's webhook would refuse: the job cannot be queued as it is. */
    public static final class InvalidLabel extends IllegalArgumentException {
        InvalidLabel(String message) {
            super(message);
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
            throw new InvalidLabel("the label " + MAX_EXEC_TIME_LABEL + " is \"" + value + "\": Kueue takes a whole number of seconds "
                    + "greater than 0 (at most 2147483647); fix or remove the label to queue the job");
        }
        return Optional.of(seconds);
    }

    /** The name of the job's Workload, as Kueue's own integrations name theirs. */
    public static String nameOf(HasMetadata job) {
        return WorkloadName.of(job.getKind(), groupOf(job), job.getMetadata().getName(), job.getMetadata().getUid());
    }

    public static GenericKubernetesResource of(HasMetadata job, String queue, List<PodSet> podSets, Optional<Priority> priority) {
        return of(job, queue, podSets, priority, Map.of());
    }

    /** {@code labels}: this operator's labels of the job's objects (its informers select on them). */
    public static GenericKubernetesResource of(HasMetadata job, String queue, List<PodSet> podSets, Optional<Priority> priority,
            Map<String, String> labels) {
        ObjectMeta meta = new ObjectMeta();
        meta.setName(nameOf(job));
        meta.setNamespace(job.getMetadata().getNamespace());
        meta.setLabels(new LinkedHashMap<>(labels));
        meta.getLabels().put(JOB_UID_LABEL, job.getMetadata().getUid());
        meta.setFinalizers(new ArrayList<>(List.of(FINALIZER)));
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
