package dev.torchjob.operator.apiserver;

import java.io.EOFException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedChannelException;

import io.vertx.core.http.HttpClosedException;

/**
 * A call to the API server whose connection closed before any answer came. The HTTP client hands out
 * kept-alive connections, and one may be closed just as a call goes out on it: by the server or a load
 * balancer in front of it, or by the client itself (Vert.x closes a pooled connection when fabric8
 * cancels an earlier answer that was already complete, which it does whenever it retries a 5xx or 429:
 * eclipse-vertx/vert.x#6294). fabric8 retries only {@link IOException}s, and Vert.x says
 * {@link HttpClosedException}, which is none (fabric8io/kubernetes-client#7450). Such a call is asked
 * again on a new connection, as kubectl does; every call of ours is safe to repeat.
 */
public final class ClosedConnection {
    private ClosedConnection() {
    }

    /**
     * Whether the connection closed under the call: not a refused or timed-out connect (the API server
     * is not there), and not an answer (the API server said no).
     */
    public static boolean underTheCall(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof ConnectException || cause instanceof SocketTimeoutException) {
                return false;
            }
            if (cause instanceof HttpClosedException || cause instanceof ClosedChannelException || cause instanceof EOFException
                    || cause instanceof IOException && cause.getMessage() != null && cause.getMessage().contains("Connection reset")) {
                return true;
            }
        }
        return false;
    }
}
