package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.javaoperatorsdk.operator.OperatorException;

/** What the operator says when the API server refuses its first watches (the real server's words in ContainerImageIT). */
class StartRefusalTest {

    /** As JOSDK hands it over: the refused list several wrappers deep. */
    private static RuntimeException refusedAtStart(int code, String message) {
        var refused = new KubernetesClientException(new StatusBuilder().withCode(code).withMessage(message).build());
        return new OperatorException("Error starting operator", new OperatorException(new ExecutionException(
                new OperatorException("Couldn't start informer for pytorchtrainingjobs.batch.tensorstack.dev/v1beta1 resources",
                        new CompletionException(refused)))));
    }

    @Test
    void aWatchForbiddenByRbacNamesWhatWasRefusedAndTheRbacToApply() {
        String said = "pytorchtrainingjobs.batch.tensorstack.dev is forbidden: User \"system:serviceaccount:torchjob-system:x\""
                + " cannot list resource \"pytorchtrainingjobs\" in API group \"batch.tensorstack.dev\" at the cluster scope";
        String line = StartRefusal.explain(refusedAtStart(403, said)).orElseThrow();
        assertTrue(line.startsWith("error: not allowed: " + said + "."), line);
        assertTrue(line.contains("kubernetes/base/rbac.yaml"), line);
        assertEquals(1, line.lines().count());
    }

    @Test
    void anApiTheClusterDoesNotServeSaysToInstallTheCrds() {
        String line = StartRefusal.explain(refusedAtStart(404, "the server could not find the requested resource")).orElseThrow();
        assertTrue(line.startsWith("error: the cluster does not serve an API the operator watches: the server could not find"), line);
        assertTrue(line.contains("kubernetes/base/crd/"), line);
    }

    @Test
    void otherFailuresAreLeftAsTheyAre() {
        assertEquals(Optional.empty(), StartRefusal.explain(refusedAtStart(500, "etcdserver: request timed out")));
        assertEquals(Optional.empty(), StartRefusal.explain(new OperatorException("Connection was closed")));
    }
}
