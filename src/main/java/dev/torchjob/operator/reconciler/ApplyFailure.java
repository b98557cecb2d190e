package dev.torchjob.operator.reconciler;

import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * A step of applying a plan that the API server refused: which step, on what, and the server's
 * own words. It is what the job's ReconcileError condition and Warning event say.
 */
public class ApplyFailure extends RuntimeException {
    /** The event reason: FailedCreatePod, FailedDeletePod, FailedCreateService, FailedCreatePodGroup, FailedStatusUpdate. */
    private final String reason;

    ApplyFailure(String reason, String target, RuntimeException cause) {
        super(target + ": " + serverMessage(cause), cause);
        this.reason = reason;
    }

    public String reason() {
        return reason;
    }

    /** The API server's message (which names the field or quota), else the exception's. */
    static String serverMessage(Throwable cause) {
        if (cause instanceof KubernetesClientException api && api.getStatus() != null && api.getStatus().getMessage() != null) {
            return api.getStatus().getMessage();
        }
        return cause.getMessage() == null ? cause.toString() : cause.getMessage();
    }
}
