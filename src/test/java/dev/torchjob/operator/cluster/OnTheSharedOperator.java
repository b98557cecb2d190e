package dev.torchjob.operator.cluster;

import org.junit.jupiter.api.BeforeAll;

import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * A test class on the JVM's control plane with the shared operator running (installed as the README
 * says, started once for every class that needs it): what each such class would otherwise set up itself.
 */
public abstract class OnTheSharedOperator {
    protected static OperatorInstall install;
    protected static KubernetesClient admin;
    protected static Kubectl kubectl;

    @BeforeAll
    static void sharedOperator() {
        install = OperatorInstall.get();
        install.operator();
        admin = install.cluster.admin();
        kubectl = install.cluster.kubectl();
    }
}
