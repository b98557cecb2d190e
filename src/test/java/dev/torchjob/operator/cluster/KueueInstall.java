package dev.torchjob.operator.cluster;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.torchjob.operator.testing.ListenPorts;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesListBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * The real Kueue in the test control plane, installed as a platform team installs it: its own
 * manifests ({@code kubectl kustomize config/default} of its module, at the version in
 * tools/versions.env), configured as docs/kueue.md says (both job kinds as external
 * frameworks, {@code kubernetes/kueue-rbac.yaml}; AppWrapper's CRD beside it, for Kueue's appwrapper
 * integration), and its controller manager run as a process on
 * loopback under its ServiceAccount, webhooks and CRD conversion included. What differs from a
 * cluster is only where things live: the webhooks and conversion are called at
 * {@code https://127.0.0.1:<port>} instead of a Service, its internal certificate management finds
 * a serving certificate already valid for that address in its Secret, and the visibility API server
 * (an aggregated API behind a Service) is off.
 *
 * <p>Started by the tests that need it, stopped (webhook configurations removed) when they are done,
 * so the other tests' pods never depend on it.
 */
public final class KueueInstall implements AutoCloseable {
    static final String NAMESPACE = "kueue-system";
    static final String SERVICE_ACCOUNT = "kueue-controller-manager";
    static final String CONFIG_MAP = "kueue-manager-config";
    static final String CONFIG_KEY = "controller_manager_config.yaml";
    static final String CERT_SECRET = "kueue-webhook-server-cert";
    static final String WEBHOOK_HOST = "kueue-webhook-service." + NAMESPACE + ".svc";
    /** Kueue's waitForPodsReady timeout here: admitted pods not all ready by then are evicted and requeued. */
    public static final Duration PODS_READY_TIMEOUT = Duration.ofSeconds(20);
    /**
     * Kueue's own default timeout, for pods that really start: on the real node under load a job's pods took more
     * than 20 s to run, and an AppWrapper says its pods are ready only at its next look (every 5 s while they start).
     */
    public static final Duration DEFAULT_PODS_READY_TIMEOUT = Duration.ofMinutes(5);
    private static final String PROCESS = "kueue";

    private final ControlPlane cluster;
    private final Path binary;
    private final List<String> provisioned;
    private final Path work;
    private final int webhookPort = ListenPorts.free();
    private final int healthPort = ListenPorts.free();
    private final int metricsPort = ListenPorts.free();
    private final Duration podsReadyTimeout;

    private KueueInstall(ControlPlane cluster, List<String> provisioned, Duration podsReadyTimeout) {
        this.cluster = cluster;
        this.podsReadyTimeout = podsReadyTimeout;
        this.provisioned = provisioned;
        this.binary = Path.of(provisioned.get(0));
        this.work = cluster.work.resolve("kueue");
    }

    /** Installs Kueue and starts its controller manager; returns once it is ready (webhooks served). */
    public static KueueInstall start(ControlPlane cluster) {
        return start(cluster, PODS_READY_TIMEOUT);
    }

    /** The same, with this waitForPodsReady timeout. */
    public static KueueInstall start(ControlPlane cluster, Duration podsReadyTimeout) {
        List<String> provisioned = provision();
        KueueInstall kueue = new KueueInstall(cluster, provisioned, podsReadyTimeout);
        try {
            kueue.install(Path.of(provisioned.get(1)), Path.of(provisioned.get(2)));
            kueue.run();
        } catch (IOException | RuntimeException e) {
            kueue.close();
            throw new AssertionError("Kueue did not start: " + e.getMessage() + " (log in " + cluster.work.resolve("logs") + ")", e);
        }
        return kueue;
    }

    private static List<String> provision() {
        List<String> lines = ControlPlane.provisioned("control-plane/kueue.sh");
        if (lines.size() < 4) {
            throw new AssertionError("tools/control-plane/kueue.sh printed " + lines
                    + ", not the manager, its module, AppWrapper's module and AppWrapper's controller");
        }
        return lines.subList(lines.size() - 4, lines.size());
    }

    /** Starts AppWrapper's own controller beside Kueue (its CRD is installed with Kueue); the caller stops it. */
    public AppWrapperController startAppWrapperController() {
        return AppWrapperController.start(cluster, Path.of(provisioned.get(2)), Path.of(provisioned.get(3)));
    }

    /**
     * @param appWrapper the AppWrapper module Kueue integrates: its CRD is installed before Kueue starts, so
     *        that Kueue's appwrapper integration (on in its shipped configuration) runs from the start
     */
    private void install(Path module, Path appWrapper) throws IOException {
        Files.createDirectories(work);
        Kubectl kubectl = cluster.kubectl();
        String manifests = kubectl.run("kustomize", module.resolve("config/default").toString()).orFail().out();
        KubernetesClient admin = cluster.admin();
        KubernetesSerialization json = admin.getKubernetesSerialization();
        String base = "https://127.0.0.1:" + webhookPort;
        List<HasMetadata> objects = new ArrayList<>();
        for (HasMetadata object : admin.load(new ByteArrayInputStream(manifests.getBytes(StandardCharsets.UTF_8))).items()) {
            switch (object.getKind()) {
                // Its Pod, Service endpoints and aggregated visibility API need a node network this cluster does not have.
                case "Deployment", "APIService" -> {
                    continue;
                }
                case "MutatingWebhookConfiguration" ->
                        ((MutatingWebhookConfiguration) object).getWebhooks().forEach(w -> WebhookCertificate.atLoopback(w.getClientConfig(), base));
                case "ValidatingWebhookConfiguration" ->
                        ((ValidatingWebhookConfiguration) object).getWebhooks().forEach(w -> WebhookCertificate.atLoopback(w.getClientConfig(), base));
                case "CustomResourceDefinition" -> {
                    var conversion = ((CustomResourceDefinition) object).getSpec().getConversion();
                    if (conversion != null && conversion.getWebhook() != null) {
                        var config = conversion.getWebhook().getClientConfig();
                        config.setUrl(base + config.getService().getPath());
                        config.setService(null);
                    }
                }
                case "ConfigMap" -> ((ConfigMap) object).getData().put(CONFIG_KEY, json.asYaml(configuration(json,
                        ((ConfigMap) object).getData().get(CONFIG_KEY))));
                case "Secret" -> ((Secret) object).setStringData(WebhookCertificate.make(work, "kueue", "kueue-ca", WEBHOOK_HOST, work.resolve("certs")));
                default -> {
                }
            }
            objects.add(object);
        }
        Path file = work.resolve("install.yaml");
        Files.writeString(file, json.asYaml(new KubernetesListBuilder().withItems(objects).build()));
        kubectl.run("apply", "--server-side", "-f", file.toString(),
                "-f", "kubernetes/kueue-rbac.yaml",
                "-f", appWrapper.resolve("config/crd/bases/workload.codeflare.dev_appwrappers.yaml").toString()).orFail();
        kubectl.run("wait", "--for=condition=Established", "--timeout=60s", "crd", "-l", "app.kubernetes.io/name=kueue").orFail();
        kubectl.run("wait", "--for=condition=Established", "--timeout=60s", "crd", "appwrappers.workload.codeflare.dev").orFail();
        // The process reads its configuration from a file where the Deployment would mount the ConfigMap.
        Files.writeString(work.resolve("config.yaml"), admin.configMaps().inNamespace(NAMESPACE).withName(CONFIG_MAP).get()
                .getData().get(CONFIG_KEY));
    }

    /**
     * The shipped configuration with what docs/kueue.md tells a platform team to add (both kinds as
     * external frameworks), waitForPodsReady on (short, so its eviction is tested), and loopback's needs.
     */
    @SuppressWarnings("unchecked")
    private Map<String, Object> configuration(KubernetesSerialization json, String shipped) {
        Map<String, Object> config = json.unmarshal(shipped, LinkedHashMap.class);
        ((Map<String, Object>) config.computeIfAbsent("integrations", k -> new LinkedHashMap<>())).put("externalFrameworks",
                List.of("PyTorchTrainingJob.v1beta1.batch.tensorstack.dev", "PyTorchJob.v1.kubeflow.org"));
        config.put("waitForPodsReady", Map.of("timeout", podsReadyTimeout.toSeconds() + "s", "blockAdmission", false,
                "requeuingStrategy", Map.of("timestamp", "Eviction", "backoffBaseSeconds", 1, "backoffMaxSeconds", 5)));
        config.put("health", Map.of("healthProbeBindAddress", "127.0.0.1:" + healthPort));
        config.put("metrics", Map.of("bindAddress", "127.0.0.1:" + metricsPort));
        config.put("webhook", Map.of("port", webhookPort, "host", "127.0.0.1", "certDir", work.resolve("certs").toString()));
        config.put("leaderElection", Map.of("leaderElect", false));
        config.put("featureGates", Map.of("VisibilityOnDemand", false));
        return config;
    }

    private void run() throws IOException {
        Path kubeconfig = cluster.serviceAccountKubeconfig(work.resolve("kueue.kubeconfig"), NAMESPACE, SERVICE_ACCOUNT);
        cluster.start(PROCESS, List.of(binary.toString(), "--config=" + work.resolve("config.yaml"), "--kubeconfig=" + kubeconfig));
        // Ready once its certificates are in place and its webhook server answers.
        cluster.awaitHttp(PROCESS, URI.create("http://127.0.0.1:" + healthPort + "/readyz"));
    }

    /**
     * Restarts the controller manager the way docs/kueue.md's second row configures it: Kueue's own
     * {@code kubeflow.org/pytorchjob} integration on (it queues PyTorchJobs itself, through
     * {@code runPolicy.suspend}), and only the T9k kind left to this operator's Workload protocol.
     */
    @SuppressWarnings("unchecked")
    public void restartWithItsOwnPyTorchJobIntegration() throws IOException {
        cluster.stopProcess(PROCESS);
        KubernetesSerialization json = cluster.admin().getKubernetesSerialization();
        Map<String, Object> config = json.unmarshal(Files.readString(work.resolve("config.yaml")), LinkedHashMap.class);
        Map<String, Object> integrations = (Map<String, Object>) config.get("integrations");
        List<String> frameworks = new ArrayList<>((List<String>) integrations.getOrDefault("frameworks", List.of()));
        frameworks.add("kubeflow.org/pytorchjob");
        integrations.put("frameworks", frameworks);
        integrations.put("externalFrameworks", List.of("PyTorchTrainingJob.v1beta1.batch.tensorstack.dev"));
        Files.writeString(work.resolve("config.yaml"), json.asYaml(config));
        run();
    }

    /**
     * Queues for the jobs of one namespace: a ClusterQueue of its own with {@code cpu} of quota on the
     * flavor of the kwok nodes (ResourceFlavor {@code kwok}: node label type=kwok), preempting lower
     * priorities within it, and the LocalQueue {@code user-queue}; and the WorkloadPriorityClasses
     * {@code low} (100) and {@code high} (1000).
     */
    public void queues(String namespace, String cpu) {
        cluster.kubectl().runWithInput("""
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: ResourceFlavor
                metadata: {name: kwok}
                spec: {nodeLabels: {type: kwok}}
                ---
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: WorkloadPriorityClass
                metadata: {name: low}
                value: 100
                ---
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: WorkloadPriorityClass
                metadata: {name: high}
                value: 1000
                """, "apply", "--server-side", "-f", "-").orFail();
        queuesOn(namespace, "kwok", cpu);
    }

    /**
     * The namespace's queues on one ResourceFlavor the caller made: a ClusterQueue of its own with {@code cpu}
     * of quota on it, preempting lower priorities within it, and the LocalQueue {@code user-queue}.
     */
    public void queuesOn(String namespace, String flavor, String cpu) {
        cluster.kubectl().runWithInput("""
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: ClusterQueue
                metadata: {name: %1$s}
                spec:
                  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %1$s}}
                  preemption: {withinClusterQueue: LowerPriority}
                  resourceGroups:
                  - coveredResources: [cpu]
                    flavors:
                    - name: %2$s
                      resources: [{name: cpu, nominalQuota: "%3$s"}]
                ---
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: LocalQueue
                metadata: {name: user-queue, namespace: %1$s}
                spec: {clusterQueue: %1$s}
                """.formatted(namespace, flavor, cpu), "apply", "--server-side", "-f", "-").orFail();
    }

    /** Stops the controller manager and removes its webhooks (nothing would answer them); its API and objects stay. */
    @Override
    public void close() {
        cluster.stopProcess(PROCESS);
        KubernetesClient admin = cluster.admin();
        admin.admissionRegistration().v1().mutatingWebhookConfigurations().withLabel("app.kubernetes.io/name", "kueue").delete();
        admin.admissionRegistration().v1().validatingWebhookConfigurations().withLabel("app.kubernetes.io/name", "kueue").delete();
    }
}
