package dev.torchjob.operator.install;

import static dev.torchjob.operator.install.InstallManifestsTest.load;
import static dev.torchjob.operator.install.InstallManifestsTest.only;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.torchjob.operator.testing.PackagedOperator;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.Deployment;

/**
 * The images (native/Containerfile, native/Containerfile.jvm) and the Deployment that runs them
 * agree: user, port, probe paths, writable paths and heap. (The Helm chart's Deployment is held to
 * the manifest's in HelmChartTest; ContainerImageIT runs the image as the manifest says.)
 */
class ContainerImageTest {
    private static final Pattern DIRECTIVE = Pattern.compile("^(FROM|USER|EXPOSE|ENTRYPOINT|ENV|COPY) (.*)$", Pattern.MULTILINE);

    private static String directive(String containerfile, String name) {
        Matcher m = DIRECTIVE.matcher(containerfile);
        String found = null;
        while (m.find()) {
            if (m.group(1).equals(name)) {
                found = m.group(2).strip();
            }
        }
        return found;
    }

    private static Container operator(Deployment deployment) {
        return deployment.getSpec().getTemplate().getSpec().getContainers().get(0);
    }

    @ParameterizedTest
    @ValueSource(strings = { "native/Containerfile", "native/Containerfile.jvm" })
    void theImageRunsAsTheDeploymentSaysOnItsPortAndPaths(String file) throws IOException {
        String containerfile = Files.readString(Path.of(file));
        Deployment deployment = only(load("base/deployment.yaml"), Deployment.class);
        var pod = deployment.getSpec().getTemplate().getSpec();
        Container operator = operator(deployment);

        assertEquals(pod.getSecurityContext().getRunAsUser() + ":" + pod.getSecurityContext().getRunAsGroup(),
                directive(containerfile, "USER"), "the image's user is the one the Deployment runs it as");
        int port = operator.getPorts().get(0).getContainerPort();
        assertEquals(String.valueOf(port), directive(containerfile, "EXPOSE"));
        assertEquals(String.valueOf(port), applicationProperties().getProperty("quarkus.http.port"));
        assertEquals("http", operator.getLivenessProbe().getHttpGet().getPort().getStrVal());
        assertEquals("http", operator.getReadinessProbe().getHttpGet().getPort().getStrVal());
        assertTrue(containerfile.contains("(/q/health/live, /q/health/ready) and metrics (/q/metrics)"),
                "the paths the probes and the Service use are the ones the image's comment names");

        assertEquals(List.of("/tmp"), operator.getVolumeMounts().stream().map(m -> m.getMountPath()).toList(),
                "/tmp, where Quarkus and Vert.x write, is the only writable path of the read-only root");
        assertTrue(DIRECTIVE.matcher(containerfile).results().filter(r -> r.group(1).equals("FROM"))
                .allMatch(r -> r.group(2).startsWith("docker.io/library/debian:bookworm-slim") || r.group(2).equals("scratch")),
                "every stage starts from the base tools/images/base.sh stands in for where no registry is reachable, or from nothing");
        assertTrue(Files.readString(Path.of("tools/images/base.sh")).contains("image=docker.io/library/debian:bookworm-slim"));
        String entrypoint = directive(containerfile, "ENTRYPOINT");
        assertTrue(entrypoint.contains("/opt/torchjob-operator/"), entrypoint);
        assertTrue(DIRECTIVE.matcher(containerfile).results().filter(r -> r.group(1).equals("COPY"))
                .allMatch(r -> r.group(2).contains(" /opt/torchjob-operator/") || r.group(2).equals("--from=java-runtime /opt/java /opt/java")
                        || r.group(2).equals("--from=runtime-files /runtime/ /")),
                "everything the image adds is under /opt/torchjob-operator (and the JVM image's linked Java runtime under /opt/java,"
                        + " the native image's C libraries and certificates from Debian's packages)");
    }

    /** Both images keep the same heap ceiling under the Deployment's memory limit, and the same young generation. */
    @org.junit.jupiter.api.Test
    void bothImagesHaveTheSameHeapCeilingUnderTheDeploymentsLimit() throws IOException {
        Deployment deployment = only(load("base/deployment.yaml"), Deployment.class);
        long limit = Quantity.getAmountInBytes(operator(deployment).getResources().getLimits().get("memory")).longValue();

        Matcher percentage = Pattern.compile("-XX:MaxRAMPercentage=(\\d+)").matcher(Files.readString(Path.of("native/Containerfile.jvm")));
        assertTrue(percentage.find(), "the JVM image sizes its heap from the container's limit");
        long jvmHeap = limit * Long.parseLong(percentage.group(1)) / 100;

        Matcher nativeHeap = Pattern.compile("-R:MaxHeapSize=(\\d+)m").matcher(applicationProperties().getProperty("quarkus.native.additional-build-args"));
        assertTrue(nativeHeap.find(), "the native executable has its heap ceiling built in");
        assertEquals(Long.parseLong(nativeHeap.group(1)) * 1024 * 1024, jvmHeap);

        // The young generation too: capped alike, it keeps both processes' memory under load alike.
        Matcher jvmYoung = Pattern.compile("-XX:MaxNewSize=(\\w+)").matcher(Files.readString(Path.of("native/Containerfile.jvm")));
        Matcher nativeYoung = Pattern.compile("-R:MaxNewSize=(\\w+)").matcher(applicationProperties().getProperty("quarkus.native.additional-build-args"));
        assertTrue(jvmYoung.find() && nativeYoung.find(), "both images cap the young generation");
        assertEquals(nativeYoung.group(1), jvmYoung.group(1));
    }

    /** The real-cluster tier starts the jar with the JVM image's options and environment, sized by the Deployment's limit. */
    @org.junit.jupiter.api.Test
    void theTestsRunTheJarAsTheImageRunsIt() {
        if (PackagedOperator.isNative()) {
            return;
        }
        List<String> options = PackagedOperator.shippedVmOptions();
        assertEquals("-XX:MaxRAM=" + 512 * 1024 * 1024, options.get(0), "the Deployment's 512Mi limit");
        assertTrue(options.containsAll(List.of("-XX:MaxRAMPercentage=50", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")), options.toString());
        assertEquals(Map.of("MALLOC_ARENA_MAX", "2"), PackagedOperator.shippedEnvironment());
    }

    private static Properties applicationProperties() throws IOException {
        Properties properties = new Properties();
        try (InputStream in = Files.newInputStream(Path.of("src/main/resources/application.properties"))) {
            properties.load(in);
        }
        return properties;
    }
}
