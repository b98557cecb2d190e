package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/** Which replica hosts torchrun's rendezvous when every replica is 127.0.0.1: the one the endpoint names. */
class TorchrunOnOneHostTest {
    static final List<String> LOCAL = List.of("torchrun", "--nnodes=2", "--rdzv_endpoint=127.0.0.1:23456", "train.py");
    static final List<String> CLUSTER = List.of("torchrun", "--nnodes=2", "--rdzv_endpoint=j-worker-0.j:23456", "train.py");

    @Test
    void onlyThePodTheEndpointNamesHostsIt() {
        assertEquals(List.of("torchrun", "--rdzv_conf=is_host=true", "--nnodes=2", "--rdzv_endpoint=127.0.0.1:23456", "train.py"),
                TorchrunOnOneHost.adapted(LOCAL, CLUSTER, Map.of(), "j-worker-0"));
        assertEquals("--rdzv_conf=is_host=false", TorchrunOnOneHost.adapted(LOCAL, CLUSTER, Map.of(), "j-worker-1").get(1));
        assertEquals("--rdzv_conf=is_host=false", TorchrunOnOneHost.adapted(LOCAL, CLUSTER, Map.of(), "j-worker-10").get(1),
                "j-worker-1 is a prefix of j-worker-10's name, not the same pod");
    }

    @Test
    void rendezvousSettingsGivenAreKept() {
        List<String> withConf = List.of("torchrun", "--rdzv_conf=timeout=900", "--rdzv_endpoint=127.0.0.1:23456", "train.py");
        assertEquals("--rdzv_conf=timeout=900,is_host=true",
                TorchrunOnOneHost.adapted(withConf, List.of("torchrun", "--rdzv_endpoint=j-worker-0.j:23456"), Map.of(), "j-worker-0").get(1));
        // Kubeflow gives torchrun its settings as PET_ environment variables.
        List<String> kubeflow = List.of("torchrun", "train.py");
        assertEquals(List.of("torchrun", "--rdzv_conf=join_timeout=300,is_host=true", "train.py"), TorchrunOnOneHost.adapted(kubeflow, kubeflow,
                Map.of("PET_RDZV_ENDPOINT", "j-worker-0:29400", "PET_RDZV_CONF", "join_timeout=300"), "j-worker-0"));
    }

    @Test
    void aTorchrunThatHangsIsGivenUpOnAfterTheTimeout(@TempDir Path dir) throws Exception {
        Path hanging = dir.resolve("torchrun");
        Files.writeString(hanging, "#!/bin/sh\necho starting\nsleep 600\n");
        assertTrue(hanging.toFile().setExecutable(true));
        Pod pod = new PodBuilder().withNewMetadata().withName("j-worker-0").endMetadata().withNewSpec()
                .addNewContainer().withName("pytorch").withCommand(hanging.toString()).withArgs("train.py").endContainer().endSpec().build();
        Instant start = Instant.now();
        Optional<String> refused = TorchrunOnOneHost.cannotRun(List.of(pod), dir, Duration.ofSeconds(2));
        assertTrue(Duration.between(start, Instant.now()).compareTo(Duration.ofSeconds(10)) < 0, "never a check that hangs");
        assertTrue(refused.orElseThrow().contains("did not finish a one-process job within 2 s"), refused.toString());
        assertEquals(Optional.empty(), TorchrunOnOneHost.cannotRun(List.of(new PodBuilder(pod).editSpec().editFirstContainer()
                .withCommand("python3").endContainer().endSpec().build()), dir, Duration.ofSeconds(2)), "no torchrun, nothing to check");
    }

    @Test
    void torchrunIsRecognisedInBothForms() {
        assertTrue(TorchrunOnOneHost.launches(List.of("/usr/bin/torchrun", "x.py")));
        assertTrue(TorchrunOnOneHost.launches(List.of("python3", "-m", "torch.distributed.run", "x.py")));
        assertFalse(TorchrunOnOneHost.launches(List.of("python3", "x.py")));
        assertEquals(List.of("python3", "-m", "torch.distributed.run", "--rdzv_conf=is_host=false", "--rdzv-endpoint", "127.0.0.1:1", "x.py"),
                TorchrunOnOneHost.adapted(List.of("python3", "-m", "torch.distributed.run", "--rdzv-endpoint", "127.0.0.1:1", "x.py"),
                        List.of("python3", "-m", "torch.distributed.run", "--rdzv-endpoint", "j-worker-0.j:1", "x.py"), Map.of(), "j-master-0"));
    }
}
