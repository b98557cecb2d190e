package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.awaitility.Awaitility.await;

import dev.torchjob.operator.testing.ListenPorts;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * The real gang schedulers in the test control plane, built from their Go modules
 * (tools/control-plane/gang-schedulers.sh) and run as processes on loopback with the administrator's
 * kubeconfig: Volcano's scheduler and its controller manager (the queue controller opens the
 * {@code default} queue the scheduler creates), with Volcano's own CRDs; scheduler-plugins'
 * kube-scheduler with its coscheduling plugin, with its PodGroup CRD; each with the operator's PodGroup RBAC of its
 * install overlay. Stopped by the tests that started them.
 */
public final class GangSchedulers implements AutoCloseable {
    /** The PodGroup kinds, as the operator's setting names them. */
    public static final ResourceDefinitionContext PLUGINS_POD_GROUPS = new ResourceDefinitionContext.Builder().withGroup("scheduling.x-k8s.io")
            .withVersion("v1alpha1").withKind("PodGroup").withPlural("podgroups").withNamespaced(true).build();
    public static final ResourceDefinitionContext VOLCANO_POD_GROUPS = new ResourceDefinitionContext.Builder().withGroup("scheduling.volcano.sh")
            .withVersion("v1beta1").withKind("PodGroup").withPlural("podgroups").withNamespaced(true).build();
    /** Kubernetes' own (the Workload API): served by the API server, read by the default kube-scheduler. */
    public static final ResourceDefinitionContext KUBERNETES_POD_GROUPS = new ResourceDefinitionContext.Builder().withGroup("scheduling.k8s.io")
            .withVersion("v1beta1").withKind("PodGroup").withPlural("podgroups").withNamespaced(true).build();
    static final ResourceDefinitionContext QUEUES = new ResourceDefinitionContext.Builder().withGroup("scheduling.volcano.sh")
            .withVersion("v1beta1").withKind("Queue").withPlural("queues").withNamespaced(false).build();
    private static final List<String> VOLCANO = List.of("vc-scheduler", "vc-controller-manager");
    /** The second scheduler's name, as scheduler-plugins' own install names it. */
    public static final String COSCHEDULING = "scheduler-plugins-scheduler";

    private final ControlPlane cluster;

    private GangSchedulers(ControlPlane cluster) {
        this.cluster = cluster;
    }

