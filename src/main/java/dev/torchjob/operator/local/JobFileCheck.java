package dev.torchjob.operator.local;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.Quantity;

/**
 * Checks a job file as the API server would with strict field validation ({@code kubectl apply
 * --validate=strict}), before anything starts: YAML syntax with line and column, one document, every
 * field known to the CRD's schema (or, inside the open pod template, to the Kubernetes API), types,
 * and enum values. Each problem is one line naming the line, column and field path, with "did you
 * mean" for a near miss.
 */
final class JobFileCheck {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final Map<String, String> CRD_OF_KIND = Map.of(
            "batch.tensorstack.dev/v1beta1 PyTorchTrainingJob", "/crd/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml",
            "kubeflow.org/v1 PyTorchJob", "/crd/pytorchjobs.kubeflow.org-v1.yml");
    private static final Map<String, JsonNode> SCHEMAS = new HashMap<>();
    /** Every object's own fields, which a CRD's schema need not list. */
    private static final List<String> ROOT_FIELDS = List.of("apiVersion", "kind", "metadata");

    /** A problem at a place in the file. */
    record Problem(int line, int column, String text) {
        @Override
        public String toString() {
            return line > 0 ? "line " + line + ", column " + column + ": " + text : text;
        }
    }

    /** Where each field's name, and each value, starts: an unknown field is shown at its name, a wrong value at the value. */
    private final Map<String, JsonLocation> names = new HashMap<>();
    private final Map<String, JsonLocation> values = new HashMap<>();
    private final List<Problem> problems = new ArrayList<>();
    private final List<Problem> duplicates = new ArrayList<>();

    private JobFileCheck() {
    }

    /** The file's problems, in file order; empty when the API server would accept it as it is. */
    static List<Problem> problemsWith(String yaml) {
        JobFileCheck check = new JobFileCheck();
        List<JsonNode> documents;
        try {
            documents = check.parse(yaml);
        } catch (JsonProcessingException e) {
            return List.of(syntaxError(e));
        } catch (IOException e) {
            return List.of(new Problem(0, 0, e.getMessage()));
        }
        if (documents.isEmpty()) {
            return List.of(new Problem(0, 0, "the file is empty"));
        }
        if (documents.size() > 1) {
            return List.of(new Problem(0, 0, "the file holds " + documents.size() + " YAML documents ("
                    + documents.stream().map(d -> d.path("kind").asText("?")).collect(Collectors.joining(", "))
                    + "); the local mode runs one job: put each in its own file"));
        }
        if (!check.duplicates.isEmpty()) {
            return List.copyOf(check.duplicates);
        }
        JsonNode job = documents.get(0);
        if (!job.isObject()) {
            return List.of(new Problem(1, 1, "the file holds " + job.getNodeType().toString().toLowerCase() + ", not a job"));
        }
        String kind = job.path("apiVersion").asText() + " " + job.path("kind").asText();
        Optional<JsonNode> schema = schemaOf(kind);
        if (schema.isEmpty()) {
            return List.of(); // not a job kind: the reader says which kinds are
        }
        check.object(job, schema.get(), "");
        check.problems.sort(Comparator.comparingInt(Problem::line).thenComparingInt(Problem::column));
        return List.copyOf(check.problems);
    }

    private static Problem syntaxError(JsonProcessingException e) {
        JsonLocation at = e.getLocation();
        String problem = e.getOriginalMessage();
        // SnakeYAML's own words ("mapping values are not allowed here"), without its excerpt of the file.
        Throwable cause = e.getCause();
        if (cause instanceof org.yaml.snakeyaml.error.MarkedYAMLException marked && marked.getProblem() != null) {
            problem = marked.getProblem();
            if (marked.getProblemMark() != null) {
                return new Problem(marked.getProblemMark().getLine() + 1, marked.getProblemMark().getColumn() + 1, "not valid YAML: " + problem);
            }
        }
        problem = problem.lines().findFirst().orElse(problem).trim();
        return new Problem(at == null ? 0 : at.getLineNr(), at == null ? 0 : at.getColumnNr(), "not valid YAML: " + problem);
    }

    private static synchronized Optional<JsonNode> schemaOf(String kind) {
        String resource = CRD_OF_KIND.get(kind);
        if (resource == null) {
            return Optional.empty();
        }
        return Optional.of(SCHEMAS.computeIfAbsent(kind, k -> {
            try (InputStream crd = JobFileCheck.class.getResourceAsStream(resource)) {
                if (crd == null) {
                    throw new IllegalStateException("CRD " + resource + " is missing from the application");
                }
                return YAML.readTree(crd).at("/spec/versions/0/schema/openAPIV3Schema");
            } catch (IOException e) {
                throw new IllegalStateException("cannot read CRD " + resource + ": " + e.getMessage(), e);
            }
        }));
    }

