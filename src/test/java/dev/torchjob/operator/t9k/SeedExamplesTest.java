package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.TrainingContainer;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;

/** Every T9k seed example parses and yields the pods a T9k user expects. */
class SeedExamplesTest {

    static Plan<PyTorchTrainingJobStatus> firstPlan(Path file) throws IOException {
        return new InMemoryCluster(Files.readString(file)).plan();
    }

    static Container training(Pod pod) {
        return TrainingContainer.of(pod.getSpec().getContainers());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "01-basic.yaml,           pytorch-example,       worker, 4, python train.py",
            "02-resources.yaml,       pytorch-resources,     worker, 4, python train.py",
            "03-shared-memory.yaml,   pytorch-shm,           worker, 4, python train.py",
            "04-env.yaml,             pytorch-env,           worker, 4, python train.py",
            "05-torchrun.yaml,        pytorch-torchrun,      worker, 4, torchrun --nnodes=4 --nproc_per_node=1 --max_restarts=10 --rdzv_backend=c10d --rdzv_endpoint=$(MASTER_ADDR):$(MASTER_PORT) --rdzv_id=job-uid-pytorch-torchrun --role=worker train.py",
            "06-elastic.yaml,         pytorch-elastic,       worker, 7, torchrun --nnodes=4:10 --nproc_per_node=1 --max_restarts=10 --rdzv_backend=c10d --rdzv_endpoint=$(MASTER_ADDR):$(MASTER_PORT) --rdzv_id=job-uid-pytorch-elastic --role=worker train.py",
            "07-best-practice.yaml,   pytorch-best-practice, worker, 4, python train.py",
            "08-python-module.yaml,   pytorch-module,        worker, 4, python -m train",
    })
    void yieldsTheExpectedPods(String file, String job, String type, int replicas, String commandLine) throws IOException {
        Plan<PyTorchTrainingJobStatus> plan = firstPlan(Path.of("kubernetes/examples/t9k", file));
        assertEquals(JobPhase.Pending, plan.status().phase, () -> String.valueOf(plan.status().conditions));
        List<Pod> pods = plan.podsToCreate();
        assertEquals(replicas, pods.size());
        for (int i = 0; i < replicas; i++) {
            Pod pod = pods.get(i);
            assertEquals(job + "-" + type + "-" + i, pod.getMetadata().getName());
            Container training = training(pod);
            List<String> argv = new java.util.ArrayList<>(training.getCommand());
            if (training.getArgs() != null) {
                argv.addAll(training.getArgs());
            }
            assertEquals(commandLine, String.join(" ", argv));
            Map<String, String> env = PodTemplatesTest.env(pod);
            assertEquals(Integer.toString(i), env.get("RANK"));
            assertEquals(Integer.toString(replicas), env.get("WORLD_SIZE"));
            assertEquals(job + "-" + type + "-0." + job, env.get("MASTER_ADDR"));
        }
    }

    @Test
    void modeExamplesYieldTheirPods() throws IOException {
        Path t9k = Path.of("kubernetes/examples/t9k");
        InMemoryCluster scheduled = new InMemoryCluster(Files.readString(t9k.resolve("09-t9k-scheduler.yaml")));
        Plan<PyTorchTrainingJobStatus> plan = scheduled.plan();
        assertEquals(4, plan.podsToCreate().size());
        assertEquals("t9k-scheduler", plan.podsToCreate().get(0).getSpec().getSchedulerName());
        assertTrue(plan.podGroupToCreate().isPresent());

        List<Pod> sshd = firstPlan(t9k.resolve("10-debug-sshd.yaml")).podsToCreate();
        assertEquals(List.of("/usr/bin/sshd"), training(sshd.get(1)).getCommand());
        List<Pod> sleeping = firstPlan(t9k.resolve("11-debug-default.yaml")).podsToCreate();
        assertEquals(List.of("sleep", "inf"), training(sleeping.get(0)).getCommand());

        for (String paused : List.of("12-pause-resume-specs.yaml", "13-pause-default.yaml")) {
            Plan<PyTorchTrainingJobStatus> pausedPlan = firstPlan(t9k.resolve(paused));
            assertEquals(JobPhase.Paused, pausedPlan.status().phase, paused);
            assertTrue(pausedPlan.podsToCreate().isEmpty(), paused);
        }
    }

    @Test
    void resourcesVolumesAndSecretEnvAreCarriedIntoThePods() throws IOException {
        Pod resources = firstPlan(Path.of("kubernetes/examples/t9k/02-resources.yaml")).podsToCreate().get(0);
        assertEquals("4Gi", training(resources).getResources().getLimits().get("memory").toString());
        Pod shm = firstPlan(Path.of("kubernetes/examples/t9k/03-shared-memory.yaml")).podsToCreate().get(0);
        assertEquals("Memory", shm.getSpec().getVolumes().get(0).getEmptyDir().getMedium());
        assertEquals("/dev/shm", training(shm).getVolumeMounts().get(0).getMountPath());
        Pod env = firstPlan(Path.of("kubernetes/examples/t9k/04-env.yaml")).podsToCreate().get(0);
        assertEquals("secret-name", training(env).getEnv().stream().filter(e -> e.getName().equals("ENV_REFERENCED"))
                .findFirst().orElseThrow().getValueFrom().getSecretKeyRef().getName());
    }

    @Test
    void theMasterWorkerExampleHasOneMasterAndThreeWorkersAndKeepsItsCheckpointOnAClaim() throws IOException {
        String[] documents = Files.readString(Path.of("kubernetes/examples/master-worker-ddp.yaml")).split("(?m)^---$");
        assertTrue(documents[0].contains("kind: PersistentVolumeClaim") && documents[0].contains("name: ddp-mnist-checkpoints"), documents[0]);
        List<Pod> pods = new InMemoryCluster(documents[1]).plan().podsToCreate();
        assertEquals(List.of("ddp-mnist-master-0", "ddp-mnist-worker-0", "ddp-mnist-worker-1", "ddp-mnist-worker-2"),
                pods.stream().map(p -> p.getMetadata().getName()).toList());
        assertEquals("3", PodTemplatesTest.env(pods.get(3)).get("RANK"));
        Pod master = pods.get(0);
        assertEquals("/checkpoints/checkpoint.pt", PodTemplatesTest.env(master).get("CHECKPOINT_PATH"), "rank 0 keeps the checkpoint");
        assertEquals("ddp-mnist-checkpoints", master.getSpec().getVolumes().get(0).getPersistentVolumeClaim().getClaimName());
    }

    @Test
    void verbatimSeedExamplesParse() throws IOException {
        // seed-01 is complete; seed-02 and seed-04 elide the container's name and image, so the
        // operator explains what is missing instead of creating pods the API server would reject.
        Plan<PyTorchTrainingJobStatus> basic = firstPlan(Path.of("src/test/resources/t9k-seed/seed-01.yaml"));
        assertEquals(4, basic.podsToCreate().size());
        for (String elided : List.of("seed-02.yaml", "seed-04.yaml")) {
            Plan<PyTorchTrainingJobStatus> plan = firstPlan(Path.of("src/test/resources/t9k-seed", elided));
            assertEquals(JobPhase.Failed, plan.status().phase);
            String message = plan.status().conditions.stream().filter(c -> c.type.equals("Failed")).findFirst().orElseThrow().message;
            assertTrue(message.contains("spec.replicaSpecs[0].template.spec.containers[0].name is required"), message);
        }
    }

    @Test
    void aTemplateOfTheWrongShapeFailsOnlyItsJobWithAClearMessage() {
        InMemoryCluster cluster = new InMemoryCluster("""
                metadata: {name: shape}
                spec:
                  replicaSpecs:
                  - type: worker
                    template: {spec: {containers: ["..."]}}
                """);
        Plan<PyTorchTrainingJobStatus> plan = cluster.plan();
        assertEquals(JobPhase.Failed, plan.status().phase);
        String message = plan.events().get(0).message();
        assertTrue(message.startsWith("spec.replicaSpecs[0].template is not a valid pod template"), message);
    }
}
