package dev.torchjob.operator.kubeflow;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.StartBlocker;
import dev.torchjob.operator.podtemplate.PodTemplateParser;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * The gang scheduler a PyTorchJob's pods are handed to, as Kubeflow's training-operator v1.9 does with
 * {@code --gang-scheduler-name}: one PodGroup per job (named as the job, owned by it) that tells the
 * scheduler how many of its pods must be placed together, and pods that name the scheduler and the group.
 * Volcano's PodGroup ({@code scheduling.volcano.sh/v1beta1}) holds the job's pods back until Volcano
 * admits the group; scheduler-plugins' ({@code scheduling.x-k8s.io/v1alpha1}, the coscheduling plugin)
 * lets them be created and holds them at scheduling; Kubernetes' own ({@code scheduling.k8s.io/v1beta1}, the
 * Workload API of Kubernetes 1.37) likewise, in the default kube-scheduler. Pure.
 */
public sealed interface GangScheduler {
    String VOLCANO = "volcano";
    /** The setting's value for Kubernetes' own gang scheduling (kube-scheduler's GangScheduling plugin). */
    String KUBERNETES = "kubernetes";
    /** The setting's value for none. */
    String NONE = "none";

    /** Volcano's pod annotations: the group, and the replica type as its task. */
    String VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name";
    String VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec";
    /** scheduler-plugins' pod label naming the group. */
    String PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group";

    /**
     * The operator's setting: empty or {@code none}, {@code volcano}, {@code kubernetes}, or a scheduler-plugins
     * scheduler's name.
     */
    static Optional<GangScheduler> named(Optional<String> setting) {
        String name = setting.map(String::trim).orElse("");
        return switch (name) {
            case "", NONE -> Optional.empty();
            case VOLCANO -> Optional.of(new Volcano());
            case KUBERNETES -> Optional.of(new Kubernetes());
            default -> Optional.of(new SchedulerPlugins(name));
        };
    }

    /** How the operator's setting names this scheduler, as messages say it. */
    default String setting() {
        return schedulerName();
    }

    /** The install's overlay for this scheduler: kubernetes/gang-scheduling/NAME/ (its RBAC for the PodGroups). */
    default String overlay() {
        return setting();
    }

    /** The schedulerName the job's pods get. */
    String schedulerName();

    /** The PodGroup kind this scheduler reads. */
    ResourceDefinitionContext podGroups();

    /** Every gang scheduler's group kind is a namespaced PodGroup; only its API group and version differ. */
    private static ResourceDefinitionContext podGroupsOf(String group, String version) {
        return new ResourceDefinitionContext.Builder().withGroup(group).withVersion(version).withKind("PodGroup").withPlural("podgroups")
                .withNamespaced(true).build();
    }

    /** The PodGroup's spec for the job: from {@code schedulingPolicy}, else all replicas and their requests. */
    Map<String, Object> podGroupSpec(PyTorchJob job, Optional<GenericKubernetesResource> observed);

    /** Whether the job's pods wait for the observed PodGroup (none observed yet: they do where the scheduler admits groups first). */
    boolean holdsPods(Optional<GenericKubernetesResource> observed);

    /** What the pod needs to be scheduled as one of the job's gang (the job's PodGroup as observed, if made). */
    void decorate(Pod pod, PyTorchJob job, String replicaType, Optional<GenericKubernetesResource> observed);

    /**
     * The replica types whose template names a priority class other than the gang's, where the scheduler places
     * a gang at one priority only; their pods get the gang's.
     */
    default List<String> typesWithAnotherPriority(PyTorchJob job, Optional<GenericKubernetesResource> observed) {
        return List.of();
    }

    /** The PodGroup the job should have: its metadata (the job's annotations, labels, owner) and spec. */
    default GenericKubernetesResource podGroup(PyTorchJob job, Optional<GenericKubernetesResource> observed) {
        ResourceDefinitionContext kind = podGroups();
        GenericKubernetesResource podGroup = new GenericKubernetesResource();
        podGroup.setApiVersion(kind.getGroup() + "/" + kind.getVersion());
        podGroup.setKind(kind.getKind());
        ObjectMeta meta = new ObjectMeta();
        meta.setName(job.getMetadata().getName());
        meta.setNamespace(job.getMetadata().getNamespace());
        meta.setLabels(KubeflowLabels.ofJob(job.getMetadata().getName()));
        if (job.getMetadata().getAnnotations() != null && !job.getMetadata().getAnnotations().isEmpty()) {
            meta.setAnnotations(new LinkedHashMap<>(job.getMetadata().getAnnotations()));
        }
        meta.setOwnerReferences(List.of(KubeflowPods.ownerReference(job)));
        podGroup.setMetadata(meta);
        podGroup.setAdditionalProperty("spec", podGroupSpec(job, observed));
        return podGroup;
    }

    /** A scheduler name the user set in a template is kept (Kubeflow warns); otherwise the gang scheduler's. */
    default void nameScheduler(Pod pod) {
        if (pod.getSpec().getSchedulerName() == null || pod.getSpec().getSchedulerName().isEmpty()) {
            pod.getSpec().setSchedulerName(schedulerName());
        }
    }

