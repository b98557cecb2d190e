package dev.torchjob.operator.kubeflow;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import dev.torchjob.operator.api.kubeflow.ElasticPolicy;
import dev.torchjob.operator.api.kubeflow.KubeflowReplicaSpec;
import dev.torchjob.operator.api.kubeflow.KubeflowRestartPolicy;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJobSpec;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.ReplicaSlot;
import dev.torchjob.operator.engine.TrainingContainer;
import dev.torchjob.operator.podtemplate.PodTemplateParser;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.ContainerPortBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpecBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.ServicePortBuilder;

/**
 * The pods and Services of a PyTorchJob as Kubeflow's training-operator v1.9 creates them: names,
 * labels, the environment (MASTER_*, WORLD_SIZE, RANK, PET_*), one headless Service per replica.
 * The user's command is never changed. Pure; the templates are parsed once per pass.
 */
public final class KubeflowPods {
    public static final String PORT_NAME = "pytorchjob-port";
    public static final int DEFAULT_PORT = 23456;

    private final PyTorchJob job;
    private final JobTopology topology;
    private final Map<String, KubeflowReplicaSpec> types;
    private final Map<String, PodTemplateSpec> templates = new LinkedHashMap<>();

    /** Needs a job that passed {@link KubeflowSpecValidator}. */
    public KubeflowPods(PyTorchJob job, JobTopology topology) {
        this.job = job;
        this.topology = topology;
        this.types = ReplicaTypes.of(job.getSpec());
        types.forEach((type, replicas) -> templates.put(type, withDefaultPort(PodTemplateParser.parse(replicas.template))));
    }

    /** Kubeflow's defaulter: the pytorch container of every type gets port pytorchjob-port 23456 unless it names one. */
    private static PodTemplateSpec withDefaultPort(PodTemplateSpec parsed) {
        PodTemplateSpec template = new PodTemplateSpecBuilder(parsed).build();
        Container pytorch = pytorchContainer(template.getSpec());
        List<ContainerPort> ports = pytorch.getPorts() == null ? new ArrayList<>() : new ArrayList<>(pytorch.getPorts());
        if (ports.stream().noneMatch(p -> PORT_NAME.equals(p.getName()))) {
            ports.add(new ContainerPortBuilder().withName(PORT_NAME).withContainerPort(DEFAULT_PORT).withProtocol("TCP").build());
        }
        pytorch.setPorts(ports);
        return template;
    }

    private static Container pytorchContainer(PodSpec spec) {
        return spec.getContainers().stream().filter(c -> KubeflowSpecValidator.TRAINING_CONTAINER.equals(c.getName())).findFirst()
                .orElseThrow();
    }

    private int portOf(String type) {
        PodTemplateSpec template = templates.get(type);
        return pytorchContainer(template.getSpec()).getPorts().stream().filter(p -> PORT_NAME.equals(p.getName()))
                .map(ContainerPort::getContainerPort).findFirst().orElse(DEFAULT_PORT);
    }

