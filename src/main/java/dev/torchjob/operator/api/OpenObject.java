package dev.torchjob.operator.api;

/** Schema stand-in for an object whose fields the API server keeps but does not check (pod templates). */
final class OpenObject {
    private OpenObject() {
    }
}
