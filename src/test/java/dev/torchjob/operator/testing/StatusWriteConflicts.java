package dev.torchjob.operator.testing;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.quarkus.test.kubernetes.client.KubernetesServer;

/**
 * The mock API server made to refuse a status write whose resourceVersion is not the stored one, with 409,
 * as a real API server does: fabric8's mock (7.5.2) checks it for the main resource only and takes any
 * status update, so a controller's write made from an older copy (the operator's Workload status from its
 * cache) silently undid what another writer (Kueue's stand-in) had just written, where a real server answers
 * 409 and the writer looks again. Set with {@code @WithKubernetesTestServer(crud = true, setup = StatusWriteConflicts.class)}.
 */
public final class StatusWriteConflicts implements Consumer<KubernetesServer> {
    @Override
    public void accept(KubernetesServer server) {
        try {
            KubernetesMockServer mock = server.getKubernetesMockServer();
            KubernetesMixedDispatcher mixed = (KubernetesMixedDispatcher) field(KubernetesMockServer.class, "dispatcher").get(mock);
            // Expectations (server.expect()) still answer first; only what reaches the stored objects is checked.
            field(KubernetesMixedDispatcher.class, "kubernetesCrudDispatcher").set(mixed, new Checked());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("fabric8's mock server is not built as this helper expects: " + e, e);
        }
    }

    private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }

    /** The stored objects, each write taken alone, a status update checked against the stored resourceVersion. */
    static final class Checked extends KubernetesCrudDispatcher {
        private static final KubernetesSerialization JSON = new KubernetesSerialization();

        @Override
        public synchronized MockResponse handleUpdate(RecordedRequest request) {
            // The body is read without draining it: the stored objects read it next.
            String path = request.getPath().replaceFirst("\\?.*", "");
            if (path.endsWith("/status")) {
                GenericKubernetesResource sent = JSON.unmarshal(new String(request.getBody().getBytes(), StandardCharsets.UTF_8), GenericKubernetesResource.class);
                String expected = sent.getMetadata() == null ? null : sent.getMetadata().getResourceVersion();
                MockResponse stored = handleGet(path.substring(0, path.length() - "/status".length()));
                if (expected != null && !expected.isEmpty() && stored.code() == 200) {
                    GenericKubernetesResource current = JSON.unmarshal(new String(stored.getBody().getBytes(), StandardCharsets.UTF_8), GenericKubernetesResource.class);
                    if (!expected.equals(current.getMetadata().getResourceVersion())) {
                        return new MockResponse().setResponseCode(409).setBody("""
                                {"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409,
                                 "message": "Operation cannot be fulfilled on %s \\"%s\\": the object has been modified; please apply your changes to the latest version and try again"}
                                """.formatted(current.getKind(), current.getMetadata().getName()));
                    }
                }
            }
            return super.handleUpdate(request);
        }

        @Override
        public synchronized MockResponse handleCreate(RecordedRequest request) {
            return super.handleCreate(request);
        }

        @Override
        public synchronized MockResponse handlePatch(RecordedRequest request) {
            return super.handlePatch(request);
        }

        @Override
        public synchronized MockResponse handleDelete(String path) {
            return super.handleDelete(path);
        }
    }
}
