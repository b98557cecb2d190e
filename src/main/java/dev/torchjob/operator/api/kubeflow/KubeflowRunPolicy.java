package dev.torchjob.operator.api.kubeflow;

import java.util.Map;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;

import dev.torchjob.operator.api.OpenObject;
import dev.torchjob.operator.api.SaturatingInteger;
import io.fabric8.crd.generator.annotation.PreserveUnknownFields;
import io.fabric8.crd.generator.annotation.SchemaFrom;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import io.fabric8.generator.annotation.Pattern;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** runPolicy of kubeflow.org/v1. */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
@RegisterForReflection
public class KubeflowRunPolicy {

    @Default("None")
    @JsonPropertyDescription("Pods deleted when the job finishes: None, Running (running and pending pods) or All.")
    public CleanPodPolicy cleanPodPolicy = CleanPodPolicy.None;

    @Min(0)
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("Seconds after the job finished when the job itself is deleted. Unset: kept.")
    public Integer ttlSecondsAfterFinished;

    @Min(1)
    @JsonPropertyDescription("Seconds the job may run after status.startTime before it fails.")
    public Long activeDeadlineSeconds;

    @Min(0)
    @Max(2147483647)
    @JsonDeserialize(using = SaturatingInteger.class)
    @JsonPropertyDescription("Restarts (in place or recreated) allowed in all before the job fails; the job fails once restarts reach it. Unset: no limit.")
    public Integer backoffLimit;

    @Default("false")
    @JsonPropertyDescription("true: no pods run (they are deleted) and nothing is counted; false again: the job starts anew (startTime reset). Kueue drives it.")
    public Boolean suspend = false;

    @Pattern("^(kubeflow.org/training-operator|kueue.x-k8s.io/multikueue)$")
    @JsonPropertyDescription("Which controller runs the job: kubeflow.org/training-operator (this operator, the default) or kueue.x-k8s.io/multikueue (left alone).")
    public String managedBy;

    @PreserveUnknownFields
    @SchemaFrom(type = OpenObject.class)
    @JsonPropertyDescription("Gang-scheduling settings (minAvailable, queue, minResources, priorityClass, scheduleTimeoutSeconds), read when the operator gang-schedules (torchjob.gang-scheduler-name); accepted, not acted on otherwise.")
    public Map<String, Object> schedulingPolicy;
}
