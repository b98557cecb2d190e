package dev.torchjob.operator.t9k;

import dev.torchjob.operator.podtemplate.PodTemplateParser;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.ReplicaSpec;
import dev.torchjob.operator.api.TorchrunConfig;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.ReplicaSlot;
import dev.torchjob.operator.engine.TrainingContainer;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpecBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;

/**
 * Builds the pods, the headless Service and the PodGroup of a PyTorchTrainingJob from its spec
 * (spec §4), for the slots the engine decided. Pure; the templates are parsed once per pass.
 */
public final class PodTemplates {
    public static final int DEFAULT_MASTER_PORT = 23456;
    public static final String MASTER_PORT_NAME = "pytorchjob-port";

    private final PyTorchTrainingJob job;
    private final JobTopology topology;
    /** The parsed pod template of each replica group, in spec order. */
    private final List<PodTemplateSpec> templates;

    /** Needs a job that passed {@link SpecValidator}. */
    public PodTemplates(PyTorchTrainingJob job, JobTopology topology) {
        this.job = job;
        this.topology = topology;
        this.templates = job.getSpec().replicaSpecs.stream().map((ReplicaSpec group) -> PodTemplateParser.parse(group.template)).toList();
    }

    /** 23456, or the containerPort named pytorchjob-port on the master's training container. */
    int masterPort() {
        PodTemplateSpec template = templates.get(topology.master().groupIndex());
        Container training = TrainingContainer.of(template.getSpec().getContainers());
        if (training.getPorts() != null) {
            for (ContainerPort port : training.getPorts()) {
                if (MASTER_PORT_NAME.equals(port.getName()) && port.getContainerPort() != null) {
                    return port.getContainerPort();
                }
            }
        }
        return DEFAULT_MASTER_PORT;
    }

    public static final String T9K_SCHEDULER_NAME = "t9k-scheduler";
    public static final String GROUP_NAME_LABEL = "scheduler.tensorstack.dev/group-name";
    public static final String QUEUE_LABEL = "scheduler.tensorstack.dev/queue";
    public static final String ROLE_LABEL = "scheduler.tensorstack.dev/role";
    public static final String POD_GROUP_API_VERSION = "scheduler.tensorstack.dev/v1beta1";
    public static final String POD_GROUP_KIND = "PodGroup";

    public Pod pod(ReplicaSlot slot, PodOverrides overrides) {
        // The builder copies the template deeply, so the parsed template is never mutated.
        PodTemplateSpec template = new PodTemplateSpecBuilder(templates.get(slot.groupIndex())).build();
        ObjectMeta templateMeta = template.getMetadata() == null ? new ObjectMeta() : template.getMetadata();

        Map<String, String> labels = new LinkedHashMap<>();
        if (templateMeta.getLabels() != null) {
            labels.putAll(templateMeta.getLabels());
        }
        labels.putAll(JobLabels.ofJob(job.getMetadata().getName()));
        labels.put(JobLabels.REPLICA_TYPE, slot.type());
        labels.put(JobLabels.REPLICA_INDEX, Integer.toString(slot.index()));
        labels.put(JobLabels.RANK, Integer.toString(slot.rank()));

        ObjectMeta meta = new ObjectMeta();
        meta.setName(slot.podName());
        meta.setNamespace(job.getMetadata().getNamespace());
        meta.setLabels(labels);
        meta.setAnnotations(templateMeta.getAnnotations() == null ? null : new LinkedHashMap<>(templateMeta.getAnnotations()));
        meta.setOwnerReferences(List.of(ownerReference(job)));

        PodSpec spec = template.getSpec();
        spec.setRestartPolicy("Never");
        spec.setHostname(slot.podName());
        spec.setSubdomain(job.getMetadata().getName());
        if (overrides.skipInitContainers()) {
            spec.setInitContainers(null);
        }
        var t9k = job.getSpec().scheduler == null ? null : job.getSpec().scheduler.t9kScheduler;
        if (t9k != null) {
            spec.setSchedulerName(T9K_SCHEDULER_NAME);
            labels.put(GROUP_NAME_LABEL, job.getMetadata().getName());
            if (t9k.queue != null) {
                labels.put(QUEUE_LABEL, t9k.queue);
            }
            labels.put(ROLE_LABEL, slot.type());
        }

        Container training = TrainingContainer.of(spec.getContainers());
        training.setEnv(environment(training.getEnv(), slot));
        if (training.getTerminationMessagePolicy() == null) {
            // A crash leaves its last log lines in the pod's status, where the operator keeps them.
            training.setTerminationMessagePolicy("FallbackToLogsOnError");
        }
        if (overrides.command() != null) {
            training.setCommand(new ArrayList<>(overrides.command()));
        }
        if (overrides.args() != null) {
            training.setArgs(overrides.args().isEmpty() ? null : new ArrayList<>(overrides.args()));
        }
        Optional<List<String>> torchrunArgs = overrides.torchrun()
                ? torchrun(job.getSpec(), slot, job.getMetadata().getUid())
                : Optional.empty();
        torchrunArgs.ifPresent(args -> {
                    List<String> all = new ArrayList<>(args);
                    if (training.getArgs() != null) {
                        all.addAll(training.getArgs());
                    }
                    training.setCommand(List.of("torchrun"));
                    training.setArgs(all);
                });

        Pod pod = new Pod();
        pod.setMetadata(meta);
        pod.setSpec(spec);
        return pod;
    }

