package dev.torchjob.operator.reconciler;

import java.util.function.Supplier;

import dev.torchjob.operator.apiserver.ClosedConnection;
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

    /** A read a step needs (an object the plan names): its failure is that step's, said with the server's words. */
    static <T> T reading(String reason, String target, Supplier<T> read) {
        try {
            return read.get();
        } catch (RuntimeException e) {
            throw new ApplyFailure(reason, target, e);
        }
    }

    public String reason() {
        return reason;
    }

    /** The API server's HTTP status for the refused call; 0 when it did not answer. */
    public int code() {
        return getCause() instanceof KubernetesClientException api ? api.getCode() : 0;
    }

    /** No answer came: the connection closed under the call (the server may or may not have done it). */
    public boolean unanswered() {
        return ClosedConnection.underTheCall(getCause());
    }

    /** Refused because the job's namespace is being deleted: the job goes with it. */
    public boolean namespaceTerminating() {
        return namespaceTerminating(getCause());
    }

    /** The namespace lifecycle admission's refusal of new objects in a namespace being deleted. */
    static boolean namespaceTerminating(Throwable cause) {
        if (!(cause instanceof KubernetesClientException api) || api.getCode() != 403 || api.getStatus() == null) {
            return false;
        }
        var details = api.getStatus().getDetails();
        return details != null && details.getCauses() != null
                && details.getCauses().stream().anyMatch(c -> "NamespaceTerminating".equals(c.getReason()))
                || api.getStatus().getMessage() != null && api.getStatus().getMessage().contains("because it is being terminated");
    }

    /** The API server's message (which names the field or quota), else the exception's. */
    static String serverMessage(Throwable cause) {
        if (cause instanceof KubernetesClientException api && api.getStatus() != null && api.getStatus().getMessage() != null) {
            return api.getStatus().getMessage();
        }
        return cause.getMessage() == null ? cause.toString() : cause.getMessage();
    }
}
