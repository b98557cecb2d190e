package dev.torchjob.operator.api.kubeflow;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;

import dev.torchjob.operator.api.SaturatingInteger;
import io.fabric8.kubernetes.api.model.autoscaling.v2.MetricSpec;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** elasticPolicy of kubeflow.org/v1: torchrun's elastic rendezvous, read by the user's torchrun from PET_* variables. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class ElasticPolicy {

    @Min(1)
    @Max(1000)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("Fewest workers; defaults to maxReplicas, or to Worker.replicas.")
    public Integer minReplicas;

    @Min(1)
    @Max(1000)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("Most workers; defaults to minReplicas, or to Worker.replicas.")
    public Integer maxReplicas;

    @JsonPropertyDescription("Rendezvous backend: c10d (default), etcd or etcd-v2 (PET_RDZV_BACKEND).")
    public RendezvousBackend rdzvBackend;

    @Min(1)
    @Max(65535)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("Rendezvous port; defaults to the Worker's pytorchjob-port.")
    public Integer rdzvPort;

    @JsonPropertyDescription("Rendezvous host; defaults to <job>-worker-0.")
    public String rdzvHost;

    @JsonPropertyDescription("Rendezvous id (PET_RDZV_ID).")
    public String rdzvId;

    @JsonPropertyDescription("Extra rendezvous settings, joined as k1=v1,k2=v2 into PET_RDZV_CONF.")
    public List<RendezvousSetting> rdzvConf;

    @JsonPropertyDescription("Standalone rendezvous (PET_STANDALONE).")
    public Boolean standalone;

    @Min(1)
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("Deprecated: use spec.nprocPerNode. Processes per pod (PET_NPROC_PER_NODE).")
    public Integer nProcPerNode;

    @Min(0)
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("torchrun's own restarts of the worker group (PET_MAX_RESTARTS).")
    public Integer maxRestarts;

    @JsonPropertyDescription("autoscaling/v2 metric specs: when set, a HorizontalPodAutoscaler owned by the job scales its workers.")
    public List<MetricSpec> metrics;

    /** One k=v of rdzvConf. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @RegisterForReflection
    public static class RendezvousSetting {
        @JsonPropertyDescription("Setting name.")
        public String key;
        @JsonPropertyDescription("Setting value.")
        public String value;
    }

    public enum RendezvousBackend {
        c10d,
        etcd,
        @com.fasterxml.jackson.annotation.JsonProperty("etcd-v2")
        etcdV2
    }
}
