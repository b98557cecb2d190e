package dev.torchjob.operator.kueue;

import java.util.List;
import java.util.Optional;

/**
 * What an AppWrapper's own fault tolerance means for the job it wraps, which the operator restarts as a group.
 * AppWrapper (v1) counts the pods it labelled once a minute and resets the whole job (deletes it, makes it anew
 * after a pause: its restarts and budget start over) when fewer run than it expects past its admission and
 * warm-up grace periods, counted from when it made the job; a group restart always shows it such a moment, since
 * a rank's new pod comes only once its old one is gone. The grace periods are the AppWrapper's annotations. Pure.
 */
public final class AppWrapperResets {
    static final String GROUP = "workload.codeflare.dev";
    static final String KIND = "AppWrapper";
    static final String ADMISSION_GRACE = "workload.codeflare.dev.appwrapper/admissionGracePeriodDuration";
    static final String WARMUP_GRACE = "workload.codeflare.dev.appwrapper/warmupGracePeriodDuration";

    private AppWrapperResets() {
    }

    /**
     * What the QueuedByOwner event adds when the owner is an AppWrapper that leaves either grace period to
     * AppWrapper's defaults (1 and 5 minutes); nothing for any other owner, or one whose user set both.
     */
    static Optional<String> hint(OwnerAncestry.Owner owner) {
        OwnerAncestry.Reference reference = owner.reference();
        if (!KIND.equals(reference.kind()) || !reference.apiVersion().startsWith(GROUP + "/")
                || List.of(ADMISSION_GRACE, WARMUP_GRACE).stream().allMatch(owner.annotations()::containsKey)) {
            return Optional.empty();
        }
        return Optional.of("AppWrapper " + reference.name() + " resets the whole job (deletes it and makes it anew, its restarts "
                + "lost) if it counts fewer running pods than it expects once its grace periods are over, as it may during a "
                + "group restart: annotate it " + ADMISSION_GRACE + " and " + WARMUP_GRACE + " 24h to keep the operator's "
                + "restarts, or give the replicas restartPolicy Never to leave restarts to AppWrapper (docs/kueue.md, "
                + "\"A job in an AppWrapper\")");
    }
}