    public Pod pod(ReplicaSlot slot) {
        // The builder copies the template deeply: the parsed one is never changed.
        PodTemplateSpec template = new PodTemplateSpecBuilder(templates.get(slot.type())).build();
        ObjectMeta templateMeta = template.getMetadata() == null ? new ObjectMeta() : template.getMetadata();
        Map<String, String> labels = new LinkedHashMap<>();
        if (templateMeta.getLabels() != null) {
            labels.putAll(templateMeta.getLabels());
        }
        labels.putAll(KubeflowLabels.ofReplica(job.getMetadata().getName(), slot));
        if (slot.isMaster()) {
            labels.put(KubeflowLabels.JOB_ROLE, "master"); // the Master, or worker-0 when there is none
        }
        Map<String, String> annotations = new LinkedHashMap<>();
        if (templateMeta.getAnnotations() != null) {
            annotations.putAll(templateMeta.getAnnotations());
        }
        annotations.put(TrainingContainer.ANNOTATION, KubeflowSpecValidator.TRAINING_CONTAINER);

        ObjectMeta meta = new ObjectMeta();
        meta.setName(slot.podName());
        meta.setNamespace(job.getMetadata().getNamespace());
        meta.setLabels(labels);
        meta.setAnnotations(annotations);
        meta.setOwnerReferences(List.of(ownerReference(job)));

        PodSpec spec = template.getSpec();
        // OnFailure and Always restart in place (kubectl logs --previous works); ExitCode is the operator's to recreate.
        KubeflowRestartPolicy policy = types.get(slot.type()).restartPolicy == null ? KubeflowRestartPolicy.OnFailure
                : types.get(slot.type()).restartPolicy;
        spec.setRestartPolicy(policy == KubeflowRestartPolicy.ExitCode ? "Never" : policy.name());
        Map<String, String> env = environment(slot);
        for (Container container : spec.getContainers()) {
            container.setEnv(withEnvironment(container.getEnv(), env));
        }
        Container pytorch = pytorchContainer(spec);
        if (pytorch.getTerminationMessagePolicy() == null) {
            // A crash leaves its last log lines in the pod's status, where the operator keeps them.
            pytorch.setTerminationMessagePolicy("FallbackToLogsOnError");
        }
        Pod pod = new Pod();
        pod.setMetadata(meta);
        pod.setSpec(spec);
        return pod;
    }

    /** Kubeflow's variables for this replica, in its order (every container gets them, as in Kubeflow). */
    Map<String, String> environment(ReplicaSlot slot) {
        PyTorchJobSpec spec = job.getSpec();
        ElasticPolicy elastic = spec.elasticPolicy;
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PYTHONUNBUFFERED", "1");
        boolean hasMaster = types.containsKey(ReplicaTypes.MASTER);
        if (hasMaster) {
            String port = Integer.toString(portOf(ReplicaTypes.MASTER));
            String address = JobTopology.podName(job.getMetadata().getName(), ReplicaTypes.MASTER, 0);
            env.put("MASTER_PORT", port);
            env.put("PET_MASTER_PORT", port);
            env.put("MASTER_ADDR", address);
            env.put("PET_MASTER_ADDR", address);
            env.put("WORLD_SIZE", Integer.toString(topology.worldSize() * processesPerNodeAsNumber()));
            // Node ranks: the master 0, worker i is i + 1.
            env.put("RANK", Integer.toString(slot.rank()));
            env.put("PET_NODE_RANK", Integer.toString(slot.rank()));
        }
        // The deprecated elasticPolicy.nProcPerNode comes with the elastic variables, as in Kubeflow.
        boolean elasticProcesses = elastic != null && elastic.nProcPerNode != null;
        if (!elasticProcesses) {
            env.put("PET_NPROC_PER_NODE", spec.nprocPerNode == null ? "auto" : spec.nprocPerNode);
        }
        if (elastic == null) {
            env.put("PET_NNODES", Integer.toString(topology.worldSize()));
        } else {
            String host = elastic.rdzvHost != null ? elastic.rdzvHost
                    : JobTopology.podName(job.getMetadata().getName(), ReplicaTypes.WORKER, 0);
            int port = elastic.rdzvPort != null ? elastic.rdzvPort : portOf(ReplicaTypes.WORKER);
            env.put("PET_RDZV_ENDPOINT", host + ":" + port);
            env.put("PET_RDZV_BACKEND", elastic.rdzvBackend == null ? "c10d"
                    : elastic.rdzvBackend == ElasticPolicy.RendezvousBackend.etcdV2 ? "etcd-v2" : elastic.rdzvBackend.name());
            env.put("PET_NNODES", KubeflowModel.elasticMin(spec) + ":" + KubeflowModel.elasticMax(spec));
            if (elastic.maxRestarts != null) {
                env.put("PET_MAX_RESTARTS", elastic.maxRestarts.toString());
            }
            if (elasticProcesses) {
                env.put("PET_NPROC_PER_NODE", elastic.nProcPerNode.toString());
            }
            if (elastic.rdzvId != null) {
                env.put("PET_RDZV_ID", elastic.rdzvId);
            }
            if (elastic.rdzvConf != null && !elastic.rdzvConf.isEmpty()) {
                env.put("PET_RDZV_CONF", elastic.rdzvConf.stream().map(c -> c.key + "=" + c.value).collect(Collectors.joining(",")));
            }
            if (Boolean.TRUE.equals(elastic.standalone)) {
                env.put("PET_STANDALONE", "");
            }
        }
        return env;
    }

