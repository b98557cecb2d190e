package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.CustomResource;

/**
 * What a replica's process gets on this machine: the command line and environment the kubelet would give its
 * training container, with the job's names pointing here. The pods are the operator's own, planned from the
 * examples, where they can be.
 */
class ReplicaProcessTest {
    static final Path YAML_FOLDER = Path.of("/jobs");

    static List<Pod> firstPods(String file) throws Exception {
        CustomResource<?, ?> job = LocalLauncher.read(Path.of(file));
        job.getMetadata().setUid("uid-1");
        job.getMetadata().setNamespace("default");
        job.getMetadata().setGeneration(1L);
        return DryRun.firstPlan(job, Instant.parse("2026-01-01T00:00:00Z")).podsToCreate();
    }

    static ReplicaProcess process(List<Pod> pods, String name) {
        return onAWorkstation(pods.stream().filter(p -> p.getMetadata().getName().equals(name)).findFirst().orElseThrow());
    }

    static ReplicaProcess onAWorkstation(Pod pod) {
        return ReplicaProcess.of(pod, YAML_FOLDER, DownwardApiTest.WORKSTATION);
    }

    static Pod pod(String subdomain, String workingDir, List<String> command, EnvVar... env) {
        return new PodBuilder().withNewMetadata().withName("j-worker-0").endMetadata().withNewSpec().withSubdomain(subdomain)
                .addNewContainer().withName("pytorch").withWorkingDir(workingDir).withCommand(command).withEnv(env).endContainer()
                .endSpec().build();
    }

    static EnvVar env(String name, String value) {
        return new EnvVar(name, value, null);
    }

    @Test
    void aT9kReplicaReachesItsMasterHereAndRunsItsCommandFromTheYamlsFolder() throws Exception {
        List<Pod> pods = firstPods("kubernetes/examples/local/ddp-job.yaml");
        ReplicaProcess worker = process(pods, "ddp-local-worker-0");
        assertEquals(List.of("python3", "train.py"), worker.argv());
        assertEquals("127.0.0.1", worker.environment().get("MASTER_ADDR"), "the master's DNS name, <pod>.<job>, is this machine");
        assertEquals("1", worker.environment().get("RANK"));
        assertEquals("2", worker.environment().get("WORLD_SIZE"));
        assertEquals(YAML_FOLDER, worker.workingDirectory());
        assertEquals(List.of(), worker.leftOut());
    }

    @Test
    void aKubeflowReplicaReachesTheMastersServiceHere() throws Exception {
        ReplicaProcess worker = process(firstPods("kubernetes/examples/local/ddp-pytorchjob.yaml"), "ddp-kubeflow-worker-0");
        assertEquals("127.0.0.1", worker.environment().get("MASTER_ADDR"), "the master's Service, <job>-master-0, is this machine");
    }

    @Test
    void onlyTheTorchrunWhoseHostTheEndpointNamesHostsTheRendezvousAndItsEndpointIsHere() throws Exception {
        List<Pod> pods = firstPods("kubernetes/examples/t9k/05-torchrun.yaml");
        List<String> host = process(pods, "pytorch-torchrun-worker-0").argv();
        assertEquals(List.of("torchrun", "--rdzv_conf=is_host=true"), host.subList(0, 2));
        assertEquals(true, host.stream().anyMatch(word -> word.matches("--rdzv_endpoint=127\\.0\\.0\\.1:[0-9]+")), host.toString());
        assertEquals("--rdzv_conf=is_host=false", process(pods, "pytorch-torchrun-worker-3").argv().get(1));
    }

    @Test
    void variablesExpandAsKubernetesExpandsThem() {
        Pod pod = pod(null, null, List.of("sh", "-c", "echo $(A) $(LATER) $(NONE) $$(A) $$ $(A"),
                env("A", "a$1\\b"), env("B", "[$(A)]"), env("LATER_USER", "$(LATER)"), env("LATER", "late"));
        ReplicaProcess process = onAWorkstation(pod);
        assertEquals("[a$1\\b]", process.environment().get("B"), "an earlier variable, its $ and \\ as written");
        assertEquals("$(LATER)", process.environment().get("LATER_USER"), "only earlier variables expand in env");
        assertEquals("echo a$1\\b late $(NONE) $(A) $ $(A", process.argv().get(2),
                "the command sees every variable; undefined ones and $$ escapes stay as the kubelet leaves them");
    }