    /** Volcano's CRDs installed, its scheduler and controller manager started; returns once the default queue is Open. */
    public static GangSchedulers volcano(ControlPlane cluster) {
        List<String> provisioned = ControlPlane.provisioned("control-plane/gang-schedulers.sh");
        Path bin = Path.of(provisioned.get(0));
        Path module = Path.of(provisioned.get(1));
        GangSchedulers schedulers = new GangSchedulers(cluster);
        try {
            cluster.kubectl().run("apply", "--server-side", "--force-conflicts", "-f",
                    module.resolve("config/crd/volcano/bases").toString()).orFail();
            // The operator's PodGroup RBAC, as the install's overlay for this scheduler grants it.
            cluster.kubectl().run("apply", "--server-side", "-f", "kubernetes/gang-scheduling/volcano/rbac.yaml").orFail();
            String kubeconfig = "--kubeconfig=" + cluster.adminKubeconfig;
            int schedulerHealth = ListenPorts.free();
            cluster.start("vc-scheduler", List.of(bin.resolve("scheduler").toString(), kubeconfig, "--leader-elect=false",
                    "--scheduler-name=volcano", "--listen-address=127.0.0.1:" + ListenPorts.free(),
                    "--enable-healthz", "--healthz-address=127.0.0.1:" + schedulerHealth, "--cache-dumper=false"));
            int controllerHealth = ListenPorts.free();
            cluster.start("vc-controller-manager", List.of(bin.resolve("controller-manager").toString(), kubeconfig, "--leader-elect=false",
                    "--controllers=queue-controller,pg-controller", "--listen-address=127.0.0.1:" + ListenPorts.free(),
                    "--enable-healthz", "--healthz-address=127.0.0.1:" + controllerHealth));
            cluster.awaitHttp("vc-scheduler", URI.create("http://127.0.0.1:" + schedulerHealth + "/healthz"));
            cluster.awaitHttp("vc-controller-manager", URI.create("http://127.0.0.1:" + controllerHealth + "/healthz"));
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250)).until(() -> {
                GenericKubernetesResource queue = cluster.admin().genericKubernetesResources(QUEUES).withName("default").get();
                Object status = queue == null ? null : queue.getAdditionalProperties().get("status");
                return status instanceof java.util.Map<?, ?> map && "Open".equals(map.get("state"));
            });
        } catch (IOException | RuntimeException e) {
            schedulers.close();
            throw new AssertionError("Volcano did not start: " + e.getMessage() + " (logs in " + cluster.work.resolve("logs") + ")", e);
        }
        return schedulers;
    }

    /**
     * scheduler-plugins' kube-scheduler as a second scheduler named {@link #COSCHEDULING}, its Coscheduling
     * plugin on (queue sort and permit, as the project's own coscheduling config), with its PodGroup CRD.
     */
    public static GangSchedulers coscheduling(ControlPlane cluster) {
        List<String> provisioned = ControlPlane.provisioned("control-plane/gang-schedulers.sh");
        Path binary = Path.of(provisioned.get(2));
        Path module = Path.of(provisioned.get(3));
        GangSchedulers schedulers = new GangSchedulers(cluster);
        try {
            cluster.kubectl().run("apply", "--server-side", "--force-conflicts", "-f",
                    module.resolve("manifests/coscheduling/crd.yaml").toString()).orFail();
            cluster.kubectl().run("apply", "--server-side", "-f", "kubernetes/gang-scheduling/scheduler-plugins/rbac.yaml").orFail();
            Path config = cluster.work.resolve("coscheduling.yaml");
            java.nio.file.Files.writeString(config, """
                    apiVersion: kubescheduler.config.k8s.io/v1
                    kind: KubeSchedulerConfiguration
                    leaderElection: {leaderElect: false}
                    clientConnection: {kubeconfig: %s}
                    profiles:
                    - schedulerName: %s
                      plugins:
                        multiPoint: {enabled: [{name: Coscheduling}]}
                        queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}
                      pluginConfig:
                      - name: Coscheduling
                        args: {permitWaitingTimeSeconds: 10}
                    """.formatted(cluster.adminKubeconfig, COSCHEDULING));
            int port = ListenPorts.free();
            cluster.start(COSCHEDULING, List.of(binary.toString(), "--config=" + config, "--secure-port=" + port,
                    "--bind-address=127.0.0.1"));
            cluster.awaitHttp(COSCHEDULING, URI.create("https://127.0.0.1:" + port + "/healthz"));
        } catch (IOException | RuntimeException e) {
            schedulers.close();
            throw new AssertionError("scheduler-plugins did not start: " + e.getMessage() + " (logs in " + cluster.work.resolve("logs") + ")", e);
        }
        return schedulers;
    }

    /**
     * Kubernetes' own gang scheduling: nothing to start (the control plane's scheduler, its GenericWorkload feature gate
     * on), the operator's PodGroup RBAC of its install overlay; skipped where the API server does not serve the PodGroups.
     */
    public static GangSchedulers kubernetes(ControlPlane cluster) {
        org.junit.jupiter.api.Assumptions.assumeTrue(cluster.admin().getApiGroups().getGroups().stream()
                .anyMatch(g -> g.getName().equals("scheduling.k8s.io") && g.getVersions().stream().anyMatch(v -> v.getVersion().equals("v1beta1"))),
                "this cluster does not serve scheduling.k8s.io/v1beta1 (Kubernetes 1.37 with the GenericWorkload feature gate)");
        cluster.kubectl().run("apply", "--server-side", "-f", "kubernetes/gang-scheduling/kubernetes/rbac.yaml").orFail();
        return new GangSchedulers(cluster);
    }

    @Override
    public void close() {
        VOLCANO.forEach(cluster::stopProcess);
        cluster.stopProcess(COSCHEDULING);
    }
}
