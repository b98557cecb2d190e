package dev.torchjob.operator.install;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/** What the build leaves beside the application, once packaged. */
class PackagingIT {
    @Test
    void theOnlyManifestsTheBuildLeavesAreTheGeneratedCrds() throws IOException {
        // Quarkus's own generated Deployment is not the install (docs/install.md): the build removes it.
        try (Stream<Path> files = Files.list(Path.of("target/kubernetes"))) {
            assertEquals(List.of("pytorchjobs.kubeflow.org-v1.yml", "pytorchtrainingjobs.batch.tensorstack.dev-v1.yml"),
                    files.map(f -> f.getFileName().toString()).sorted().toList());
        }
    }
}
