package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import dev.torchjob.operator.reconciler.OperatorHarness;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.authentication.TokenRequestBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * Our operator installed into the test control plane the way the README tells a platform team to:
 * {@code kubectl apply --server-side -k kubernetes/kubeflow/} (the CRDs, namespace, RBAC and an inert
 * Deployment: no deployment controller runs here); then
 * the operator runs as the install's ServiceAccount. One install and one shared operator per JVM;
 * tests that kill or freeze the operator start their own.
 */
public final class OperatorInstall {
    public static final String OPERATOR_NAMESPACE = "torchjob-system";
    public static final String SERVICE_ACCOUNT = "torchjob-operator";
    private static OperatorInstall instance;

    public final ControlPlane cluster;
    private final Path operatorKubeconfig;
    private OperatorProcess shared;
    private int started;

    private OperatorInstall(ControlPlane cluster, Path operatorKubeconfig) {
        this.cluster = cluster;
        this.operatorKubeconfig = operatorKubeconfig;
    }

    public static synchronized OperatorInstall get() {
        if (instance == null) {
            instance = into(ControlPlane.get());
        }
        return instance;
    }

    /** Installs the operator into this cluster (the shared one, or one a test started and stops itself). */
    public static OperatorInstall into(ControlPlane cluster) {
        Kubectl kubectl = cluster.kubectl();
        // As docs/install.md says (the Deployment is inert here: the tests run the operator themselves).
        kubectl.run("apply", "--server-side", "-k", "kubernetes/kubeflow/").orFail();
        kubectl.run("wait", "--for=condition=Established", "--timeout=60s",
                "crd/pytorchtrainingjobs.batch.tensorstack.dev", "crd/pytorchjobs.kubeflow.org").orFail();
        if (!cluster.runsControllers()) {
            defaultServiceAccount(cluster.admin(), OPERATOR_NAMESPACE);
        }
        try {
            return new OperatorInstall(cluster, operatorKubeconfig(cluster));
        } catch (IOException e) {
            throw new AssertionError("could not write the operator's kubeconfig: " + e.getMessage(), e);
        }
    }

    /** What the service-account controller does for each namespace, where no controller manager runs. */
    private static void defaultServiceAccount(KubernetesClient admin, String namespace) {
        admin.serviceAccounts().inNamespace(namespace).resource(new io.fabric8.kubernetes.api.model.ServiceAccountBuilder()
                .withNewMetadata().withName("default").endMetadata().build()).serverSideApply();
    }

    /** A kubeconfig holding a bound token of the install's ServiceAccount, nothing more. */
    private static Path operatorKubeconfig(ControlPlane cluster) throws IOException {
        Path file = cluster.work.resolve("operator.kubeconfig");
        ControlPlane.writeKubeconfig(file, cluster.admin().getConfiguration().getMasterUrl(), cluster.certificateAuthority(),
                token(cluster, SERVICE_ACCOUNT));
        return file;
    }

    /** A bound token (TokenRequest API) of a ServiceAccount of the operator's namespace, as the kubelet mounts one. */
    public static String token(ControlPlane cluster, String serviceAccount) {
        return token(cluster, OPERATOR_NAMESPACE, serviceAccount);
    }

    /** A bound token of a ServiceAccount of any namespace: a user with exactly the rights its RoleBindings give. */
    public static String token(ControlPlane cluster, String namespace, String serviceAccount) {
        return cluster.admin().serviceAccounts().inNamespace(namespace).withName(serviceAccount)
                .tokenRequest(new TokenRequestBuilder().withNewSpec().withExpirationSeconds(24 * 3600L).endSpec().build())
                .getStatus().getToken();
    }

    /**
     * kubectl, with kubectl-torchjob on PATH, as a person a platform team gave roles in one namespace: a
     * ServiceAccount {@code user} of the namespace, bound there to each of {@code roles} ({@code ClusterRole/edit}
     * for Kubernetes' own edit, {@code Role/NAME} for a Role of the namespace), holding nothing else.
     */
    public Kubectl kubectlAs(String namespace, String user, String... roles) {
        KubernetesClient admin = cluster.admin();
        admin.serviceAccounts().inNamespace(namespace).resource(new io.fabric8.kubernetes.api.model.ServiceAccountBuilder()
                .withNewMetadata().withName(user).endMetadata().build()).create();
        for (String role : roles) {
            String[] kindAndName = role.split("/", 2);
            admin.rbac().roleBindings().inNamespace(namespace).resource(new io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder()
                    .withNewMetadata().withName(user + "-" + kindAndName[1]).endMetadata()
                    .withNewRoleRef("rbac.authorization.k8s.io", kindAndName[0], kindAndName[1])
                    .addNewSubject().withKind("ServiceAccount").withName(user).withNamespace(namespace).endSubject().build()).create();
        }
        try {
            Path kubeconfig = cluster.serviceAccountKubeconfig(cluster.work.resolve(namespace + "-" + user + ".kubeconfig"), namespace, user);
            return cluster.kubectl().withPlugins(dev.torchjob.operator.testing.PackagedOperator.asKubectlPlugin(cluster.work.resolve("plugins")),
                    kubeconfig);
        } catch (IOException e) {
            throw new AssertionError("could not write " + user + "'s kubeconfig: " + e.getMessage(), e);
        }
    }

