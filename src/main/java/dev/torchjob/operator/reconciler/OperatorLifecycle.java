package dev.torchjob.operator.reconciler;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.javaoperatorsdk.operator.Operator;
import io.quarkus.runtime.LaunchMode;
import io.quarkus.runtime.Quarkus;
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
        try {
            StartRefusal.quietly(operator::start);
        } catch (RuntimeException e) {
            var refusal = StartRefusal.explain(e);
            if (refusal.isEmpty() || LaunchMode.current() != LaunchMode.NORMAL) {
                throw e;
            }
            System.err.println(refusal.get());
            // Nothing was reconciled yet; the shutdown releases whatever the start took.
            Quarkus.asyncExit(1);
        }
    }

    /**
     * Stops reconciling, then hands the Lease back (if held) so that another replica leads at once.
     * JOSDK's stop lets the running job passes finish first (at most
     * {@code quarkus.operator-sdk.termination-timeout}): a pass cut off between its status write and
     * its events would lose the event of a restart it just counted, and the next leader, seeing the
     * restart counted, would never say it.
     */
    void onStop(@Observes ShutdownEvent event, Operator operator, Leadership leadership, KubernetesClient client) {
        leadership.shuttingDown();
        Config clientConfig = client.getConfiguration(); // the client is closed once the operator stops
        operator.stop();
        leadership.releaseLease(clientConfig);
    }
}