    /** The replica types whose template names another scheduler: their pods will not be gang-scheduled. */
    default List<String> typesWithAnotherScheduler(PyTorchJob job) {
        return ReplicaTypes.of(job.getSpec()).entrySet().stream().filter(e -> {
            String named = PodTemplateParser.parse(e.getValue().template).getSpec().getSchedulerName();
            return named != null && !named.isEmpty() && !named.equals(schedulerName());
        }).map(Map.Entry::getKey).toList();
    }

    /** Volcano: the PodGroup's queue, priority class and minimum resources; pods wait until the group is Inqueue. */
    record Volcano() implements GangScheduler {
        static final ResourceDefinitionContext POD_GROUPS = podGroupsOf("scheduling.volcano.sh", "v1beta1");

        @Override
        public String schedulerName() {
            return VOLCANO;
        }

        @Override
        public ResourceDefinitionContext podGroups() {
            return POD_GROUPS;
        }

        @Override
        public Map<String, Object> podGroupSpec(PyTorchJob job, Optional<GenericKubernetesResource> observed) {
            SchedulingPolicy policy = SchedulingPolicy.of(job);
            Map<String, Object> spec = new LinkedHashMap<>();
            spec.put("minMember", policy.minMember(job));
            // A queue the PodGroup already has stays (Volcano's queue of a group does not move).
            String queue = observed.map(pg -> ObservedPodGroup.spec(pg).get("queue")).filter(q -> q instanceof String s && !s.isEmpty())
                    .map(Object::toString).orElse(policy.queue().orElse("default"));
            spec.put("queue", queue);
            policy.priorityClass().ifPresent(priorityClass -> spec.put("priorityClassName", priorityClass));
            spec.put("minResources", policy.minResources(job));
            return spec;
        }

        /** As Kubeflow: the job's pods are created once Volcano has taken the group in (its phase neither empty nor Pending). */
        @Override
        public boolean holdsPods(Optional<GenericKubernetesResource> observed) {
            String phase = observed.map(ObservedPodGroup::phase).orElse("");
            return phase.isEmpty() || phase.equals("Pending");
        }

        @Override
        public void decorate(Pod pod, PyTorchJob job, String replicaType, Optional<GenericKubernetesResource> observed) {
            String jobName = job.getMetadata().getName();
            nameScheduler(pod);
            Map<String, String> annotations = pod.getMetadata().getAnnotations() == null ? new LinkedHashMap<>()
                    : new LinkedHashMap<>(pod.getMetadata().getAnnotations());
            annotations.put(VOLCANO_GROUP_ANNOTATION, jobName);
            annotations.put(VOLCANO_TASK_ANNOTATION, replicaType.toLowerCase(Locale.ROOT));
            pod.getMetadata().setAnnotations(annotations);
        }
    }

    /** scheduler-plugins' coscheduling: minimum members and resources, a schedule timeout; pods are created at once. */
    record SchedulerPlugins(String schedulerName) implements GangScheduler {
        static final ResourceDefinitionContext POD_GROUPS = podGroupsOf("scheduling.x-k8s.io", "v1alpha1");

        @Override
        public ResourceDefinitionContext podGroups() {
            return POD_GROUPS;
        }

        @Override
        public String overlay() {
            return "scheduler-plugins";
        }

        @Override
        public Map<String, Object> podGroupSpec(PyTorchJob job, Optional<GenericKubernetesResource> observed) {
            SchedulingPolicy policy = SchedulingPolicy.of(job);
            Map<String, Object> spec = new LinkedHashMap<>();
            spec.put("minMember", policy.minMember(job));
            spec.put("minResources", policy.minResources(job));
            policy.scheduleTimeoutSeconds().ifPresent(timeout -> spec.put("scheduleTimeoutSeconds", timeout));
            return spec;
        }

        @Override
        public boolean holdsPods(Optional<GenericKubernetesResource> observed) {
            return false;
        }

        @Override
        public void decorate(Pod pod, PyTorchJob job, String replicaType, Optional<GenericKubernetesResource> observed) {
            nameScheduler(pod);
            Map<String, String> labels = pod.getMetadata().getLabels() == null ? new LinkedHashMap<>()
                    : new LinkedHashMap<>(pod.getMetadata().getLabels());
            labels.put(PLUGINS_GROUP_LABEL, job.getMetadata().getName());
            pod.getMetadata().setLabels(labels);
        }
    }

