package dev.torchjob.operator.kueue;

import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * Kueue's default LocalQueue: a job created without the queue label in a namespace that has a
 * LocalQueue named {@value #NAME} is put in it, as Kueue's webhooks label the jobs they know when
 * they are created. These kinds pass no Kueue webhook, so the operator labels the job itself, once,
 * before it starts: a job it already started (a status written, a pod made) is never put in a queue
 * that appeared later, which would stop it. Pure.
 */
public final class DefaultLocalQueue {
    /** The LocalQueue Kueue fills in (its constants.DefaultLocalQueueName). */
    public static final String NAME = "default";
    /** Where Kueue's default managedJobsNamespaceSelector puts no job in a queue: its own namespace and kube-system. */
    public static final String UNMANAGED_NAMESPACES = "kube-system,kueue-system";

    private DefaultLocalQueue() {
    }

    /**
     * Whether to look for the namespace's default LocalQueue for this job: it has no queue label, it
     * has not started, and its namespace is one Kueue manages.
     *
     * @param label the queue the job's label names, if any
     * @param started whether the operator wrote the job's status or made a pod of it (asked last: it
     *        looks at the job's pods)
     * @param unmanaged namespaces whose jobs are never put in a queue
     */
    public static boolean sought(Optional<String> label, BooleanSupplier started, String namespace, Set<String> unmanaged) {
        return label.isEmpty() && !unmanaged.contains(namespace) && !started.getAsBoolean();
    }

    /** The merge patch that labels the job, only if it is still the version that was looked at. */
    public static String labelPatch(String resourceVersion) {
        return "{\"metadata\":{\"resourceVersion\":\"" + resourceVersion + "\",\"labels\":{\"" + KueueWorkload.QUEUE_LABEL + "\":\""
                + NAME + "\"}}}";
    }
}
