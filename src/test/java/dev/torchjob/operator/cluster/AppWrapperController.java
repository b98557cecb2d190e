package dev.torchjob.operator.cluster;

import static org.awaitility.Awaitility.await;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.torchjob.operator.testing.ListenPorts;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesListBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * AppWrapper's own controller (the module Kueue integrates, built by tools/control-plane/kueue.sh), installed
 * from its manifests ({@code kubectl kustomize config/default}: namespace, ServiceAccount, RBAC, its
 * configuration, webhooks) with {@code kubernetes/appwrapper-rbac.yaml}, and run as a process under its
 * ServiceAccount, its webhooks on loopback (they label an AppWrapper with its user, check its podSets and that the
 * user may create what it wraps). Its CRD comes with {@link KueueInstall}.
 */
public final class AppWrapperController implements AutoCloseable {
    static final String NAMESPACE = "appwrapper-system";
    static final String SERVICE_ACCOUNT = "appwrapper-controller-manager";
    private static final String PROCESS = "appwrapper";
    private static final String WEBHOOKS = "https://127.0.0.1:9443";
    public static final String API_VERSION = "workload.codeflare.dev/v1beta2";
    public static final String KIND = "AppWrapper";
    /** The annotations docs/kueue.md gives an AppWrapper whose job the operator restarts, as a YAML flow map. */
    public static final String GRACE_PERIODS = "{workload.codeflare.dev.appwrapper/admissionGracePeriodDuration: 24h, "
            + "workload.codeflare.dev.appwrapper/warmupGracePeriodDuration: 24h, workload.codeflare.dev.appwrapper/failureGracePeriodDuration: 10m}";

    private final ControlPlane cluster;
    private final Path work;
    private final int healthPort = ListenPorts.free();

    private AppWrapperController(ControlPlane cluster) {
        this.cluster = cluster;
        this.work = cluster.work.resolve("appwrapper");
    }

    /** Installs and starts the controller; returns once it serves its health endpoint. */
    static AppWrapperController start(ControlPlane cluster, Path module, Path binary) {
        AppWrapperController controller = new AppWrapperController(cluster);
        try {
            controller.install(module);
            controller.run(binary);
        } catch (IOException | RuntimeException e) {
            controller.close();
            throw new AssertionError("AppWrapper's controller did not start: " + e.getMessage() + " (log in "
                    + cluster.work.resolve("logs") + ")", e);
        }
        return controller;
    }

    private void install(Path module) throws IOException {
        Files.createDirectories(work);
        WebhookCertificate.removeControllerRuntimeCerts();
        Kubectl kubectl = cluster.kubectl();
        String manifests = kubectl.run("kustomize", module.resolve("config/default").toString()).orFail().out();
        KubernetesClient admin = cluster.admin();
        KubernetesSerialization json = admin.getKubernetesSerialization();
        List<HasMetadata> objects = new ArrayList<>();
        for (HasMetadata object : admin.load(new ByteArrayInputStream(manifests.getBytes(StandardCharsets.UTF_8))).items()) {
            switch (object.getKind()) {
                // Its Pod and Services need a node network; the CRD is Kueue's install's.
                case "Deployment", "Service", "CustomResourceDefinition" -> {
                    continue;
                }
                // Its webhooks, called on loopback (its webhook server's port is fixed at 9443 in its main).
                case "MutatingWebhookConfiguration" ->
                        ((MutatingWebhookConfiguration) object).getWebhooks().forEach(w -> WebhookCertificate.atLoopback(w.getClientConfig(), WEBHOOKS));
                case "ValidatingWebhookConfiguration" ->
                        ((ValidatingWebhookConfiguration) object).getWebhooks().forEach(w -> WebhookCertificate.atLoopback(w.getClientConfig(), WEBHOOKS));
                // Its rotator keeps this pair and writes it where its webhook server reads it (controller-runtime's folder).
                case "Secret" -> ((Secret) object).setStringData(WebhookCertificate.make(work, "appwrapper", "appwrapper-ca",
                        "appwrapper-webhook-service." + NAMESPACE + ".svc", WebhookCertificate.CONTROLLER_RUNTIME_CERTS));
                // Its configuration, read at start from this ConfigMap: loopback's needs only.
                case "ConfigMap" -> ((ConfigMap) object).getData().put("config.yaml", json.asYaml(Map.of(
                        "controllerManager", Map.of("health", Map.of("bindAddress", "127.0.0.1:" + healthPort),
                                "metrics", Map.of("bindAddress", "0"), "leaderElection", false))));
                default -> {
                }
            }
            objects.add(object);
        }
        Path file = work.resolve("install.yaml");
        Files.writeString(file, json.asYaml(new KubernetesListBuilder().withItems(objects).build()));
        // With the rights docs/kueue.md has a platform team give it to make the T9k kind.
        kubectl.run("apply", "--server-side", "--force-conflicts", "-f", file.toString(), "-f", "kubernetes/appwrapper-rbac.yaml").orFail();
    }

