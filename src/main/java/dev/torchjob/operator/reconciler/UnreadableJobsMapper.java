package dev.torchjob.operator.reconciler;

import jakarta.inject.Singleton;

import com.fasterxml.jackson.databind.ObjectMapper;

import dev.torchjob.operator.api.Unreadable;
import io.quarkus.kubernetes.client.KubernetesClientObjectMapperCustomizer;

/**
 * The client's JSON mapper writes a job part that could not be read as it was stored: the copies
 * JOSDK makes of a job (through JSON) then keep saying which field could not be read.
 */
@Singleton
public class UnreadableJobsMapper implements KubernetesClientObjectMapperCustomizer {
    @Override
    public void customize(ObjectMapper mapper) {
        mapper.registerModule(Unreadable.module());
    }
}
