package dev.torchjob.operator.apiserver;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vertx.core.http.HttpClosedException;

class ClosedConnectionTest {
    @Test
    void aConnectionThatClosedBeforeAnyAnswerIsOneToAskAgainOn() {
        assertTrue(ClosedConnection.underTheCall(new KubernetesClientException("x", new HttpClosedException("Connection was closed"))));
        assertTrue(ClosedConnection.underTheCall(new KubernetesClientException("x",
                new CompletionException(new HttpClosedException("Connection was closed")))), "however deep the client wraps it");
        assertTrue(ClosedConnection.underTheCall(new KubernetesClientException("x", new java.net.SocketException("Connection reset"))));
        assertTrue(ClosedConnection.underTheCall(new KubernetesClientException("x", new java.io.EOFException())));
    }

    @Test
    void anAbsentApiServerOrAnAnswerIsNot() {
        assertFalse(ClosedConnection.underTheCall(new KubernetesClientException("x", new java.net.ConnectException("Connection refused"))),
                "an API server that is not there is said at once");
        assertFalse(ClosedConnection.underTheCall(new KubernetesClientException("x", new java.net.SocketTimeoutException("connect timed out"))));
        assertFalse(ClosedConnection.underTheCall(new KubernetesClientException(new StatusBuilder().withCode(500).withReason("InternalError")
                .withMessage("etcdserver: request timed out").build())), "an answer is an answer");
        assertFalse(ClosedConnection.underTheCall(new IllegalStateException("no cause")));
    }
}
