package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;

import io.fabric8.generator.annotation.Default;

/** A feature switched on by {@code enabled}, or by T9k's legacy spelling {@code enable} (spec §12). */
public abstract class Toggle {

    @Default("false")
    @JsonPropertyDescription("Turns this feature on.")
    public Boolean enabled = false;

    @JsonPropertyDescription("Legacy spelling of enabled.")
    public Boolean enable;

    @JsonIgnore
    public boolean isOn() {
        return Boolean.TRUE.equals(enabled) || Boolean.TRUE.equals(enable);
    }
}
