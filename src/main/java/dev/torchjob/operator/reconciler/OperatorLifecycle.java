package dev.torchjob.operator.reconciler;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.javaoperatorsdk.operator.Operator;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;

/**
 * Starts and stops the operator with the application. quarkus-operator-sdk does this itself only
 * when the application has no QuarkusApplication; the local mode adds one, so we do it here for
 * every mode alike.
 */
@Singleton
public class OperatorLifecycle {
    private static final Logger LOG = Logger.getLogger(OperatorLifecycle.class);

    void onStart(@Observes StartupEvent event, Operator operator) {
        LOG.infof("starting the operator with %d reconciler(s)", operator.getRegisteredControllersNumber());
        operator.start();
    }

    /** Stops reconciling, then hands the Lease back (if held) so that another replica leads at once. */
    void onStop(@Observes ShutdownEvent event, Operator operator, Leadership leadership, KubernetesClient client) {
        leadership.shuttingDown();
        Config clientConfig = client.getConfiguration(); // the client is closed once the operator stops
        operator.stop();
        leadership.releaseLease(clientConfig);
    }
}
