package dev.torchjob.operator.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;

/**
 * Finds the Debian tools some tests run (Prometheus, promtool, podman). CI installs them (.ci/run),
 * so there a missing tool fails the test; on a developer machine without them the test is skipped
 * with a message saying what to install.
 */
public final class ExternalTools {
    private ExternalTools() {
    }

    /** The tool on the PATH; {@code packages} are the Debian packages that bring it (and what it needs). */
    public static Path require(String tool, String packages) {
        Optional<Path> found = Stream.of(System.getenv("PATH").split(":"))
                .map(dir -> Path.of(dir, tool))
                .filter(Files::isExecutable)
                .findFirst();
        if (found.isEmpty() && System.getenv("CI") != null) {
            throw new AssertionError(tool + " is not installed; .ci/run installs it with: apt-get install " + packages);
        }
        Assumptions.assumeTrue(found.isPresent(), tool + " is not installed (apt-get install " + packages + "); skipping");
        return found.get();
    }
}
