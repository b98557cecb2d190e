package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;

import dev.torchjob.operator.engine.TrainingContainer;

/** Pods as spec §3 and §4 describe them. */
class PodTemplatesTest {

    static final String PS_WORKERS = """
            apiVersion: batch.tensorstack.dev/v1beta1
            kind: PyTorchTrainingJob
            metadata: {name: demo}
            spec:
              replicaSpecs:
              - type: ps
                template:
                  metadata:
                    labels: {team: vision}
                    annotations: {note: kept}
                  spec:
                    containers:
                    - {name: pytorch, image: torch, command: [python], args: [train.py, --epochs, "3"]}
              - type: worker
                replicas: 4
                template:
                  spec:
                    restartPolicy: Always
                    containers:
                    - {name: pytorch, image: torch, command: [python], args: [train.py]}
            """;

    static Map<String, Pod> firstPods(String yaml) {
        InMemoryCluster cluster = new InMemoryCluster(yaml);
        return cluster.plan().podsToCreate().stream().collect(Collectors.toMap(p -> p.getMetadata().getName(), p -> p));
    }

    static Map<String, String> env(Pod pod) {
        Container training = TrainingContainer.of(pod.getSpec().getContainers());
        return training.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e.getValue() == null ? "" : e.getValue()));
    }

    @Test
    void ranksWalkGroupsInOrderThenIndex() {
        Map<String, Pod> pods = firstPods(PS_WORKERS);
        assertEquals(5, pods.size());
        assertEquals("0", env(pods.get("demo-ps-0")).get("RANK"));
        assertEquals("1", env(pods.get("demo-worker-0")).get("RANK"));
        assertEquals("4", env(pods.get("demo-worker-3")).get("RANK"));
        assertEquals("4", pods.get("demo-worker-3").getMetadata().getLabels().get(JobLabels.RANK));
    }

    @Test
    void environmentNamesTheMasterAndTheWorld() {
        Map<String, String> env = env(firstPods(PS_WORKERS).get("demo-worker-2"));
        assertEquals("demo-ps-0.demo", env.get("MASTER_ADDR"));
        assertEquals("23456", env.get("MASTER_PORT"));
        assertEquals("5", env.get("WORLD_SIZE"));
        assertEquals("3", env.get("RANK"));
        assertEquals("1", env.get("PYTHONUNBUFFERED"));
    }

    @Test
    void masterPortComesFromTheNamedContainerPort() {
        Map<String, Pod> pods = firstPods("""
                metadata: {name: port}
                spec:
                  replicaSpecs:
                  - type: master
                    template:
                      spec:
                        containers:
                        - name: pytorch
                          image: torch
                          ports: [{name: pytorchjob-port, containerPort: 29500}]
                  - type: worker
                    template:
                      spec:
                        containers: [{name: pytorch, image: torch}]
                """);
        assertEquals("29500", env(pods.get("port-worker-0")).get("MASTER_PORT"));
        assertEquals("29500", env(pods.get("port-master-0")).get("MASTER_PORT"));
    }

    @Test
    void trainingContainerIsPythonThenPytorchThenFirst() {
        Container sidecar = new Container();
        sidecar.setName("sidecar");
        Container pytorch = new Container();
        pytorch.setName("pytorch");
        Container python = new Container();
        python.setName("python");
        assertEquals("python", TrainingContainer.of(List.of(sidecar, pytorch, python)).getName());
        assertEquals("pytorch", TrainingContainer.of(List.of(sidecar, pytorch)).getName());
        assertEquals("sidecar", TrainingContainer.of(List.of(sidecar)).getName());
    }

    @Test
    void theTrainingContainerLeavesItsLastLogLinesWhenItFailsUnlessTheUserChoseOtherwise() {
        Map<String, Pod> pods = firstPods("""
                metadata: {name: logs}
                spec:
                  replicaSpecs:
                  - type: worker
                    template:
                      spec:
                        containers:
                        - {name: logger, image: busybox}
                        - {name: python, image: torch}
                  - type: ps
                    template:
                      spec:
                        containers:
                        - {name: python, image: torch, terminationMessagePolicy: File}
                """);
        Pod worker = pods.get("logs-worker-0");
        assertEquals("FallbackToLogsOnError", worker.getSpec().getContainers().get(1).getTerminationMessagePolicy());
        assertNull(worker.getSpec().getContainers().get(0).getTerminationMessagePolicy(), "only the training container");
        assertEquals("File", pods.get("logs-ps-0").getSpec().getContainers().get(0).getTerminationMessagePolicy(),
                "the user's choice is kept");
    }

    @Test
    void onlyTheTrainingContainerGetsTheEnvironment() {
        Pod pod = firstPods("""
                metadata: {name: two}
                spec:
                  replicaSpecs:
                  - type: worker
                    template:
                      spec:
                        containers:
                        - {name: logger, image: busybox}
                        - {name: python, image: torch}
                """).get("two-worker-0");
        assertNull(pod.getSpec().getContainers().get(0).getEnv() == null ? null
                : pod.getSpec().getContainers().get(0).getEnv().stream().filter(e -> e.getName().equals("RANK")).findAny().orElse(null));
        assertEquals("0", env(pod).get("RANK"));
    }

    @Test
    void userValuesOfOperatorNamesAreReplacedAndOthersKept() {
        Pod pod = firstPods("""
                metadata: {name: envs}
                spec:
                  replicaSpecs:
                  - type: worker
                    replicas: 2
                    template:
                      spec:
                        containers:
                        - name: pytorch
                          image: torch
                          env:
                          - {name: RANK, value: "99"}
                          - {name: MASTER_ADDR, value: wrong}
                          - {name: PYTHONUNBUFFERED, value: "0"}
                          - {name: MY_SETTING, value: kept}
                """).get("envs-worker-1");
        List<EnvVar> env = TrainingContainer.of(pod.getSpec().getContainers()).getEnv();
        assertEquals(1, env.stream().filter(e -> e.getName().equals("RANK")).count());
        assertEquals("1", env(pod).get("RANK"));
        assertEquals("envs-worker-0.envs", env(pod).get("MASTER_ADDR"));
        assertEquals("0", env(pod).get("PYTHONUNBUFFERED"), "the user's PYTHONUNBUFFERED is kept");
        assertEquals("kept", env(pod).get("MY_SETTING"));
    }

    @Test
    void labelsNamesHostnamesOwnersAndRestartPolicy() {
        Pod pod = firstPods(PS_WORKERS).get("demo-worker-1");
        Map<String, String> labels = pod.getMetadata().getLabels();
        assertEquals("PyTorchTrainingJob", labels.get("tensorstack.dev/owner-kind"));
        assertEquals("demo", labels.get("tensorstack.dev/owner-name"));
        assertEquals("worker", labels.get("tensorstack.dev/replica-type"));
        assertEquals("1", labels.get("tensorstack.dev/replica-index"));
        assertEquals("2", labels.get("tensorstack.dev/rank"));
        assertEquals("demo-worker-1", pod.getSpec().getHostname());
        assertEquals("demo", pod.getSpec().getSubdomain());
        assertEquals("Never", pod.getSpec().getRestartPolicy(), "the operator alone decides restarts");
        assertEquals("job-uid-demo", pod.getMetadata().getOwnerReferences().get(0).getUid());
        assertTrue(pod.getMetadata().getOwnerReferences().get(0).getController());
        Pod ps = firstPods(PS_WORKERS).get("demo-ps-0");
        assertEquals("vision", ps.getMetadata().getLabels().get("team"), "template labels are kept");
        assertEquals("kept", ps.getMetadata().getAnnotations().get("note"), "template annotations are kept");
    }

    @Test
    void withoutTorchrunTheCommandIsUntouched() {
        Container training = TrainingContainer.of(firstPods(PS_WORKERS).get("demo-ps-0").getSpec().getContainers());
        assertEquals(List.of("python"), training.getCommand());
        assertEquals(List.of("train.py", "--epochs", "3"), training.getArgs());
    }

    @Test
    void torchrunReplacesTheCommandAndPrefixesTheArgs() {
        Pod pod = firstPods("""
                metadata: {name: tr}
                spec:
                  torchrunConfig:
                    enabled: true
                    maxRestarts: 10
                    procPerNode: "4"
                    extraOptions: [--log_dir=/tmp/logs, --redirects=3]
                  replicaSpecs:
                  - type: worker
                    replicas: 3
                    template:
                      spec:
                        containers:
                        - {name: pytorch, image: torch, command: [python], args: [-m, training.module, --lr, "0.1"]}
                """).get("tr-worker-2");
        Container training = TrainingContainer.of(pod.getSpec().getContainers());
        assertEquals(List.of("torchrun"), training.getCommand());
        assertEquals(List.of("--nnodes=3", "--nproc_per_node=4", "--max_restarts=10", "--rdzv_backend=c10d",
                "--rdzv_endpoint=$(MASTER_ADDR):$(MASTER_PORT)", "--rdzv_id=job-uid-tr", "--role=worker",
                "--log_dir=/tmp/logs", "--redirects=3", "-m", "training.module", "--lr", "0.1"), training.getArgs());
    }

    @Test
    void elasticTorchrunGivesMinMaxNodesAndRunsExpectedReplicas() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: el}
                spec:
                  torchrunConfig: {enabled: true, rdzvBackend: etcd-v2}
                  elastic: {enabled: true, minReplicas: 2, maxReplicas: 6, expectedReplicas: 4}
                  replicaSpecs:
                  - type: node
                    template:
                      spec:
                        containers:
                        - {name: python, image: torch, command: [python], args: [train.py]}
                """);
        List<Pod> pods = cluster.plan().podsToCreate();
        assertEquals(4, pods.size());
        List<String> args = TrainingContainer.of(pods.get(0).getSpec().getContainers()).getArgs();
        assertEquals("--nnodes=2:6", args.get(0));
        assertEquals("--rdzv_backend=etcd-v2", args.get(3));
        assertEquals(List.of("train.py"), args.subList(args.size() - 1, args.size()));
    }

    @Test
    void legacyEnableSpellingTurnsTorchrunOn() {
        Pod pod = firstPods("""
                metadata: {name: legacy}
                spec:
                  torchrunConfig: {enable: true, minNodes: 2}
                  replicaSpecs:
                  - type: worker
                    template:
                      spec:
                        containers: [{name: pytorch, image: torch, command: [python], args: [train.py]}]
                """).get("legacy-worker-0");
        assertEquals(List.of("torchrun"), TrainingContainer.of(pod.getSpec().getContainers()).getCommand());
    }

    @Test
    void headlessServiceSelectsTheJobsPodsAndPublishesNotReadyAddresses() {
        InMemoryCluster cluster = new InMemoryCluster(PS_WORKERS);
        var service = cluster.plan().servicesToCreate().get(0);
        assertEquals("demo", service.getMetadata().getName());
        assertEquals("None", service.getSpec().getClusterIP());
        assertTrue(service.getSpec().getPublishNotReadyAddresses());
        assertEquals("demo", service.getSpec().getSelector().get(JobLabels.OWNER_NAME));
    }

    @Test
    void theJobSpecIsNeverMutatedByBuildingPods() {
        InMemoryCluster cluster = new InMemoryCluster(PS_WORKERS);
        String before = InMemoryCluster.SERIALIZATION.asYaml(cluster.job.getSpec());
        cluster.plan();
        assertEquals(before, InMemoryCluster.SERIALIZATION.asYaml(cluster.job.getSpec()));
    }
}
