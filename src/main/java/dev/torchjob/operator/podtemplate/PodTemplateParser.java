package dev.torchjob.operator.podtemplate;

import java.util.Map;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.PodTemplateSpec;

/** Reads a replica group's raw template into the Kubernetes model, or says why it cannot. */
public final class PodTemplateParser {
    // Unknown fields are tolerated as the API server would prune them; wrong shapes are not.
    private static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private PodTemplateParser() {
    }

    /** @throws IllegalArgumentException with a short reason when the template has the wrong shape */
    public static PodTemplateSpec parse(Map<String, Object> template) {
        if (template == null) {
            return null;
        }
        try {
            return JSON.convertValue(template, PodTemplateSpec.class);
        } catch (IllegalArgumentException e) {
            String message = e.getMessage() == null ? e.toString() : e.getMessage();
            int end = message.indexOf(" at [Source");
            throw new IllegalArgumentException((end > 0 ? message.substring(0, end) : message).replace('\n', ' ').trim(), e);
        }
    }
}
