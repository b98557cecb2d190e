package dev.torchjob.operator.cluster;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * A test class on the JVM's control plane whose tests start their own operators (with settings of their
 * own, several at once, restarted): the shared operator is stopped for the class, so that one operator at
 * a time acts on a job, and started again after it for the classes that follow.
 */
public abstract class OwnOperators {
    protected static OperatorInstall install;
    protected static KubernetesClient admin;
    protected static Kubectl kubectl;

    @BeforeAll
    static void sharedOperatorStopped() throws InterruptedException {
        install = OperatorInstall.get();
        admin = install.cluster.admin();
        kubectl = install.cluster.kubectl();
        install.stopSharedOperator();
    }

    @AfterAll
    static void sharedOperatorBack() {
        install.operator();
    }

    /** A PriorityClass the tests' pods name (server-side apply: a second class applying it changes nothing). */
    protected static void priorityClass(String name, int value) {
        kubectl.runWithInput("""
                apiVersion: scheduling.k8s.io/v1
                kind: PriorityClass
                metadata: {name: %s}
                value: %d
                preemptionPolicy: Never
                """.formatted(name, value), "apply", "--server-side", "-f", "-").orFail();
    }
}
