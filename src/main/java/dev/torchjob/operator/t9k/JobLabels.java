package dev.torchjob.operator.t9k;

import java.util.LinkedHashMap;
import java.util.Map;

import dev.torchjob.operator.api.PyTorchTrainingJob;

/** Labels the operator puts on everything it creates; informers select on them. */
public final class JobLabels {
    public static final String OWNER_KIND = "tensorstack.dev/owner-kind";
    public static final String OWNER_NAME = "tensorstack.dev/owner-name";
    public static final String REPLICA_TYPE = "tensorstack.dev/replica-type";
    public static final String REPLICA_INDEX = "tensorstack.dev/replica-index";
    public static final String RANK = "tensorstack.dev/rank";

    /** Selector of every object this operator owns, in any job. */
    public static final String OPERATOR_SELECTOR = OWNER_KIND + "=" + PyTorchTrainingJob.KIND;

    private JobLabels() {
    }

    public static Map<String, String> ofJob(String jobName) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(OWNER_KIND, PyTorchTrainingJob.KIND);
        labels.put(OWNER_NAME, jobName);
        return labels;
    }

    /** status.selector: what the scale subresource and HPA use to find the job's pods. */
    public static String selectorOf(String jobName) {
        return OWNER_NAME + "=" + jobName;
    }
}
