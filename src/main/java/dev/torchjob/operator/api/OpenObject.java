package dev.torchjob.operator.api;

/** Schema stand-in for an object whose fields the API server keeps but does not check (pod templates). */
public final class OpenObject {
    private OpenObject() {
    }
}
