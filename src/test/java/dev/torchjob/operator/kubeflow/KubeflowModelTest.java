package dev.torchjob.operator.kubeflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.JobTopology;
import dev.torchjob.operator.engine.TrainingJob;
import dev.torchjob.operator.engine.TrainingJob.BudgetRule;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/** A PyTorchJob read into the engine's model: Kubeflow v1.9's defaults, rules and messages that name the field. */
class KubeflowModelTest {
    static final KubernetesSerialization JSON = new KubernetesSerialization();
    static final String POD = "{spec: {containers: [{name: pytorch, image: torch}]}}";

    static PyTorchJob parse(String yaml) {
        PyTorchJob job = JSON.unmarshal(yaml, PyTorchJob.class);
        job.getMetadata().setUid("uid-" + job.getMetadata().getName());
        job.getMetadata().setNamespace("team");
        job.getMetadata().setGeneration(1L);
        return job;
    }

    static PyTorchJob job(String spec) {
        return parse("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n" + spec.indent(2));
    }

    static Stream<Path> examples() throws IOException {
        try (Stream<Path> files = Files.list(Path.of("kubernetes/examples/kubeflow"))) {
            return files.sorted().toList().stream();
        }
    }

    @ParameterizedTest
    @MethodSource("examples")
    void everySeedExampleIsAValidJob(Path example) throws IOException {
        TrainingJob job = KubeflowModel.job(parse(Files.readString(example)));
        assertEquals(java.util.Optional.empty(), job.problem(), example.toString());
        assertEquals(RetryableExitCodes.FROM_128, job.retryableExitCodes());
        assertEquals(BudgetRule.FAILS_WHEN_RESTARTS_REACH_LIMIT, job.runPolicy().budgetRule());
    }

    @Test
    void aMasterAndThreeWorkersAreRanksZeroToThreeAndTheMasterDecides() throws IOException {
        TrainingJob job = KubeflowModel.job(parse(Files.readString(Path.of("kubernetes/examples/kubeflow/02-mnist-gloo-demo.yaml"))));
        assertEquals(List.of(new ReplicaGroup("Master", 1, RestartPolicy.OnFailure), new ReplicaGroup("Worker", 3, RestartPolicy.OnFailure)),
                job.groups());
        assertEquals(SuccessRule.MASTER, job.successRule());
        assertEquals(List.of("pytorch-dist-mnist-gloo-demo-master-0", "pytorch-dist-mnist-gloo-demo-worker-0",
                "pytorch-dist-mnist-gloo-demo-worker-1", "pytorch-dist-mnist-gloo-demo-worker-2"),
                JobTopology.of(job).slots().stream().map(s -> s.podName()).toList());
        assertEquals(Integer.MAX_VALUE, job.runPolicy().backoffLimit(), "no backoffLimit: Kubeflow sets no limit");
        assertEquals(CleanPodPolicy.None, job.runPolicy().cleanPodPolicy());
        assertEquals(RunMode.TRAIN, job.runMode());
    }

    @Test
    void withoutAMasterEveryWorkerMustSucceedOrAnyOneWhenElastic() throws IOException {
        assertEquals(SuccessRule.ALL_REPLICAS, KubeflowModel.job(job("pytorchReplicaSpecs:\n  Worker: {replicas: 2, template: " + POD + "}"))
                .successRule());
        TrainingJob elastic = KubeflowModel.job(parse(Files.readString(Path.of("kubernetes/examples/kubeflow/05-elastic.yaml"))));
        assertEquals(SuccessRule.ANY_REPLICA, elastic.successRule());
        assertTrue(elastic.elastic());
        assertEquals(List.of(new ReplicaGroup("Worker", 2, RestartPolicy.OnFailure)), elastic.groups());
    }

    @Test
    void replicaTypesAreReadInAnyCasingMasterFirst() {
        TrainingJob job = KubeflowModel.job(job("pytorchReplicaSpecs:\n  worker: {replicas: 2, restartPolicy: ExitCode, template: " + POD
                + "}\n  MASTER: {template: " + POD + "}"));
        assertEquals(List.of(new ReplicaGroup("Master", 1, RestartPolicy.OnFailure), new ReplicaGroup("Worker", 2, RestartPolicy.ExitCode)),
                job.groups());
    }

