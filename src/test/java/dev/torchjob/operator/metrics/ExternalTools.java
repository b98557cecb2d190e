package dev.torchjob.operator.metrics;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;

/**
 * Finds Debian's Prometheus tools. CI installs them (.ci/run), so there a missing tool fails the
 * test; on a developer machine without them the test is skipped with a message saying what to install.
 */
final class ExternalTools {
    private ExternalTools() {
    }

    static Path require(String tool) {
        Optional<Path> found = Stream.of(System.getenv("PATH").split(":"))
                .map(dir -> Path.of(dir, tool))
                .filter(Files::isExecutable)
                .findFirst();
        if (found.isEmpty() && System.getenv("CI") != null) {
            throw new AssertionError(tool + " is not installed; .ci/run installs it with: apt-get install prometheus");
        }
        Assumptions.assumeTrue(found.isPresent(), tool + " is not installed (apt-get install prometheus); skipping");
        return found.get();
    }
}