    /** A kubeconfig with the operator's identity (its ServiceAccount's token). */
    public Path operatorKubeconfig() {
        return operatorKubeconfig;
    }

    /** kubectl with the operator's executable on PATH as kubectl-torchjob (docs/user-guide.md), as the cluster administrator. */
    public Kubectl kubectlWithPlugin() {
        try {
            return cluster.kubectl().withPlugins(dev.torchjob.operator.testing.PackagedOperator.asKubectlPlugin(cluster.work.resolve("plugins")),
                    cluster.adminKubeconfig);
        } catch (IOException e) {
            throw new AssertionError("could not install kubectl-torchjob: " + e.getMessage(), e);
        }
    }

    /** The operator every test shares, started on first use. */
    public synchronized OperatorProcess operator() {
        if (shared == null) {
            shared = newOperator(Map.of(), true);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    shared.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        return shared;
    }

    /**
     * A new operator process with extra settings (system properties); the caller stops it. Restarts
     * happen at once unless a test sets {@code torchjob.restart-backoff.initial}: tests about other
     * things should not wait out the back-off.
     */
    public synchronized OperatorProcess newOperator(Map<String, String> settings, boolean leaderElection) {
        OperatorProcess operator = start(settings, leaderElection);
        // With leader election it works once it leads: after a kill -9 of the last leader, once the Lease expires.
        return leaderElection ? operator.awaitLeading(Duration.ofSeconds(60)) : operator;
    }

    /**
     * A new operator process, without leader election, that reaches the API server at {@code apiServer} (a relay),
     * with these settings (system properties).
     */
    public synchronized OperatorProcess newOperatorReaching(java.net.URI apiServer, Map<String, String> settings) {
        Path kubeconfig = cluster.work.resolve("operator-via-" + apiServer.getPort() + ".kubeconfig");
        try {
            ControlPlane.writeKubeconfig(kubeconfig, apiServer.toString(), cluster.certificateAuthority(), token(cluster, SERVICE_ACCOUNT));
        } catch (IOException e) {
            throw new AssertionError("could not write the operator's kubeconfig: " + e.getMessage(), e);
        }
        return start(kubeconfig, settings, false);
    }

    /** A second replica while another leads: ready, standing by, not leading. */
    public synchronized OperatorProcess newStandby(Map<String, String> settings) {
        return start(settings, true);
    }

    private OperatorProcess start(Map<String, String> settings, boolean leaderElection) {
        try {
            // A fresh token each start: a test may have replaced the ServiceAccount (the install moved to Helm
            // and back), and a token bound to the old one is refused (401).
            operatorKubeconfig(cluster);
        } catch (IOException e) {
            throw new AssertionError("could not write the operator's kubeconfig: " + e.getMessage(), e);
        }
        return start(operatorKubeconfig, settings, leaderElection);
    }

    private OperatorProcess start(Path kubeconfig, Map<String, String> settings, boolean leaderElection) {
        Path log = cluster.work.resolve("logs").resolve("operator-" + (++started) + ".log");
        // As the kubernetes/kubeflow/ overlay installs it: both job kinds served.
        // The tier's CoreDNS keeps answers 5 s (its Corefile: cache 5, ttl 5): a group restarting sooner waits that out.
        Map<String, String> all = new java.util.HashMap<>(Map.of("torchjob.restart-backoff.initial", "0s", "torchjob.kubeflow.enabled", "true",
                "torchjob.restart-backoff.dns-cache", "5s"));
        all.putAll(settings);
        try {
            return new OperatorProcess(kubeconfig, log, all, leaderElection).start();
        } catch (IOException e) {
            throw new AssertionError("the operator did not start: " + e.getMessage(), e);
        }
    }

    /** Stops the shared operator, so a test can run its own (two operators would both reconcile). */
    public synchronized void stopSharedOperator() throws InterruptedException {
        if (shared != null) {
            shared.close();
            shared = null;
        }
    }

    /** A fresh namespace for one test, and the harness that works in it with kwok as the kubelet. */
    public OperatorHarness harness(String prefix) {
        String namespace = namespace(prefix);
        return new OperatorHarness(cluster.admin(), namespace, new KwokKubelet(cluster.admin(), namespace));
    }

    /** A fresh namespace for one test, with its default ServiceAccount in place (pods need it). */
    public String namespace(String prefix) {
        String name = prefix + "-" + Long.toString(System.nanoTime() % 1_000_000_000L, 36);
        KubernetesClient admin = cluster.admin();
        admin.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(name).endMetadata().build()).create();
        if (!cluster.runsControllers()) {
            defaultServiceAccount(admin, name);
        }
        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        while (admin.serviceAccounts().inNamespace(name).withName("default").get() == null) {
            if (Instant.now().isAfter(deadline)) {
                throw new AssertionError("the service-account controller did not create default in " + name);
            }
            ControlPlane.sleep(100);
        }
        return name;
    }
}
