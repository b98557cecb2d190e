package dev.torchjob.operator.install;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.TemplateCommand;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesList;

/** The chart in kubernetes/helm, driven by real Helm (helm-java runs Helm as a native library). */
public final class HelmChart {
    public static final Path DIRECTORY = Path.of("kubernetes/helm/torchjob-operator");
    public static final String RELEASE = "torchjob-operator";
    public static final String NAMESPACE = "torchjob-system";

    private HelmChart() {
    }

    public static LintResult lint() {
        return new Helm(DIRECTORY).lint().strict().call();
    }

    /** {@code helm template}: the objects an install with these values would create. */
    public static List<HasMetadata> render(Path valuesFile, Map<String, Object> set) {
        return parse(renderText(valuesFile, set));
    }

    public static String renderText(Path valuesFile, Map<String, Object> set) {
        return renderText(valuesFile, set, NAMESPACE);
    }

    /** {@code helm template} for a release in another namespace (next to an install made another way). */
    public static String renderText(Path valuesFile, Map<String, Object> set, String namespace) {
        TemplateCommand template = new Helm(DIRECTORY).template().withName(RELEASE).withNamespace(namespace)
                .withKubeVersion(kubernetesVersion());
        if (valuesFile != null) {
            template = template.withValuesFile(valuesFile);
        }
        for (Map.Entry<String, Object> value : set.entrySet()) {
            template = template.set(value.getKey(), value.getValue());
        }
        return template.call();
    }

    /** The version of the test control plane (tools/versions.env): what the chart is rendered for. */
    static String kubernetesVersion() {
        try {
            return Files.readAllLines(Path.of("tools/versions.env")).stream()
                    .filter(line -> line.startsWith("KUBERNETES_VERSION=")).map(line -> "v" + line.substring(line.indexOf('=') + 1))
                    .findFirst().orElseThrow(() -> new IllegalStateException("no KUBERNETES_VERSION in tools/versions.env"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<HasMetadata> parse(String manifests) {
        Object parsed = InstallManifestsTest.YAML.unmarshal(manifests);
        if (parsed instanceof KubernetesList list) {
            return list.getItems();
        }
        if (parsed instanceof List<?> list) {
            return list.stream().map(HasMetadata.class::cast).toList();
        }
        return List.of((HasMetadata) parsed);
    }
}