    /** nprocPerNode as Kubeflow multiplies WORLD_SIZE by it: a number, else (auto, cpu, gpu) 1. */
    private int processesPerNodeAsNumber() {
        String nproc = job.getSpec().elasticPolicy != null && job.getSpec().elasticPolicy.nProcPerNode != null
                ? job.getSpec().elasticPolicy.nProcPerNode.toString() : job.getSpec().nprocPerNode;
        return nproc != null && nproc.matches("[1-9][0-9]*") ? Integer.parseInt(nproc) : 1;
    }

    /**
     * The user's variables, then the operator's. Unlike Kubeflow, a user variable the operator sets
     * is replaced rather than duplicated (the pod then says plainly which value it runs with);
     * PYTHONUNBUFFERED set by the user is kept.
     */
    private static List<EnvVar> withEnvironment(List<EnvVar> userEnv, Map<String, String> operatorEnv) {
        List<EnvVar> env = new ArrayList<>();
        boolean userUnbuffered = false;
        for (EnvVar var : userEnv == null ? List.<EnvVar>of() : userEnv) {
            if ("PYTHONUNBUFFERED".equals(var.getName())) {
                userUnbuffered = true;
                env.add(var);
            } else if (!operatorEnv.containsKey(var.getName())) {
                env.add(var);
            }
        }
        boolean keepUsers = userUnbuffered;
        operatorEnv.forEach((name, value) -> {
            if (!(keepUsers && "PYTHONUNBUFFERED".equals(name))) {
                env.add(new EnvVar(name, value, null));
            }
        });
        return env;
    }

    /** One headless Service per replica, named as its pod, exposing the pytorch container's named ports. */
    public Service service(ReplicaSlot slot) {
        Map<String, String> labels = KubeflowLabels.ofReplica(job.getMetadata().getName(), slot);
        List<ServicePort> ports = new ArrayList<>();
        for (ContainerPort port : pytorchContainer(templates.get(slot.type()).getSpec()).getPorts()) {
            if (port.getName() != null) {
                ports.add(new ServicePortBuilder().withName(port.getName()).withPort(port.getContainerPort())
                        .withProtocol(port.getProtocol() == null ? "TCP" : port.getProtocol()).build());
            }
        }
        return new ServiceBuilder()
                .withNewMetadata()
                .withName(slot.podName())
                .withNamespace(job.getMetadata().getNamespace())
                .withLabels(labels)
                .withOwnerReferences(ownerReference(job))
                .endMetadata()
                .withNewSpec()
                .withClusterIP("None")
                .withSelector(KubeflowLabels.selectorOfReplica(job.getMetadata().getName(), slot))
                .withPorts(ports)
                .endSpec()
                .build();
    }

    public static OwnerReference ownerReference(PyTorchJob job) {
        return new OwnerReferenceBuilder()
                .withApiVersion(PyTorchJob.GROUP + "/" + PyTorchJob.VERSION)
                .withKind(PyTorchJob.KIND)
                .withName(job.getMetadata().getName())
                .withUid(job.getMetadata().getUid())
                .withController(true)
                .withBlockOwnerDeletion(true)
                .build();
    }
}
