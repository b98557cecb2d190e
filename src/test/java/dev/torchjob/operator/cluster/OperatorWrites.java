package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import io.fabric8.kubernetes.client.utils.Serialization;

/** The operator's writes as the API server's audit log recorded them: what the operator really sent. */
public record OperatorWrites(List<Write> all) {

    /**
     * One request: verb (create, update, patch, delete), resource[/subresource], namespace, name, answer code, and
     * the body sent where the audit policy keeps it (Workload status writes), else an empty map.
     */
    public record Write(String verb, String resource, String namespace, String name, int code, Map<String, Object> body) {
    }

    /** Reads the audit log, waiting a little for the API server's batch writer to flush. */
    @SuppressWarnings("unchecked")
    public static OperatorWrites read(ControlPlane cluster) {
        ControlPlane.sleep(1500);
        Path log = cluster.auditLog();
        try (var lines = Files.lines(log)) {
            return new OperatorWrites(lines.filter(l -> !l.isBlank()).map(l -> {
                Map<String, Object> event = Serialization.unmarshal(l, Map.class);
                Map<String, Object> ref = (Map<String, Object>) event.getOrDefault("objectRef", Map.of());
                Map<String, Object> status = (Map<String, Object>) event.getOrDefault("responseStatus", Map.of());
                String resource = (String) ref.get("resource");
                if (ref.get("subresource") != null) {
                    resource += "/" + ref.get("subresource");
                }
                return new Write((String) event.get("verb"), resource, (String) ref.get("namespace"), (String) ref.get("name"),
                        ((Number) status.getOrDefault("code", 0)).intValue(),
                        (Map<String, Object>) event.getOrDefault("requestObject", Map.of()));
            }).toList());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public List<Write> which(Predicate<Write> which) {
        return all.stream().filter(which).toList();
    }

    public long count(Predicate<Write> which) {
        return all.stream().filter(which).count();
    }

    public long count(String namespace, String verb, String resource, int code) {
        return count(w -> namespace.equals(w.namespace()) && verb.equals(w.verb()) && resource.equals(w.resource()) && w.code() == code);
    }
}
