package dev.torchjob.operator.kubeflow;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import dev.torchjob.operator.engine.ReplicaSlot;

/**
 * The labels Kubeflow's training-operator puts on a PyTorchJob's pods and Services, the older ones
 * included (the seeds' {@code kubectl get pods -l job-name=...} still works). Informers select on
 * the operator-name label.
 */
public final class KubeflowLabels {
    public static final String OPERATOR_NAME = "training.kubeflow.org/operator-name";
    public static final String JOB_NAME = "training.kubeflow.org/job-name";
    public static final String REPLICA_TYPE = "training.kubeflow.org/replica-type";
    public static final String REPLICA_INDEX = "training.kubeflow.org/replica-index";
    public static final String JOB_ROLE = "training.kubeflow.org/job-role";
    public static final String LEGACY_JOB_NAME = "job-name";
    public static final String LEGACY_CONTROLLER_NAME = "controller-name";
    public static final String OPERATOR = "pytorchjob-controller";

    /** Selector of every pod and Service this operator made for any PyTorchJob. */
    public static final String OPERATOR_SELECTOR = OPERATOR_NAME + "=" + OPERATOR;

    private KubeflowLabels() {
    }

    public static Map<String, String> ofJob(String jobName) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(OPERATOR_NAME, OPERATOR);
        labels.put(JOB_NAME, jobName);
        labels.put(LEGACY_JOB_NAME, jobName);
        labels.put(LEGACY_CONTROLLER_NAME, "pytorch-operator");
        return labels;
    }

    public static Map<String, String> ofReplica(String jobName, ReplicaSlot slot) {
        Map<String, String> labels = ofJob(jobName);
        labels.put(REPLICA_TYPE, slot.type().toLowerCase(Locale.ROOT));
        labels.put(REPLICA_INDEX, Integer.toString(slot.index()));
        return labels;
    }

    /** What a replica's Service selects: exactly its one pod. */
    public static Map<String, String> selectorOfReplica(String jobName, ReplicaSlot slot) {
        Map<String, String> selector = new LinkedHashMap<>();
        selector.put(OPERATOR_NAME, OPERATOR);
        selector.put(JOB_NAME, jobName);
        selector.put(REPLICA_TYPE, slot.type().toLowerCase(Locale.ROOT));
        selector.put(REPLICA_INDEX, Integer.toString(slot.index()));
        return selector;
    }

    /**
     * replicaStatuses[type].selector: the pods of one replica type (the scale subresource uses Worker's),
     * written as Kubernetes writes a label selector: keys sorted.
     */
    public static String selectorOfType(String jobName, String type) {
        return JOB_NAME + "=" + jobName + "," + OPERATOR_NAME + "=" + OPERATOR + "," + REPLICA_TYPE + "=" + type.toLowerCase(Locale.ROOT);
    }
}
