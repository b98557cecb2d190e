package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.CustomResource;

/** run --dry-run: the pods, command lines and environment the operator would create, from its own first decision. */
class DryRunTest {
    static String dryRun(String file) throws Exception {
        CustomResource<?, ?> job = LocalLauncher.read(Path.of(file));
        job.getMetadata().setUid("<uid>");
        job.getMetadata().setNamespace("default");
        job.getMetadata().setGeneration(1L);
        return DryRun.describe(job, Instant.parse("2026-01-01T00:00:00Z"));
    }

    @Test
    void theT9kExampleShowsBothPodsWithTheirCommandAndTheEnvironmentTheOperatorAdds() throws Exception {
        String out = dryRun("kubernetes/examples/local/ddp-job.yaml");
        assertTrue(out.startsWith("PyTorchTrainingJob ddp-local: 2 pods, Service ddp-local (headless)\n"), out);
        assertTrue(out.contains("pod ddp-local-master-0 (container pytorch, image torchjob-examples:0.1.0)\n  command: python3 train.py\n"), out);
        assertTrue(out.contains("pod ddp-local-worker-0 (container pytorch, image torchjob-examples:0.1.0)\n"), out);
        assertTrue(out.contains("  env EPOCHS=8\n"), out);
        assertTrue(out.contains("  env RANK=1\n"), out);
        assertTrue(out.contains("  env WORLD_SIZE=2\n"), out);
        assertTrue(out.contains("  env MASTER_ADDR=ddp-local-master-0.ddp-local\n") || out.contains("  env MASTER_ADDR=ddp-local-master-0"), out);
    }

    @Test
    void aTorchrunJobShowsTheCommandTheOperatorRewrites() throws Exception {
        String out = dryRun("kubernetes/examples/t9k/05-torchrun.yaml");
        assertTrue(out.contains("  command: torchrun --nnodes=4 --nproc_per_node=1 --max_restarts=10 --rdzv_backend=c10d"
                + " '--rdzv_endpoint=$(MASTER_ADDR):$(MASTER_PORT)' '--rdzv_id=<uid>' --role=worker train.py\n"), out);
    }

    @Test
    void theKubeflowExampleShowsKubeflowsPodsAndServices() throws Exception {
        String out = dryRun("kubernetes/examples/local/ddp-pytorchjob.yaml");
        assertTrue(out.startsWith("PyTorchJob ddp-kubeflow: 2 pods, Service ddp-kubeflow-master-0"), out);
        assertTrue(out.contains("pod ddp-kubeflow-master-0 "), out);
        assertTrue(out.contains("  env PET_NNODES=2\n") || out.contains("  env WORLD_SIZE=2\n"), out);
    }

    @Test
    void wordsAShellWouldSplitAreQuoted() {
        assertEquals("train.py", DryRun.quoted("train.py"));
        assertEquals("'hello world'", DryRun.quoted("hello world"));
        assertEquals("'it'\\''s'", DryRun.quoted("it's"));
    }
}