    @Test
    void runPolicyAndSuspendAsKubeflowMeansThem() {
        TrainingJob job = KubeflowModel.job(job("""
                runPolicy: {backoffLimit: 3, cleanPodPolicy: Running, activeDeadlineSeconds: 600, suspend: true}
                pytorchReplicaSpecs:
                  Worker: {template: %s}
                """.formatted(POD)));
        assertEquals(3, job.runPolicy().backoffLimit());
        assertEquals(2, job.runPolicy().restartsAllowed(), "the job fails once its restarts reach backoffLimit");
        assertEquals(CleanPodPolicy.Unfinished, job.runPolicy().cleanPodPolicy(), "Running deletes running and pending pods");
        assertEquals(600L, job.runPolicy().activeDeadlineSeconds());
        assertEquals(RunMode.PAUSE, job.runMode(), "suspend: no pods, nothing counted");
        assertEquals(-1, KubeflowModel.job(job("runPolicy: {backoffLimit: 0}\npytorchReplicaSpecs:\n  Worker: {template: " + POD + "}"))
                .runPolicy().restartsAllowed(), "backoffLimit 0: the first failure fails the job");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            two masters            | 'pytorchReplicaSpecs:\\n  Master: {replicas: 2, template: POD}'                         | spec.pytorchReplicaSpecs.Master.replicas must be 1
            a PS type              | 'pytorchReplicaSpecs:\\n  Master: {template: POD}\\n  PS: {template: POD}'               | spec.pytorchReplicaSpecs.PS: a PyTorchJob has only Master and Worker replicas
            worker twice           | 'pytorchReplicaSpecs:\\n  Worker: {template: POD}\\n  worker: {template: POD}'           | spec.pytorchReplicaSpecs.worker: Worker is given twice
            no replicas            | 'pytorchReplicaSpecs: {}'                                                                | spec.pytorchReplicaSpecs needs a Master or a Worker
            no pytorch container   | 'pytorchReplicaSpecs:\\n  Worker: {template: {spec: {containers: [{name: main, image: t}]}}}' | spec.pytorchReplicaSpecs.Worker.template.spec.containers has no container named pytorch
            zero workers           | 'pytorchReplicaSpecs:\\n  Worker: {replicas: 0, template: POD}'                         | spec.pytorchReplicaSpecs.Worker.replicas must be between 1 and 1000 (found 0)
            workers beyond int     | 'pytorchReplicaSpecs:\\n  Worker: {replicas: 99999999999, template: POD}'               | (found 2147483647 or more)
            too many in all        | 'pytorchReplicaSpecs:\\n  Master: {template: POD}\\n  Worker: {replicas: 1000, template: POD}' | 1001 replicas in all
            elastic without worker | 'elasticPolicy: {minReplicas: 1}\\npytorchReplicaSpecs:\\n  Master: {template: POD}'    | spec.elasticPolicy needs a Worker
            elastic bounds         | 'elasticPolicy: {minReplicas: 3, maxReplicas: 2}\\npytorchReplicaSpecs:\\n  Worker: {template: POD}' | spec.elasticPolicy needs 1 <= minReplicas <= maxReplicas
            both nproc fields      | 'nprocPerNode: \"2\"\\nelasticPolicy: {nProcPerNode: 2}\\npytorchReplicaSpecs:\\n  Worker: {template: POD}' | cannot both be set
            bad nprocPerNode       | 'nprocPerNode: many\\npytorchReplicaSpecs:\\n  Worker: {template: POD}'                 | spec.nprocPerNode "many"
            port out of range      | 'pytorchReplicaSpecs:\\n  Worker: {template: {spec: {containers: [{name: pytorch, image: t, ports: [{name: pytorchjob-port, containerPort: 0}]}]}}}' | ports[0].containerPort must be between 1 and 65535
            unreadable             | 'runPolicy: {backoffLimit: three}\\npytorchReplicaSpecs:\\n  Worker: {template: POD}'   | spec.runPolicy.backoffLimit cannot be read
            """)
    void anInvalidSpecFailsNamingTheField(String title, String spec, String expected) {
        TrainingJob job = KubeflowModel.job(job(spec.replace("\\n", "\n").replace("POD", POD)));
        assertTrue(job.problem().isPresent(), title + " was accepted");
        assertTrue(job.problem().get().contains(expected), title + ": " + job.problem().get());
        assertTrue(job.groups().isEmpty(), "nothing is built from an invalid spec");
    }

    @Test
    void aPodNameOverSixtyThreeCharactersIsRefusedBeforeAnyPodIsMade() {
        PyTorchJob job = job("pytorchReplicaSpecs:\n  Worker: {replicas: 10, template: " + POD + "}");
        job.getMetadata().setName("a-job-name-that-is-long-enough-to-push-the-worker-pod-name-ov");
        assertTrue(KubeflowModel.job(job).problem().orElseThrow().startsWith("pod name " + job.getMetadata().getName() + "-worker-9 is longer"));
    }

    @Test
    void queuedWithKueueAnElasticJobAsksForItsMaximumWorkersAndCanStartWithItsMinimum() throws IOException {
        PyTorchJob elastic = parse(Files.readString(Path.of("kubernetes/examples/kubeflow/05-elastic.yaml")));
        var podSets = KubeflowPlanner.podSets(elastic);
        assertEquals(List.of("worker"), podSets.stream().map(p -> p.name()).toList());
        assertEquals(4, podSets.get(0).count(), "elasticPolicy.maxReplicas");
        assertEquals(java.util.Optional.of(2), podSets.get(0).minCount(), "elasticPolicy.minReplicas: Kueue may admit fewer");
        assertEquals("pytorch", podSets.get(0).template().getSpec().getContainers().get(0).getName());
        PyTorchJob demo = parse(Files.readString(Path.of("kubernetes/examples/kubeflow/02-mnist-gloo-demo.yaml")));
        assertEquals(List.of("master:1", "worker:3"), KubeflowPlanner.podSets(demo).stream().map(p -> p.name() + ":" + p.count()).toList());
        assertTrue(KubeflowPlanner.podSets(demo).stream().allMatch(p -> p.minCount().isEmpty()), "only an elastic group can be admitted partly");
    }
}
