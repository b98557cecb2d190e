package dev.torchjob.operator.api;

import java.io.IOException;
import java.util.function.Function;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;

/**
 * Reads the spec or status of a job so that a value the Java types cannot hold (a job stored under
 * an older or hand-edited CRD, say) never fails the read: one such job would otherwise stop the
 * informer that reads every job. The part is read as an empty one that names the field it could
 * not read; the adapter then fails that job alone, saying which field.
 *
 * @param <T> the spec or status type
 */
public abstract class Unreadable<T> extends StdDeserializer<T> {
    private static final int MAX_MESSAGE = 300;
    private final Class<T> type;
    private final String part;
    private final Function<String, T> unreadable;

    protected Unreadable(Class<T> type, String part, Function<String, T> unreadable) {
        super(type);
        this.type = type;
        this.part = part;
        this.unreadable = unreadable;
    }

    @Override
    public T deserialize(JsonParser parser, DeserializationContext context) throws IOException {
        JsonNode tree = parser.readValueAsTree();
        try {
            return context.readTreeAsValue(tree, type);
        } catch (JsonMappingException e) {
            return unreadable.apply(problem(part, e));
        }
    }

    /** "spec.replicaSpecs[0].replicas cannot be read: ..." from the path Jackson was at. */
    static String problem(String part, JsonMappingException e) {
        StringBuilder field = new StringBuilder(part);
        for (JsonMappingException.Reference reference : e.getPath()) {
            if (reference.getFieldName() != null) {
                field.append('.').append(reference.getFieldName());
            } else if (reference.getIndex() >= 0) {
                field.append('[').append(reference.getIndex()).append(']');
            }
        }
        String cause = e.getOriginalMessage() == null ? e.getClass().getSimpleName() : e.getOriginalMessage().lines().findFirst().orElse("");
        cause = cause.replaceAll("`java\\.lang\\.(\\w+)`", "$1").replaceAll("`[\\w.$]+\\.(\\w+)`", "$1");
        String message = field + " cannot be read: " + cause;
        return message.length() <= MAX_MESSAGE ? message : message.substring(0, MAX_MESSAGE) + "…";
    }
}
