package dev.torchjob.operator.kubeflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.ReplicaSlot;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;

/** Pods and Services exactly as Kubeflow's training-operator v1.9 makes them: the contract users' scripts rely on. */
class KubeflowPodsTest {

    static Map<String, Pod> pods(PyTorchJob job) {
        JobTopology topology = JobTopology.of(KubeflowModel.job(job));
        KubeflowPods pods = new KubeflowPods(job, topology);
        Map<String, Pod> byName = new LinkedHashMap<>();
        for (ReplicaSlot slot : topology.slots()) {
            byName.put(slot.podName(), pods.pod(slot));
        }
        return byName;
    }

    static List<Service> services(PyTorchJob job) {
        JobTopology topology = JobTopology.of(KubeflowModel.job(job));
        KubeflowPods pods = new KubeflowPods(job, topology);
        return topology.slots().stream().map(pods::service).toList();
    }

    static PyTorchJob example(String file) throws IOException {
        return KubeflowModelTest.parse(Files.readString(Path.of("kubernetes/examples/kubeflow", file)));
    }

    static Map<String, String> env(Container container) {
        Map<String, String> env = new LinkedHashMap<>();
        container.getEnv().forEach(e -> env.put(e.getName(), e.getValue()));
        return env;
    }

    static Container pytorch(Pod pod) {
        return pod.getSpec().getContainers().stream().filter(c -> c.getName().equals("pytorch")).findFirst().orElseThrow();
    }