    /** The documents of the file, remembering where each field and item starts. */
    private List<JsonNode> parse(String yaml) throws IOException {
        List<JsonNode> documents = new ArrayList<>();
        try (JsonParser parser = YAML.getFactory().createParser(yaml)) {
            while (parser.nextToken() != null) {
                JsonNode document = value(parser, "");
                if (document != null && !document.isNull()) {
                    documents.add(document);
                }
            }
        }
        return documents;
    }

    private JsonNode value(JsonParser parser, String path) throws IOException {
        values.put(path, parser.currentTokenLocation());
        JsonToken token = parser.currentToken();
        if (token == JsonToken.START_OBJECT) {
            ObjectNode object = JsonNodeFactory.instance.objectNode();
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String name = parser.currentName();
                String fieldPath = path.isEmpty() ? name : path + "." + name;
                if (object.has(name)) {
                    // YAML parsers keep the last; the API server's strict validation refuses the file.
                    duplicates.add(new Problem(parser.currentTokenLocation().getLineNr(), parser.currentTokenLocation().getColumnNr(),
                            "duplicate field \"" + fieldPath + "\""));
                }
                names.put(fieldPath, parser.currentTokenLocation());
                parser.nextToken();
                object.set(name, value(parser, fieldPath));
            }
            return object;
        }
        if (token == JsonToken.START_ARRAY) {
            ArrayNode array = JsonNodeFactory.instance.arrayNode();
            while (parser.nextToken() != JsonToken.END_ARRAY) {
                array.add(value(parser, path + "[" + array.size() + "]"));
            }
            return array;
        }
        return YAML.readTree(parser);
    }

    private void problem(String path, String text) {
        JsonLocation at = text.startsWith("unknown field") ? names.get(path) : values.get(path);
        problems.add(new Problem(at == null ? 0 : at.getLineNr(), at == null ? 0 : at.getColumnNr(), text));
    }

    // ---- the CRD's structural schema -------------------------------------------------------------

    private void check(JsonNode node, JsonNode schema, String path) {
        if (node == null || node.isNull()) {
            return;
        }
        String type = schema.path("type").asText("");
        if (schema.path("x-kubernetes-int-or-string").asBoolean()) {
            if (!node.isIntegralNumber() && !node.isTextual()) {
                problem(path, path + ": expected an integer or a string");
            }
            return;
        }
        switch (type) {
            case "object" -> object(node, schema, path);
            case "array" -> {
                if (!node.isArray()) {
                    problem(path, path + ": expected a list");
                    return;
                }
                for (int i = 0; i < node.size(); i++) {
                    check(node.get(i), schema.path("items"), path + "[" + i + "]");
                }
            }
            case "string" -> {
                if (!node.isTextual()) {
                    problem(path, path + ": expected a string, found " + node.asText() + (node.isNumber() || node.isBoolean() ? " (quote it)" : ""));
                }
            }
            case "integer" -> {
                if (!node.isIntegralNumber()) {
                    problem(path, path + ": expected an integer, found " + describe(node));
                }
            }
            case "number" -> {
                if (!node.isNumber()) {
                    problem(path, path + ": expected a number, found " + describe(node));
                }
            }
            case "boolean" -> {
                if (!node.isBoolean()) {
                    problem(path, path + ": expected true or false, found " + describe(node));
                }
            }
            default -> {
            }
        }
        JsonNode allowed = schema.get("enum");
        if (allowed != null && allowed.isArray() && node.isValueNode()) {
            List<String> values = new ArrayList<>();
            allowed.forEach(v -> values.add(v.asText()));
            if (!values.contains(node.asText())) {
                problem(path, path + ": \"" + node.asText() + "\" is not one of " + String.join(", ", values)
                        + nearest(node.asText(), values).map(v -> " (did you mean " + v + "?)").orElse(""));
            }
        }
    }

    private void object(JsonNode node, JsonNode schema, String path) {
        if (!node.isObject()) {
            problem(path, path + ": expected an object (key: value lines), found " + describe(node));
            return;
        }
        if (path.isEmpty()) {
            // The API server checks metadata against ObjectMeta, which the CRD's schema leaves out.
            if (node.has("metadata")) {
                model(node.get("metadata"), YAML.constructType(ObjectMeta.class), "metadata");
            }
        }
        JsonNode properties = schema.get("properties");
        boolean open = schema.path("x-kubernetes-preserve-unknown-fields").asBoolean();
        if (properties == null || !properties.isObject()) {
            if (open && path.endsWith(".template")) {
                model(node, YAML.constructType(PodTemplateSpec.class), path); // Kubernetes's own pod template
            } else if (schema.has("additionalProperties") && schema.get("additionalProperties").isObject()) {
                node.properties().forEach(e -> check(e.getValue(), schema.get("additionalProperties"), child(path, e.getKey())));
            }
            return;
        }
        List<String> known = new ArrayList<>();
        properties.fieldNames().forEachRemaining(known::add);
        for (Map.Entry<String, JsonNode> field : node.properties()) {
            String fieldPath = child(path, field.getKey());
            if (properties.has(field.getKey())) {
                if (!(path.isEmpty() && field.getKey().equals("metadata"))) {
                    check(field.getValue(), properties.get(field.getKey()), fieldPath);
                }
            } else if (!open && !(path.isEmpty() && ROOT_FIELDS.contains(field.getKey()))) {
                unknown(fieldPath, field.getKey(), known);
            }
        }
    }

    private void unknown(String path, String field, List<String> known) {
        problem(path, "unknown field \"" + path + "\"" + nearest(field, known).map(k -> " (did you mean " + k + "?)").orElse(""));
    }

    // ---- Kubernetes's own types, for the parts the CRD leaves open (the pod template, metadata) ----

    private void model(JsonNode node, JavaType type, String path) {
        if (node == null || node.isNull()) {
            return;
        }
        Class<?> raw = type.getRawClass();
        if (type.isCollectionLikeType()) {
            if (!node.isArray()) {
                problem(path, path + ": expected a list, found " + describe(node));
                return;
            }
            for (int i = 0; i < node.size(); i++) {
                model(node.get(i), type.getContentType(), path + "[" + i + "]");
            }
        } else if (type.isMapLikeType()) {
            if (!node.isObject()) {
                problem(path, path + ": expected an object (key: value lines), found " + describe(node));
                return;
            }
            node.properties().forEach(e -> model(e.getValue(), type.getContentType(), child(path, e.getKey())));
        } else if (raw == String.class) {
            if (!node.isTextual()) {
                problem(path, path + ": expected a string, found " + node.asText() + (node.isNumber() || node.isBoolean() ? " (quote it)" : ""));
            }
        } else if (raw == Integer.class || raw == Long.class || raw == int.class || raw == long.class) {
            if (!node.isIntegralNumber()) {
                problem(path, path + ": expected an integer, found " + describe(node));
            }
        } else if (raw == Boolean.class || raw == boolean.class) {
            if (!node.isBoolean()) {
                problem(path, path + ": expected true or false, found " + describe(node));
            }
        } else if (raw == IntOrString.class || raw == Quantity.class) {
            if (!node.isValueNode()) {
                problem(path, path + ": expected a number or a string, found " + describe(node));
            }
        } else if (raw.getName().startsWith("io.fabric8.kubernetes.api.model")) {
            if (!node.isObject()) {
                problem(path, path + ": expected an object (key: value lines), found " + describe(node));
                return;
            }
            BeanDescription bean = YAML.getDeserializationConfig().introspect(type);
            Map<String, JavaType> fields = new HashMap<>();
            for (BeanPropertyDefinition property : bean.findProperties()) {
                if (property.hasSetter() || property.hasField()) {
                    fields.put(property.getName(), property.getPrimaryType());
                }
            }
            List<String> known = new ArrayList<>(fields.keySet());
            node.properties().forEach(e -> {
                String fieldPath = child(path, e.getKey());
                JavaType fieldType = fields.get(e.getKey());
                if (fieldType == null) {
                    unknown(fieldPath, e.getKey(), known);
                } else {
                    model(e.getValue(), fieldType, fieldPath);
                }
            });
        }
    }

    private static String child(String path, String field) {
        return path.isEmpty() ? field : path + "." + field;
    }

    private static String describe(JsonNode node) {
        if (node.isTextual()) {
            return "\"" + node.asText() + "\"";
        }
        if (node.isObject()) {
            return "an object";
        }
        if (node.isArray()) {
            return "a list";
        }
        return node.asText();
    }

    /** The known name closest to a misspelled one, if it is close enough to be what was meant. */
    static Optional<String> nearest(String typed, List<String> known) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : known) {
            int distance = candidate.equalsIgnoreCase(typed) ? 0 : editDistance(typed.toLowerCase(), candidate.toLowerCase());
            if (distance < bestDistance) {
                best = candidate;
                bestDistance = distance;
            }
        }
        return best != null && bestDistance <= Math.max(1, Math.min(3, typed.length() / 3)) ? Optional.of(best) : Optional.empty();
    }

    private static int editDistance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }
}