    @Test
    void valueFromIsResolvedAsTheKubeletWouldHereAndWhatIsNotHereIsSaid() {
        EnvVar podName = new EnvVarBuilder().withName("POD_NAME").withNewValueFrom().withNewFieldRef().withFieldPath("metadata.name")
                .endFieldRef().endValueFrom().build();
        EnvVar podIp = new EnvVarBuilder().withName("POD_IP").withNewValueFrom().withNewFieldRef().withFieldPath("status.podIP")
                .endFieldRef().endValueFrom().build();
        EnvVar threads = new EnvVarBuilder().withName("OMP_NUM_THREADS").withNewValueFrom().withNewResourceFieldRef()
                .withResource("limits.cpu").endResourceFieldRef().endValueFrom().build();
        EnvVar token = new EnvVarBuilder().withName("TOKEN").withNewValueFrom().withNewSecretKeyRef().withName("hub").withKey("token")
                .endSecretKeyRef().endValueFrom().build();
        ReplicaProcess process = onAWorkstation(pod(null, null, List.of("python3", "train.py"), podName, podIp, threads, token,
                env("ADDR", "$(POD_IP):80"), env("AUTH", "Bearer $(TOKEN)")));
        assertEquals("j-worker-0", process.environment().get("POD_NAME"));
        assertEquals("127.0.0.1:80", process.environment().get("ADDR"), "a resolved value is there for the variables after it");
        assertEquals("8", process.environment().get("OMP_NUM_THREADS"), "no CPU limit: the node's CPUs, as the kubelet says it");
        assertEquals(List.of("TOKEN uses valueFrom, and its Secret hub is not on this machine; skipped"), process.leftOut());
        assertEquals("Bearer $(TOKEN)", process.environment().get("AUTH"), "an unresolved variable stays as written where it is used");
    }

    @Test
    void envFromIsNotOnThisMachineAndEachSourceIsSaidBeforeTheVariables() {
        Pod pod = new PodBuilder(pod(null, null, List.of("python3", "train.py"), env("A", "a"))).editSpec().editFirstContainer()
                .addNewEnvFrom().withNewConfigMapRef().withName("settings").endConfigMapRef().endEnvFrom()
                .addNewEnvFrom().withPrefix("HUB_").withNewSecretRef().withName("hub").withOptional(true).endSecretRef().endEnvFrom()
                .endContainer().endSpec().build();
        ReplicaProcess process = onAWorkstation(pod);
        assertEquals(List.of("envFrom: its ConfigMap settings is not on this machine; its variables are left out",
                "envFrom: its Secret hub is not on this machine; its variables are left out"), process.leftOut());
        assertEquals(Map.of("A", "a"), process.environment(), "the container's own env is still given");
    }

    @Test
    void theJobsNamesInEveryFormACLusterResolvesAreThisMachine() {
        for (String name : List.of("j-master-0", "j-master-0.j", "j-master-0.j.team-a", "j-master-0.j.team-a.svc",
                "j-master-0.j.team-a.svc.cluster.local", "j-master-0.team-a.svc.cluster.local", "j-launcher-12")) {
            assertEquals("127.0.0.1", ReplicaProcess.local(name, "j"), name);
            assertEquals("127.0.0.1:23456", ReplicaProcess.local(name + ":23456", "j"), name + " with a port");
        }
        for (String other : List.of("k-master-0", "j-master", "j-master-0.example.com", "http://j-master-0:80", "j-master-0.j:port")) {
            assertEquals(other, ReplicaProcess.local(other, "j"), "not one of the job's pods: " + other);
        }
    }

    @Test
    void theWorkingDirectoryIsTheContainersFromTheYamlsFolderAndNoCommandRunsNothing() {
        assertEquals(Path.of("/jobs/src"), onAWorkstation(pod("j", "src", List.of("python3"))).workingDirectory());
        assertEquals(Path.of("/workspace"), onAWorkstation(pod("j", "/workspace", List.of("python3"))).workingDirectory());
        assertEquals(List.of(), onAWorkstation(pod("j", null, List.of())).argv(), "the image's entrypoint is not run");
    }
}
