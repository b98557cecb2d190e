package dev.torchjob.operator.api;

import com.fasterxml.jackson.annotation.JsonProperty;

/** torchrun's --rdzv_backend. Only c10d is built into torch. */
public enum RendezvousBackend {
    @JsonProperty("c10d")
    C10D("c10d"),
    @JsonProperty("etcd")
    ETCD("etcd"),
    @JsonProperty("etcd-v2")
    ETCD_V2("etcd-v2");

    private final String argument;

    RendezvousBackend(String argument) {
        this.argument = argument;
    }

    public String argument() {
        return argument;
    }
}
