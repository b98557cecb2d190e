package dev.torchjob.operator.reconciler;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

/**
 * The refusal each job's passes are being retried for, and since when, by job UID. The job's
 * ReconcileError condition says the same and survives an operator restart; this is what holds when
 * that condition cannot be written either (the status itself refused for good: RBAC, a webhook), so
 * that the error is still said once and the retries still back off. Also how many passes in a row
 * of each job were run again at once, quietly (a call lost to a connection that closed under it, a
 * status written on a job the cache had not caught up with), and the namespaces being deleted, whose
 * jobs are going away: nothing is counted, created or said for them.
 */
@ApplicationScoped
public class Refusals {
    /** Jobs deleted while refused are never told over: the oldest go first past this many. */
    private static final int MOST = 10_000;

    public record Refusal(String reason, String message, Instant since) {
        boolean sameAs(ApplyFailure failure) {
            return reason.equals(failure.reason()) && message.equals(failure.getMessage());
        }
    }

    private final Map<String, Refusal> byJob = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Refusal> eldest) {
            return size() > MOST;
        }
    };

    /** Passes in a row that were run again quietly, by job UID. */
    private final Map<String, Integer> quietlyInARow = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
            return size() > MOST;
        }
    };

    /** Namespaces whose creates the API server refused because they are being deleted, and when. */
    private final Map<String, Instant> namespacesEnding = new LinkedHashMap<>();

    synchronized Optional<Refusal> of(String jobUid) {
        return Optional.ofNullable(byJob.get(jobUid));
    }

    synchronized void said(String jobUid, Refusal refusal) {
        byJob.put(jobUid, refusal);
        quietlyInARow.remove(jobUid); // said: the quiet re-runs before it are no longer in a row
    }

    /**
     * A pass of the job failed in a way the next pass almost always gets past: whether it is among the
     * first {@code most} in a row, which are run again at once and not said.
     */
    synchronized boolean runAgainQuietly(String jobUid, int most) {
        return quietlyInARow.merge(jobUid, 1, Integer::sum) <= most;
    }

    /** The job's passes go through again (or it is gone). */
    synchronized void over(String jobUid) {
        byJob.remove(jobUid);
        quietlyInARow.remove(jobUid);
    }

    /** The API server said the namespace is being deleted: its jobs go with it. */
    synchronized void namespaceEnding(String namespace, Instant now) {
        namespacesEnding.put(namespace, now);
    }

    /**
     * Whether the namespace was seen being deleted within {@code lately}: its jobs' passes do nothing
     * meanwhile. Asked again after that, once, in case a namespace of the same name was made anew.
     */
    synchronized boolean namespaceEnding(String namespace, Instant now, Duration lately) {
        namespacesEnding.values().removeIf(seen -> seen.isBefore(now.minus(lately)));
        return namespacesEnding.containsKey(namespace);
    }
}
