package dev.torchjob.operator.api;

import java.io.IOException;
import java.util.function.Supplier;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.Module;
import com.fasterxml.jackson.databind.SerializationConfig;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.BeanSerializerModifier;
import com.fasterxml.jackson.databind.ser.ResolvableSerializer;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;

/**
 * Reads the spec or status of a job so that a value the Java types cannot hold (a job stored under
 * an older or hand-edited CRD, say) never fails the read: one such job would otherwise stop the
 * informer that reads every job. The part is read as an empty one that names the field it could
 * not read; the adapter then fails that job alone, saying which field. Written out again, such a
 * part is what was stored, so a copy (JOSDK hands the reconciler one) reads the same way.
 *
 * @param <T> the spec or status type
 */
public abstract class Unreadable<T extends Unreadable.Part> extends StdDeserializer<T> {
    private static final int MAX_MESSAGE = 300;
    private final Class<T> type;
    private final String part;
    private final Supplier<T> empty;

    /** A spec or status: when it could not be read, why, and what was stored (written back as it was). Never in the schema. */
    public abstract static class Part {
        /** Which field could not be read and why; null when the part was read. */
        @JsonIgnore
        public String unreadable;

        /** What the API server holds, when it could not be read. */
        @JsonIgnore
        public JsonNode stored;

        public String unreadable() {
            return unreadable;
        }

        public JsonNode stored() {
            return stored;
        }
    }

    protected Unreadable(Class<T> type, String part, Supplier<T> empty) {
        super(type);
        this.type = type;
        this.part = part;
        this.empty = empty;
    }

    @Override
    public T deserialize(JsonParser parser, DeserializationContext context) throws IOException {
        JsonNode tree = parser.readValueAsTree();
        try {
            return context.readTreeAsValue(tree, type);
        } catch (JsonMappingException e) {
            T unreadable = empty.get();
            unreadable.unreadable = problem(part, e);
            unreadable.stored = tree;
            return unreadable;
        }
    }

    /**
     * The Jackson module that writes a part that could not be read as it was stored (any other as
     * usual). Registered with the client's mapper only: the CRD generator must not see it.
     */
    public static Module module() {
        SimpleModule module = new SimpleModule("torchjob-unreadable-parts");
        module.setSerializerModifier(new BeanSerializerModifier() {
            @Override
            @SuppressWarnings("unchecked")
            public JsonSerializer<?> modifySerializer(SerializationConfig config, BeanDescription bean, JsonSerializer<?> serializer) {
                return Part.class.isAssignableFrom(bean.getBeanClass()) ? new AsStored((JsonSerializer<Object>) serializer) : serializer;
            }
        });
        return module;
    }

    private static final class AsStored extends StdSerializer<Object> implements ResolvableSerializer {
        private final JsonSerializer<Object> usual;

        AsStored(JsonSerializer<Object> usual) {
            super(Object.class);
            this.usual = usual;
        }

        @Override
        public void resolve(SerializerProvider provider) throws JsonMappingException {
            if (usual instanceof ResolvableSerializer resolvable) {
                resolvable.resolve(provider);
            }
        }

        @Override
        public void serialize(Object value, JsonGenerator generator, SerializerProvider provider) throws IOException {
            JsonNode stored = ((Part) value).stored();
            if (stored != null) {
                generator.writeTree(stored);
            } else {
                usual.serialize(value, generator, provider);
            }
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
