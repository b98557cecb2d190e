package dev.torchjob.operator.cluster;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import dev.torchjob.operator.testing.ListenPorts;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * Kubeflow's own training-operator v1 (tools/control-plane/kubeflow-training-operator.sh) as a process
 * on the test control plane, for Kubeflow's behaviour first-hand: PyTorchJob only, watching one
 * namespace, with the administrator's kubeconfig. Stop this operator while it runs: both would act on
 * the same jobs.
 */
public final class KubeflowTrainingOperator implements AutoCloseable {
    static final String PROCESS = "kubeflow-training-operator";
    /** Fixed in its code (pkg/cert): where a pod would mount the webhook certificate's Secret. */
    private static final Path CERTS = WebhookCertificate.CONTROLLER_RUNTIME_CERTS;
    private static final String CERT_SECRET = "training-operator-webhook-cert";

    /** Kubeflow's init container template (pkg/controller.v1/pytorch/initcontainer.go), its nslookup loop in Python. */
    static final String INIT_CONTAINER = """
            - name: init-pytorch
              image: {{.InitContainerImage}}
              imagePullPolicy: IfNotPresent
              resources: {limits: {cpu: 100m, memory: 64Mi}, requests: {cpu: 50m, memory: 10Mi}}
              command:
              - python
              - -c
              - |
                import socket, sys, time
                for _ in range({{.MaxTries}}):
                    try:
                        socket.gethostbyname("{{.MasterAddr}}")
                        sys.exit(0)
                    except OSError:
                        print("waiting for master", flush=True)
                        time.sleep(2)
                sys.exit(1)
            """;

    private final ControlPlane cluster;

    private KubeflowTrainingOperator(ControlPlane cluster) {
        this.cluster = cluster;
    }

    /**
     * Started on {@code namespace} with {@code --gang-scheduler-name} (none when null); returns once it
     * is ready, its controllers registered.
     */
    public static KubeflowTrainingOperator start(ControlPlane cluster, String namespace, String gangSchedulerName) {
        Path binary = Path.of(ControlPlane.provisioned("control-plane/kubeflow-training-operator.sh").get(0));
        KubernetesClient admin = cluster.admin();
        KubeflowTrainingOperator operator = new KubeflowTrainingOperator(cluster);
        try {
            // It registers its controllers only once its webhook certificate is in place: its rotator fills
            // a Secret it expects to exist, then waits for the files a pod would mount from that Secret.
            admin.secrets().inNamespace(namespace).resource(new SecretBuilder().withNewMetadata().withName(CERT_SECRET)
                    .endMetadata().build()).create();
            // The rotator only waits for tls.crt to exist: a folder left by an earlier start would let its webhook
            // server read the files while they are rewritten below (seen: "failed to find any PEM data").
            WebhookCertificate.removeControllerRuntimeCerts();
            int probes = ListenPorts.free();
            List<String> command = new ArrayList<>(List.of("env", "MY_POD_NAMESPACE=" + namespace, binary.toString(),
                    "--kubeconfig=" + cluster.adminKubeconfig, "--enable-scheme=pytorchjob", "--namespace=" + namespace,
                    "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:" + probes,
                    "--webhook-server-port=" + ListenPorts.free()));
            // Its init container waits for the master's name with nslookup in alpine, an image no registry here serves:
            // the same wait, written in the examples' image that every node has (kwok only marks it done).
            Path initContainer = cluster.work.resolve("kubeflow-init-container.yaml");
            Files.writeString(initContainer, INIT_CONTAINER);
            command.addAll(List.of("--pytorch-init-container-image=" + RealNodeJobs.EXAMPLES_IMAGE,
                    "--pytorch-init-container-template-file=" + initContainer));
            if (gangSchedulerName != null) {
                command.add("--gang-scheduler-name=" + gangSchedulerName);
            }
            cluster.start(PROCESS, command);
            Secret certificate = await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(
                    () -> admin.secrets().inNamespace(namespace).withName(CERT_SECRET).get(),
                    s -> s.getData() != null && s.getData().containsKey("tls.crt"));
            // All files at once, as a mounted Secret appears: written aside, then the folder renamed into place.
            Files.createDirectories(CERTS.getParent());
            Path staging = Files.createTempDirectory(CERTS.getParent(), "serving-certs-");
            for (Map.Entry<String, String> file : certificate.getData().entrySet()) {
                Files.write(staging.resolve(file.getKey()), Base64.getDecoder().decode(file.getValue()));
            }
            Files.move(staging, CERTS, StandardCopyOption.ATOMIC_MOVE);
            cluster.awaitHttp(PROCESS, URI.create("http://127.0.0.1:" + probes + "/readyz"));
        } catch (IOException | RuntimeException e) {
            operator.close();
            throw new AssertionError("Kubeflow's training-operator did not start: " + e.getMessage() + " (logs in "
                    + cluster.work.resolve("logs") + ")", e);
        }
        return operator;
    }

    @Override
    public void close() {
        cluster.stopProcess(PROCESS);
    }
}
