package dev.torchjob.operator.reconciler;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

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

    void onStop(@Observes ShutdownEvent event, Operator operator) {
        operator.stop();
    }
}
