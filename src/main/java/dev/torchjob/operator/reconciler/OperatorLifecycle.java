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
    /** Within the 5 s a rolling upgrade should take per replica; a pass normally ends in well under a second. */
    static final java.time.Duration PASSES_BOUND = java.time.Duration.ofSeconds(3);

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
     * Lets the running job passes finish (at most {@link #PASSES_BOUND}), stops reconciling, then hands
     * the Lease back (if held) so that another replica leads at once.
     */
    void onStop(@Observes ShutdownEvent event, Operator operator, Leadership leadership, KubernetesClient client, PassesInFlight passes) {
        leadership.shuttingDown();
        Config clientConfig = client.getConfiguration(); // the client is closed once the operator stops
        passes.drain(PASSES_BOUND);
        operator.stop();
        leadership.releaseLease(clientConfig);
    }
}