    /**
     * Kubernetes' own gang scheduling, the Workload API (scheduling.k8s.io/v1beta1, beta in Kubernetes 1.37 behind the
     * GenericWorkload feature gate): a standalone PodGroup whose gang policy asks for minCount pods placed together,
     * each pod naming it in {@code spec.schedulingGroup}; the default kube-scheduler holds them until minCount exist
     * and places them at once. It reads the pods' own requests: no queue, no minimum resources, no timeout (a gang
     * that does not fit waits). The job is disrupted as a whole ({@code disruptionMode: all}): losing one rank
     * restarts every rank, so a scheduler that preempts should count the whole gang as the cost.
     */
    record Kubernetes() implements GangScheduler {
        static final ResourceDefinitionContext POD_GROUPS = podGroupsOf("scheduling.k8s.io", "v1beta1");
        /** The default scheduler's name, which the pods keep. */
        static final String DEFAULT_SCHEDULER = "default-scheduler";

        @Override
        public String schedulerName() {
            return DEFAULT_SCHEDULER;
        }

        @Override
        public String setting() {
            return KUBERNETES;
        }

        @Override
        public ResourceDefinitionContext podGroups() {
            return POD_GROUPS;
        }

        /** minCount from minAvailable or every replica (it follows elastic scaling); the immutable fields stay as first made. */
        @Override
        public Map<String, Object> podGroupSpec(PyTorchJob job, Optional<GenericKubernetesResource> observed) {
            SchedulingPolicy policy = SchedulingPolicy.of(job);
            Map<String, Object> spec = new LinkedHashMap<>();
            spec.put("schedulingPolicy", Map.of("gang", Map.of("minCount", policy.minMember(job))));
            if (observed.isEmpty()) {
                spec.put("disruptionMode", Map.of("all", Map.of()));
                priorityClass(job, observed).ifPresent(priorityClass -> spec.put("priorityClassName", priorityClass));
            }
            return spec;
        }

        /**
         * The gang's one priority class (kube-scheduler places no PodGroup whose pods' priority differs from its
         * own): the PodGroup's once made (it cannot change), else {@code schedulingPolicy.priorityClass}, else
         * the first a template names, Master's first; empty for none.
         */
        static Optional<String> priorityClass(PyTorchJob job, Optional<GenericKubernetesResource> observed) {
            if (observed.isPresent()) {
                Object made = ObservedPodGroup.spec(observed.get()).get("priorityClassName");
                return made instanceof String s && !s.isEmpty() ? Optional.of(s) : Optional.empty();
            }
            return SchedulingPolicy.of(job).priorityClass().or(() -> ReplicaTypes.of(job.getSpec()).values().stream()
                    .map(spec -> PodTemplateParser.parse(spec.template).getSpec().getPriorityClassName())
                    .filter(name -> name != null && !name.isEmpty()).findFirst());
        }

        @Override
        public List<String> typesWithAnotherPriority(PyTorchJob job, Optional<GenericKubernetesResource> observed) {
            String gang = priorityClass(job, observed).orElse("");
            return ReplicaTypes.of(job.getSpec()).entrySet().stream().filter(e -> {
                String named = PodTemplateParser.parse(e.getValue().template).getSpec().getPriorityClassName();
                return !gang.equals(named == null ? "" : named);
            }).map(Map.Entry::getKey).toList();
        }

        @Override
        public boolean holdsPods(Optional<GenericKubernetesResource> observed) {
            return false;
        }

        @Override
        public void decorate(Pod pod, PyTorchJob job, String replicaType, Optional<GenericKubernetesResource> observed) {
            nameScheduler(pod);
            // Kubernetes 1.37's PodSpec field, newer than the client's model: written as the API has it.
            pod.getSpec().setAdditionalProperty("schedulingGroup", Map.of("podGroupName", job.getMetadata().getName()));
            Optional<String> gang = priorityClass(job, observed);
            if (!gang.equals(Optional.ofNullable(pod.getSpec().getPriorityClassName()).filter(name -> !name.isEmpty()))) {
                pod.getSpec().setPriorityClassName(gang.orElse(null));
                pod.getSpec().setPriority(null); // the API server resolves it from the class
            }
        }
    }

    /**
     * Why the job's pods are held back, when they are: Volcano's words on a Pending group (its Unschedulable
     * condition), or {@link StartBlocker#ADMITTING} while it has not looked at the group yet (not said).
     */
    default Optional<StartBlocker> hold(Optional<GenericKubernetesResource> observed, String jobName) {
        if (!holdsPods(observed)) {
            return Optional.empty();
        }
        Optional<String> unschedulable = observed.flatMap(ObservedPodGroup::unschedulable);
        if (unschedulable.isEmpty()) {
            return Optional.of(new StartBlocker(StartBlocker.ADMITTING, "PodGroup " + jobName + " waits for " + schedulerName()
                    + " to admit it"));
        }
        String queue = observed.map(pg -> ObservedPodGroup.spec(pg).get("queue")).map(Object::toString).orElse("default");
        return Optional.of(new StartBlocker(POD_GROUP_PENDING, "PodGroup " + jobName + " is " + ObservedPodGroup.phase(observed.get())
                + " in " + schedulerName() + "'s queue " + queue + ": " + unschedulable.get() + "; its pods are created once "
                + schedulerName() + " admits the whole group"));
    }

    /** The reason a job's pods cannot start while its PodGroup waits to be admitted. */
    String POD_GROUP_PENDING = "PodGroupPending";
}
