package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.quarkus.runtime.annotations.RegisterForReflection;

/** A restart already added to backoffCount; kept until the replacement pod is seen. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class CountedRestart {
    @JsonPropertyDescription("Name of the pod whose failure was counted.")
    public String pod;
    @JsonPropertyDescription("UID of that pod: the same pod is never counted twice.")
    public String uid;
    @JsonPropertyDescription("When the replacement pod is created (restart back-off); absent when at once.")
    public String restartAt;

    public CountedRestart() {
    }

    public CountedRestart(String pod, String uid) {
        this.pod = pod;
        this.uid = uid;
    }

    public CountedRestart(String pod, String uid, String restartAt) {
        this(pod, uid);
        this.restartAt = restartAt;
    }
}