    /** Operator values replace user values of the same names; PYTHONUNBUFFERED only if the user did not set it. */
    private List<EnvVar> environment(List<EnvVar> userEnv, ReplicaSlot slot) {
        Map<String, String> operatorEnv = new LinkedHashMap<>();
        // The master's hostname under the job's headless Service.
        operatorEnv.put("MASTER_ADDR", topology.master().podName() + "." + job.getMetadata().getName());
        operatorEnv.put("MASTER_PORT", Integer.toString(masterPort()));
        operatorEnv.put("WORLD_SIZE", Integer.toString(topology.worldSize()));
        operatorEnv.put("RANK", Integer.toString(slot.rank()));

        List<EnvVar> env = new ArrayList<>();
        boolean userSetUnbuffered = false;
        if (userEnv != null) {
            for (EnvVar var : userEnv) {
                if ("PYTHONUNBUFFERED".equals(var.getName())) {
                    userSetUnbuffered = true;
                }
                if (!operatorEnv.containsKey(var.getName())) {
                    env.add(var);
                }
            }
        }
        operatorEnv.forEach((name, value) -> env.add(new EnvVar(name, value, null)));
        if (!userSetUnbuffered) {
            env.add(new EnvVar("PYTHONUNBUFFERED", "1", null));
        }
        return env;
    }

    /** torchrun's own arguments, placed before the training container's args; empty when torchrun is off. */
    private Optional<List<String>> torchrun(PyTorchTrainingJobSpec spec, ReplicaSlot slot, String jobUid) {
        TorchrunConfig config = spec.torchrunConfig;
        if (config == null || !config.isOn()) {
            return Optional.empty();
        }
        String nnodes = spec.elastic != null && spec.elastic.isOn()
                ? spec.elastic.minReplicas + ":" + spec.elastic.maxReplicas
                : Integer.toString(topology.worldSize());
        List<String> args = new ArrayList<>();
        args.add("--nnodes=" + nnodes);
        args.add("--nproc_per_node=" + (config.procPerNode == null ? "1" : config.procPerNode));
        args.add("--max_restarts=" + (config.maxRestarts == null ? 0 : config.maxRestarts));
        args.add("--rdzv_backend=" + (config.rdzvBackend == null ? "c10d" : config.rdzvBackend.argument()));
        args.add("--rdzv_endpoint=$(MASTER_ADDR):$(MASTER_PORT)");
        args.add("--rdzv_id=" + jobUid);
        args.add("--role=" + slot.type());
        if (config.extraOptions != null) {
            args.addAll(config.extraOptions);
        }
        return Optional.of(args);
    }

    /** Headless Service named after the job, so every replica resolves as <pod>.<job>. */
    public Service headlessService() {
        String name = job.getMetadata().getName();
        return new ServiceBuilder()
                .withNewMetadata()
                .withName(name)
                .withNamespace(job.getMetadata().getNamespace())
                .withLabels(JobLabels.ofJob(name))
                .withOwnerReferences(ownerReference(job))
                .endMetadata()
                .withNewSpec()
                .withClusterIP("None")
                .withPublishNotReadyAddresses(true)
                .withSelector(JobLabels.ofJob(name))
                .addNewPort().withName(MASTER_PORT_NAME).withPort(masterPort()).withProtocol("TCP").endPort()
                .endSpec()
                .build();
    }

    /** The T9k scheduler's gang: all replicas (elastic: minReplicas) must fit before any starts. */
    public GenericKubernetesResource podGroup() {
        var t9k = job.getSpec().scheduler.t9kScheduler;
        var elastic = job.getSpec().elastic;
        int minMember = elastic != null && elastic.isOn() ? elastic.minReplicas : topology.worldSize();
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("minMember", minMember);
        if (t9k.queue != null) {
            spec.put("queue", t9k.queue);
        }
        spec.put("priority", t9k.priority == null ? 0 : t9k.priority);
        GenericKubernetesResource podGroup = new GenericKubernetesResource();
        podGroup.setApiVersion(POD_GROUP_API_VERSION);
        podGroup.setKind(POD_GROUP_KIND);
        ObjectMeta meta = new ObjectMeta();
        meta.setName(job.getMetadata().getName());
        meta.setNamespace(job.getMetadata().getNamespace());
        meta.setLabels(JobLabels.ofJob(job.getMetadata().getName()));
        meta.setOwnerReferences(List.of(ownerReference(job)));
        podGroup.setMetadata(meta);
        podGroup.setAdditionalProperty("spec", spec);
        return podGroup;
    }

    public static OwnerReference ownerReference(PyTorchTrainingJob job) {
        return new OwnerReferenceBuilder()
                .withApiVersion(job.getApiVersion())
                .withKind(job.getKind())
                .withName(job.getMetadata().getName())
                .withUid(job.getMetadata().getUid())
                .withController(true)
                .withBlockOwnerDeletion(true)
                .build();
    }
}