    private void run(Path binary) throws IOException {
        Path kubeconfig = cluster.serviceAccountKubeconfig(work.resolve("appwrapper.kubeconfig"), NAMESPACE, SERVICE_ACCOUNT);
        cluster.start(PROCESS, List.of("env", "NAMESPACE=" + NAMESPACE, binary.toString(), "--kubeconfig=" + kubeconfig));
        // Ready once its certificates are in place and its webhook server answers.
        cluster.awaitHttp(PROCESS, URI.create("http://127.0.0.1:" + healthPort + "/readyz"));
    }

    /** The status of the AppWrapper {@code name} (empty while it has none, or is gone). */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> status(KubernetesClient client, String namespace, String name) {
        GenericKubernetesResource aw = client.genericKubernetesResources(API_VERSION, KIND).inNamespace(namespace).withName(name).get();
        return aw == null || aw.getAdditionalProperties().get("status") == null ? Map.of()
                : (Map<String, Object>) aw.getAdditionalProperties().get("status");
    }

    /** The AppWrapper's condition of that type (empty while it has none). */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> condition(KubernetesClient client, String namespace, String name, String type) {
        return ((List<Map<String, Object>>) status(client, namespace, name).getOrDefault("conditions", List.of())).stream()
                .filter(c -> type.equals(c.get("type"))).findFirst().orElse(Map.of());
    }

    /**
     * Makes the controller look at the AppWrapper now (it looks once a minute by itself): a merge patch of an
     * annotation, which has no resourceVersion to conflict with the controller's own writes.
     */
    public static void lookNow(KubernetesClient client, String namespace, String name) {
        client.genericKubernetesResources(API_VERSION, KIND).inNamespace(namespace).withName(name)
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"test.torchjob.dev/look\":\"" + System.nanoTime() + "\"}}}");
    }

    /** Deletes the namespace's AppWrappers and waits until the controller has let them go (its finalizer). */
    public static void deleteAll(KubernetesClient client, String namespace) {
        var appWrappers = client.genericKubernetesResources(API_VERSION, KIND).inNamespace(namespace);
        appWrappers.delete();
        await().atMost(Duration.ofSeconds(90)).until(() -> appWrappers.list().getItems().isEmpty());
    }

    /** Stops the controller and removes its webhooks (nothing would answer them); its objects and what it made stay. */
    @Override
    public void close() {
        cluster.stopProcess(PROCESS);
        try {
            WebhookCertificate.removeControllerRuntimeCerts();
        } catch (IOException e) {
            System.err.println("[appwrapper] " + WebhookCertificate.CONTROLLER_RUNTIME_CERTS + " not removed: " + e.getMessage());
        }
        KubernetesClient admin = cluster.admin();
        admin.admissionRegistration().v1().mutatingWebhookConfigurations().withLabel("app.kubernetes.io/name", "appwrapper").delete();
        admin.admissionRegistration().v1().validatingWebhookConfigurations().withLabel("app.kubernetes.io/name", "appwrapper").delete();
    }
}
