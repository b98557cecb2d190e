package dev.torchjob.operator.reconciler;

import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * The API server refusing the operator's first watches: its ServiceAccount lacks the RBAC of the
 * install (403), or the cluster does not serve a job API (404: the CRDs are not installed). Both are
 * mistakes of the install that no retry mends, so the operator says which in one line and exits;
 * without this, fabric8's informer and JOSDK each log the same exception with its stack trace and
 * Quarkus a third, and the line that matters is lost among them.
 */
final class StartRefusal {
    /** The loggers that would print the refused watch's stack trace while the operator starts. */
    private static final String[] STARTUP_ERROR_LOGGERS = {
            "io.fabric8.kubernetes.client.informers.impl.cache.Reflector",
            "io.javaoperatorsdk.operator.processing.event.source.informer.InformerWrapper" };

    private StartRefusal() {
    }

    /** What to tell the user, when {@code failure} is the API server refusing the install; empty otherwise. */
    static Optional<String> explain(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof KubernetesClientException refused && (refused.getCode() == 403 || refused.getCode() == 404)) {
                String said = refused.getStatus() != null && refused.getStatus().getMessage() != null
                        ? refused.getStatus().getMessage() : refused.getMessage();
                return Optional.of(refused.getCode() == 403
                        ? "error: not allowed: " + said + ". The operator's ServiceAccount needs the ClusterRole and binding of"
                                + " kubernetes/base/rbac.yaml (the Helm chart installs the same); then restart the operator."
                        : "error: the cluster does not serve an API the operator watches: " + said + ". Install the CRDs"
                                + " (kubernetes/base/crd/, or the Helm chart) before the operator.");
            }
        }
        return Optional.empty();
    }

    /** Runs {@code start} with the informers' start-up error logs off (the exception still reaches the caller). */
    static void quietly(Runnable start) {
        Level[] before = new Level[STARTUP_ERROR_LOGGERS.length];
        for (int i = 0; i < STARTUP_ERROR_LOGGERS.length; i++) {
            before[i] = Logger.getLogger(STARTUP_ERROR_LOGGERS[i]).getLevel();
            Logger.getLogger(STARTUP_ERROR_LOGGERS[i]).setLevel(Level.OFF);
        }
        try {
            start.run();
        } finally {
            for (int i = 0; i < STARTUP_ERROR_LOGGERS.length; i++) {
                Logger.getLogger(STARTUP_ERROR_LOGGERS[i]).setLevel(before[i]);
            }
        }
    }
}
