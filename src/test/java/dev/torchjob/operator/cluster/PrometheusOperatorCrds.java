package dev.torchjob.operator.cluster;

import java.nio.file.Path;

/**
 * The Prometheus Operator's ServiceMonitor and PrometheusRule CRDs in the test control plane, as a
 * cluster running the Prometheus Operator has them: the project's own CRD files, from its Go module
 * ({@code tools/monitoring/prometheus-operator-crds.sh}). Installed once per test JVM.
 */
public final class PrometheusOperatorCrds {
    static final String SERVICE_MONITORS = "servicemonitors.monitoring.coreos.com";
    static final String PROMETHEUS_RULES = "prometheusrules.monitoring.coreos.com";
    /** The control planes they are installed in (the shared one, and any a test starts of its own). */
    private static final java.util.Set<ControlPlane> INSTALLED = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

    private PrometheusOperatorCrds() {
    }

    public static synchronized void install(ControlPlane cluster) {
        if (INSTALLED.contains(cluster)) {
            return;
        }
        Path crds = Path.of(provision());
        Kubectl kubectl = cluster.kubectl();
        kubectl.run("apply", "--server-side", "-f", crds.resolve("monitoring.coreos.com_servicemonitors.yaml").toString(),
                "-f", crds.resolve("monitoring.coreos.com_prometheusrules.yaml").toString()).orFail();
        kubectl.run("wait", "--for=condition=Established", "--timeout=60s", "crd/" + SERVICE_MONITORS, "crd/" + PROMETHEUS_RULES).orFail();
        INSTALLED.add(cluster);
    }

    private static String provision() {
        java.util.List<String> lines = ControlPlane.provisioned("monitoring/prometheus-operator-crds.sh");
        return lines.get(lines.size() - 1);
    }
}
