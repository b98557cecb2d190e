package dev.torchjob.operator.kueue;

import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * What becomes of a job without the queue label, as Kueue decides it for the kinds it knows. Put in
 * its namespace's LocalQueue named {@value #DEFAULT_QUEUE} where there is one (Kueue's webhooks label
 * such jobs when they are created); else, where the platform team has Kueue manage every job
 * (Kueue's {@code manageJobsWithoutQueueName}), held until it names a queue; else run as it is. These
 * kinds pass no Kueue webhook, so the operator does both, once, before the job starts: a job it already
 * started (a pod made, or its status says one was) is never stopped by a queue or a setting that came
 * later. Pure.
 */
public final class JobWithoutQueueName {
    /** The LocalQueue Kueue fills in (its constants.DefaultLocalQueueName). */
    public static final String DEFAULT_QUEUE = "default";

    /** What to do with the job. */
    public enum Placement {
        /** It names a queue, has started, or nothing asks for one: as it is. */
        AS_IS,
        /** Label it with the default LocalQueue. */
        DEFAULT_QUEUE,
        /** It may not run until it names a queue. */
        HOLD
    }

    private JobWithoutQueueName() {
    }

    /**
     * @param label the queue the job's label names, if any
     * @param started whether the operator made a pod of the job (asked only for a job without a label:
     *        it looks at the job's pods)
     * @param managed Kueue manages the jobs of the job's namespace ({@link ManagedJobsNamespaces})
     * @param defaultQueue whether the namespace has the LocalQueue {@value #DEFAULT_QUEUE}
     * @param everyJobQueued Kueue manages jobs without a queue name (the platform team's setting)
     * @param owners what Kueue makes of the job's owners (read only when it matters): a job whose owner's
     *        kind Kueue manages is not put in the default LocalQueue, one queued through its owner is not held
     */
    public static Placement of(Optional<String> label, BooleanSupplier started, BooleanSupplier managed, BooleanSupplier defaultQueue,
            boolean everyJobQueued, Supplier<OwnerAncestry> owners) {
        if (label.isPresent() || started.getAsBoolean()) {
            return Placement.AS_IS;
        }
        boolean toDefaultQueue = defaultQueue.getAsBoolean();
        if (!toDefaultQueue && !everyJobQueued || !managed.getAsBoolean()) {
            return Placement.AS_IS;
        }
        OwnerAncestry ancestry = owners.get();
        if (toDefaultQueue && !ancestry.ownerKindManaged()) {
            return Placement.DEFAULT_QUEUE;
        }
        return everyJobQueued && ancestry.ancestor().isEmpty() ? Placement.HOLD : Placement.AS_IS;
    }

    /** The merge patch that labels the job, only if it is still the version that was looked at. */
    public static String labelPatch(String resourceVersion) {
        return "{\"metadata\":{\"resourceVersion\":\"" + resourceVersion + "\",\"labels\":{\"" + KueueWorkload.QUEUE_LABEL + "\":\""
                + DEFAULT_QUEUE + "\"}}}";
    }

    /** What a held job says, and how to get it going. */
    public static String heldMessage(String namespace) {
        return "Kueue manages every job in namespace " + namespace + " (manageJobsWithoutQueueName) and this one names no LocalQueue: "
                + "it does not start until it does. Label it " + KueueWorkload.QUEUE_LABEL + "=<LocalQueue> (kubectl get localqueues -n "
                + namespace + " lists them).";
    }
}
