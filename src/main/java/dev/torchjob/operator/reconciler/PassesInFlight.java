package dev.torchjob.operator.reconciler;

import java.time.Duration;
import java.time.Instant;

import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

/**
 * The job passes running now, so that a shutdown lets them finish. JOSDK stops its reconciler threads
 * at once when the operator stops (its termination timeout is zero; quarkus-operator-sdk's setting for it
 * installs JOSDK's own JVM shutdown hook, which stops the operator again after Quarkus has shut down):
 * a pass cut off between its status write and its events loses the event of a restart
 * it just counted, and the next leader, seeing the restart counted, never says it. So on shutdown no
 * new pass starts and the running ones are waited for, briefly, before the operator stops.
 */
@Singleton
public class PassesInFlight {
    private static final Logger LOG = Logger.getLogger(PassesInFlight.class);

    private int running;
    private boolean draining;

    /** False once the operator is shutting down: the pass must do nothing (the next leader does it). */
    synchronized boolean enter() {
        if (draining) {
            return false;
        }
        running++;
        return true;
    }

    synchronized void exit() {
        running--;
        notifyAll();
    }

    /** Lets no new pass start and waits up to {@code bound} for the running ones to end. */
    synchronized void drain(Duration bound) {
        draining = true;
        Instant deadline = Instant.now().plus(bound);
        try {
            while (running > 0) {
                long left = Duration.between(Instant.now(), deadline).toMillis();
                if (left <= 0) {
                    LOG.warnf("%d job pass(es) still running after %s: stopping anyway", running, bound);
                    return;
                }
                wait(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
