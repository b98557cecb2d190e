package dev.torchjob.operator.api;

import java.io.IOException;
import java.math.BigInteger;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;

import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * Reads an integer field that the API server may hold beyond Java's int (a job stored before the
 * schema had a maximum, or a cluster with an older CRD): the value saturates at the int range
 * instead of failing, so one such job cannot stop the informer that reads every job. The spec
 * validator then rejects it by its bound, naming the field.
 */
@RegisterForReflection
public class SaturatingInteger extends StdDeserializer<Integer> {

    public SaturatingInteger() {
        super(Integer.class);
    }

    @Override
    public Integer deserialize(JsonParser parser, DeserializationContext context) throws IOException {
        if (parser.currentToken() == JsonToken.VALUE_NUMBER_INT) {
            BigInteger value = parser.getBigIntegerValue();
            if (value.compareTo(BigInteger.valueOf(Integer.MAX_VALUE)) > 0) {
                return Integer.MAX_VALUE;
            }
            if (value.compareTo(BigInteger.valueOf(Integer.MIN_VALUE)) < 0) {
                return Integer.MIN_VALUE;
            }
            return value.intValue();
        }
        return (Integer) context.findRootValueDeserializer(context.constructType(Integer.class)).deserialize(parser, context);
    }
}
