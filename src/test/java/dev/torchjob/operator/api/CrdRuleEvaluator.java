package dev.torchjob.operator.api;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import dev.cel.common.types.SimpleType;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;

/**
 * Does what the API server does with the CRD's schema on create and update, so far as the mock
 * server cannot: applies schema defaults, then evaluates every x-kubernetes-validations rule
 * (transition rules only on update, where the old value exists) with cel-java.
 */
public final class CrdRuleEvaluator {
    public static final Path CRD_FILE = Path.of("kubernetes/base/crd/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml");
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private final Map<String, Object> schema;
    private final CelCompiler compiler = CelCompilerFactory.standardCelCompilerBuilder()
            .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
            .addVar("self", SimpleType.DYN)
            .addVar("oldSelf", SimpleType.DYN)
            .build();
    private final CelRuntime runtime = CelRuntimeFactory.standardCelRuntimeBuilder().build();

    @SuppressWarnings("unchecked")
    public CrdRuleEvaluator() throws IOException {
        Map<String, Object> crd = YAML.readValue(Files.readString(CRD_FILE), Map.class);
        Map<String, Object> spec = (Map<String, Object>) crd.get("spec");
        Map<String, Object> version = ((List<Map<String, Object>>) spec.get("versions")).get(0);
        this.schema = (Map<String, Object>) ((Map<String, Object>) version.get("schema")).get("openAPIV3Schema");
    }

    public Map<String, Object> schema() {
        return schema;
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> parse(String yaml) throws IOException {
        return YAML.readValue(yaml, Map.class);
    }

    /** Messages of the rules that reject the object; empty when the API server would accept it. */
    public List<String> violations(Map<String, Object> object, Map<String, Object> old) {
        Object defaulted = applyDefaults(schema, deepCopy(object));
        Object oldDefaulted = old == null ? null : applyDefaults(schema, deepCopy(old));
        List<String> violations = new ArrayList<>();
        check(schema, toCel(defaulted), oldDefaulted == null ? null : toCel(oldDefaulted), "", violations);
        return violations;
    }

    public List<String> violations(Map<String, Object> object) {
        return violations(object, null);
    }

    @SuppressWarnings("unchecked")
    private void check(Map<String, Object> node, Object value, Object old, String path, List<String> violations) {
        if (value == null) {
            return;
        }
        List<Map<String, Object>> rules = (List<Map<String, Object>>) node.get("x-kubernetes-validations");
        if (rules != null) {
            for (Map<String, Object> rule : rules) {
                String expression = (String) rule.get("rule");
                boolean transition = expression.contains("oldSelf");
                if (transition && old == null) {
                    continue;
                }
                Map<String, Object> vars = new HashMap<>();
                vars.put("self", value);
                if (transition) {
                    vars.put("oldSelf", old);
                }
                if (!Boolean.TRUE.equals(evaluate(expression, vars))) {
                    violations.add(path + ": " + rule.get("message"));
                }
            }
        }
        Map<String, Map<String, Object>> properties = (Map<String, Map<String, Object>>) node.get("properties");
        if (properties != null && value instanceof Map<?, ?> map) {
            for (var property : properties.entrySet()) {
                Object oldChild = old instanceof Map<?, ?> oldMap ? oldMap.get(property.getKey()) : null;
                check(property.getValue(), map.get(property.getKey()), oldChild, path + "." + property.getKey(), violations);
            }
        }
        Map<String, Object> items = (Map<String, Object>) node.get("items");
        if (items != null && value instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                // List items are correlated by index only for map-type lists; ours are atomic: no transition rules on items.
                check(items, list.get(i), null, path + "[" + i + "]", violations);
            }
        }
    }

    private Object evaluate(String expression, Map<String, Object> vars) {
        try {
            var ast = compiler.compile(expression).getAst();
            return runtime.createProgram(ast).eval(vars);
        } catch (Exception e) {
            throw new AssertionError("CEL rule does not evaluate: " + expression + ": " + e.getMessage(), e);
        }
    }

    /** Compiles every rule of the schema; fails on the first that does not parse or type-check. */
    @SuppressWarnings("unchecked")
    public int compileAll(Map<String, Object> node) throws Exception {
        int count = 0;
        List<Map<String, Object>> rules = (List<Map<String, Object>>) node.get("x-kubernetes-validations");
        if (rules != null) {
            for (Map<String, Object> rule : rules) {
                compiler.compile((String) rule.get("rule")).getAst();
                count++;
            }
        }
        Map<String, Map<String, Object>> properties = (Map<String, Map<String, Object>>) node.get("properties");
        if (properties != null) {
            for (Map<String, Object> child : properties.values()) {
                count += compileAll(child);
            }
        }
        if (node.get("items") instanceof Map<?, ?> items) {
            count += compileAll((Map<String, Object>) items);
        }
        return count;
    }

    /** Schema defaults, applied as the API server does before validation. */
    @SuppressWarnings("unchecked")
    static Object applyDefaults(Map<String, Object> node, Object value) {
        if (value instanceof Map<?, ?> raw) {
            Map<String, Object> map = (Map<String, Object>) raw;
            Map<String, Map<String, Object>> properties = (Map<String, Map<String, Object>>) node.get("properties");
            if (properties != null) {
                for (var property : properties.entrySet()) {
                    if (!map.containsKey(property.getKey()) && property.getValue().containsKey("default")) {
                        map.put(property.getKey(), deepCopy(property.getValue().get("default")));
                    }
                    if (map.containsKey(property.getKey())) {
                        map.put(property.getKey(), applyDefaults(property.getValue(), map.get(property.getKey())));
                    }
                }
            }
        } else if (value instanceof List<?> raw && node.get("items") instanceof Map<?, ?> items) {
            List<Object> list = (List<Object>) raw;
            list.replaceAll(item -> applyDefaults((Map<String, Object>) items, item));
        }
        return value;
    }

    private static Object deepCopy(Object value) {
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> copy = new LinkedHashMap<>();
            map.forEach((k, v) -> copy.put((String) k, deepCopy(v)));
            return copy;
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(v -> copy.add(deepCopy(v)));
            return copy;
        }
        return value;
    }

    /** CEL ints are 64-bit: YAML's Integers become Longs. */
    private static Object toCel(Object value) {
        if (value instanceof Integer i) {
            return i.longValue();
        }
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> copy = new LinkedHashMap<>();
            map.forEach((k, v) -> copy.put((String) k, toCel(v)));
            return copy;
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(v -> copy.add(toCel(v)));
            return copy;
        }
        return value;
    }
}