    @Test
    void aMasterAndThreeWorkersGetKubeflowsNamesRanksAndEnvironment() throws IOException {
        Map<String, Pod> pods = pods(example("02-mnist-gloo-demo.yaml"));
        String job = "pytorch-dist-mnist-gloo-demo";
        assertEquals(List.of(job + "-master-0", job + "-worker-0", job + "-worker-1", job + "-worker-2"), List.copyOf(pods.keySet()));
        Map<String, String> master = env(pytorch(pods.get(job + "-master-0")));
        assertEquals(Map.of("PYTHONUNBUFFERED", "1", "MASTER_PORT", "23456", "PET_MASTER_PORT", "23456", "MASTER_ADDR", job + "-master-0",
                "PET_MASTER_ADDR", job + "-master-0", "WORLD_SIZE", "4", "RANK", "0", "PET_NODE_RANK", "0", "PET_NPROC_PER_NODE", "auto",
                "PET_NNODES", "4"), master);
        assertEquals(List.copyOf(master.keySet()), List.of("PYTHONUNBUFFERED", "MASTER_PORT", "PET_MASTER_PORT", "MASTER_ADDR",
                "PET_MASTER_ADDR", "WORLD_SIZE", "RANK", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_NNODES"), "Kubeflow's order");
        assertEquals("3", env(pytorch(pods.get(job + "-worker-2"))).get("RANK"), "worker i is rank i + 1");
        assertEquals("3", env(pytorch(pods.get(job + "-worker-2"))).get("PET_NODE_RANK"));
        assertEquals(List.of("--backend", "gloo"), pytorch(pods.get(job + "-worker-2")).getArgs(), "the command is the user's");
        List<String> command = pytorch(pods.get(job + "-worker-2")).getCommand();
        assertTrue(command == null || command.isEmpty(), "the image's entrypoint runs: " + command);
    }

    @Test
    void labelsAreKubeflowsAndTheOlderOnesSoTheSeedsKubectlCommandsWork() throws IOException {
        Map<String, Pod> pods = pods(example("03-distributed-training-cpu.yaml"));
        String job = "pytorchjob-distributed-training";
        Pod master = pods.get(job + "-master-0");
        assertEquals(Map.of("training.kubeflow.org/operator-name", "pytorchjob-controller", "training.kubeflow.org/job-name", job,
                "training.kubeflow.org/replica-type", "master", "training.kubeflow.org/replica-index", "0",
                "training.kubeflow.org/job-role", "master", "job-name", job, "controller-name", "pytorch-operator"),
                master.getMetadata().getLabels());
        Pod worker = pods.get(job + "-worker-1");
        assertEquals("worker", worker.getMetadata().getLabels().get("training.kubeflow.org/replica-type"));
        assertEquals("1", worker.getMetadata().getLabels().get("training.kubeflow.org/replica-index"));
        assertFalse(worker.getMetadata().getLabels().containsKey("training.kubeflow.org/job-role"));
        assertEquals("false", worker.getMetadata().getAnnotations().get("sidecar.istio.io/inject"), "the template's annotations are kept");
        assertEquals("pytorch", worker.getMetadata().getAnnotations().get("kubectl.kubernetes.io/default-container"),
                "kubectl logs picks the training container");
        assertEquals("data", master.getSpec().getVolumes().get(0).getPersistentVolumeClaim().getClaimName());
        var owner = master.getMetadata().getOwnerReferences().get(0);
        assertEquals(List.of("kubeflow.org/v1", "PyTorchJob", job, true, true),
                List.of(owner.getApiVersion(), owner.getKind(), owner.getName(), owner.getController(), owner.getBlockOwnerDeletion()));
    }

    @Test
    void onFailureAndAlwaysRestartInPlaceWhileExitCodeIsTheOperatorsToRecreate() {
        String template = "{spec: {containers: [{name: pytorch, image: torch}]}}";
        Map<String, Pod> pods = pods(KubeflowModelTest.job("pytorchReplicaSpecs:\n  Master: {restartPolicy: Always, template: " + template
                + "}\n  Worker: {replicas: 3, restartPolicy: ExitCode, template: " + template + "}"));
        assertEquals("Always", pods.get("j-master-0").getSpec().getRestartPolicy());
        assertEquals("Never", pods.get("j-worker-0").getSpec().getRestartPolicy());
        Map<String, Pod> onFailure = pods(KubeflowModelTest.job("pytorchReplicaSpecs:\n  Worker: {template: " + template + "}"));
        assertEquals("OnFailure", onFailure.get("j-worker-0").getSpec().getRestartPolicy(), "the default");
        assertEquals("FallbackToLogsOnError", pytorch(onFailure.get("j-worker-0")).getTerminationMessagePolicy());
    }

    @Test
    void workersWithoutAMasterGetOnlyTheTorchrunVariablesAsInKubeflow() {
        Map<String, Pod> pods = pods(KubeflowModelTest.job(
                "pytorchReplicaSpecs:\n  Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: torch}]}}}"));
        assertEquals(Map.of("PYTHONUNBUFFERED", "1", "PET_NPROC_PER_NODE", "auto", "PET_NNODES", "2"), env(pytorch(pods.get("j-worker-1"))));
        assertEquals("master", pods.get("j-worker-0").getMetadata().getLabels().get("training.kubeflow.org/job-role"),
                "worker-0 has the master role when there is no Master");
    }

    @Test
    void anElasticJobGetsTheRendezvousVariablesItsTorchrunReads() throws IOException {
        Map<String, String> env = env(pytorch(pods(example("05-elastic.yaml")).get("elastic-example-worker-1")));
        assertEquals(Map.of("PYTHONUNBUFFERED", "1", "PET_NPROC_PER_NODE", "1", "PET_NNODES", "2:4",
                "PET_RDZV_ENDPOINT", "elastic-example-worker-0:23456", "PET_RDZV_BACKEND", "c10d", "PET_MAX_RESTARTS", "10"), env);
        assertEquals(List.of("PYTHONUNBUFFERED", "PET_NPROC_PER_NODE", "PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_NNODES",
                "PET_MAX_RESTARTS"), List.copyOf(env.keySet()), "Kubeflow's order");
        Map<String, String> everything = env(pytorch(pods(KubeflowModelTest.job("""
                elasticPolicy:
                  maxReplicas: 3
                  rdzvBackend: etcd-v2
                  rdzvHost: etcd.infra
                  rdzvPort: 2379
                  rdzvId: run-7
                  rdzvConf: [{key: timeout, value: "900"}, {key: join_timeout, value: "60"}]
                  standalone: true
                  nProcPerNode: 2
                pytorchReplicaSpecs:
                  Worker: {replicas: 3, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """)).get("j-worker-0")));
        assertEquals("3:3", everything.get("PET_NNODES"), "one bound given: it is both");
        assertEquals("etcd.infra:2379", everything.get("PET_RDZV_ENDPOINT"));
        assertEquals("etcd-v2", everything.get("PET_RDZV_BACKEND"));
        assertEquals("run-7", everything.get("PET_RDZV_ID"));
        assertEquals("timeout=900,join_timeout=60", everything.get("PET_RDZV_CONF"));
        assertEquals("", everything.get("PET_STANDALONE"));
        assertEquals("2", everything.get("PET_NPROC_PER_NODE"), "the deprecated field, when it is the one set");
        assertEquals(List.of("PYTHONUNBUFFERED", "PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_NNODES", "PET_NPROC_PER_NODE", "PET_RDZV_ID",
                "PET_RDZV_CONF", "PET_STANDALONE"), List.copyOf(everything.keySet()), "Kubeflow's order, the deprecated field among the elastic ones");
    }

    @Test
    void theMastersPortAndProcessesPerNodeShapeMasterPortAndWorldSize() {
        Map<String, Pod> pods = pods(KubeflowModelTest.job("""
                nprocPerNode: "4"
                pytorchReplicaSpecs:
                  Master:
                    template: {spec: {containers: [{name: pytorch, image: torch, ports: [{name: pytorchjob-port, containerPort: 29500}]}]}}
                  Worker:
                    replicas: 2
                    template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """));
        Map<String, String> worker = env(pytorch(pods.get("j-worker-1")));
        assertEquals("29500", worker.get("MASTER_PORT"));
        assertEquals("12", worker.get("WORLD_SIZE"), "3 pods x 4 processes");
        assertEquals("4", worker.get("PET_NPROC_PER_NODE"));
        assertEquals(List.of(23456), pytorch(pods.get("j-worker-1")).getPorts().stream().map(p -> p.getContainerPort()).toList(),
                "a type without the port gets Kubeflow's default");
    }

    @Test
    void everyContainerGetsTheVariablesAndTheOperatorsValueReplacesTheUsers() {
        Map<String, Pod> pods = pods(KubeflowModelTest.job("""
                pytorchReplicaSpecs:
                  Master:
                    template:
                      spec:
                        containers:
                        - {name: pytorch, image: torch, env: [{name: WORLD_SIZE, value: "99"}, {name: PYTHONUNBUFFERED, value: "0"}, {name: DATA, value: /d}]}
                        - {name: sidecar, image: proxy}
                """));
        Pod master = pods.get("j-master-0");
        List<EnvVar> env = pytorch(master).getEnv();
        assertEquals(1, env.stream().filter(e -> e.getName().equals("WORLD_SIZE")).count(), "one WORLD_SIZE, not two as in Kubeflow");
        assertEquals("1", env(pytorch(master)).get("WORLD_SIZE"));
        assertEquals("0", env(pytorch(master)).get("PYTHONUNBUFFERED"), "the user's PYTHONUNBUFFERED stays");
        assertEquals("/d", env(pytorch(master)).get("DATA"));
        assertEquals("j-master-0", env(master.getSpec().getContainers().get(1)).get("MASTER_ADDR"), "sidecars get them too, as in Kubeflow");
    }

    @Test
    void eachReplicaHasAHeadlessServiceNamedAsItsPodSelectingOnlyThatPod() throws IOException {
        List<Service> services = services(example("02-mnist-gloo-demo.yaml"));
        String job = "pytorch-dist-mnist-gloo-demo";
        assertEquals(List.of(job + "-master-0", job + "-worker-0", job + "-worker-1", job + "-worker-2"),
                services.stream().map(s -> s.getMetadata().getName()).toList());
        Service worker = services.get(2);
        assertEquals("None", worker.getSpec().getClusterIP());
        assertEquals(Map.of("training.kubeflow.org/operator-name", "pytorchjob-controller", "training.kubeflow.org/job-name", job,
                "training.kubeflow.org/replica-type", "worker", "training.kubeflow.org/replica-index", "1"), worker.getSpec().getSelector());
        assertEquals(List.of("pytorchjob-port:23456"), worker.getSpec().getPorts().stream().map(p -> p.getName() + ":" + p.getPort()).toList());
        assertFalse(worker.getMetadata().getLabels().containsKey("training.kubeflow.org/job-role"));
        assertTrue(worker.getMetadata().getOwnerReferences().get(0).getController());
    }

    static java.util.stream.Stream<Path> examples() throws IOException {
        return KubeflowModelTest.examples();
    }

    /** Every seed manifest becomes the pods Kubeflow would create: names, rank env, the pytorch port, one Service each. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.MethodSource("examples")
    void everySeedExampleIsPlannedIntoThePodsKubeflowWouldCreate(Path example) throws IOException {
        PyTorchJob job = KubeflowModelTest.parse(Files.readString(example));
        Map<String, Pod> pods = pods(job);
        String name = job.getMetadata().getName();
        var types = ReplicaTypes.of(job.getSpec());
        int workers = types.containsKey("Worker") ? types.get("Worker").replicas : 0;
        List<String> expected = new java.util.ArrayList<>();
        if (types.containsKey("Master")) {
            expected.add(name + "-master-0");
        }
        for (int i = 0; i < workers; i++) {
            expected.add(name + "-worker-" + i);
        }
        assertEquals(expected, List.copyOf(pods.keySet()), example.toString());
        pods.values().forEach(pod -> {
            Map<String, String> env = env(pytorch(pod));
            assertEquals("1", env.get("PYTHONUNBUFFERED"));
            // With a Master, WORLD_SIZE counts the pods; elastic workers read the lower bound of PET_NNODES (min:max).
            String podCount = types.containsKey("Master") ? env.get("WORLD_SIZE") : env.get("PET_NNODES").replaceAll(":.*", "");
            assertEquals(Integer.toString(expected.size()), podCount, example + " " + pod.getMetadata().getName());
            assertTrue(pytorch(pod).getPorts().stream().anyMatch(p -> "pytorchjob-port".equals(p.getName())));
        });
        assertEquals(expected, services(job).stream().map(s -> s.getMetadata().getName()).toList());
    }
}
