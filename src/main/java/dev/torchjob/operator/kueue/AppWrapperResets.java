package dev.torchjob.operator.kueue;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What an AppWrapper's own fault tolerance means for the job it wraps. AppWrapper (v1) judges the job by counting
 * the pods it labelled, once a minute, and resets the whole job (deletes it, makes it anew after a pause: its
 * restarts and budget start over) when fewer run than it expects past its admission and warm-up grace periods,
 * counted from when it made the job (a group restart always shows it such a moment, since a rank's new pod comes
 * only once its old one is gone), or when a pod has failed for longer than its failure grace period (as during a
 * restart's back-off, which grows to minutes for faults in a row). It calls the job done only when every pod it
 * expects has succeeded, so pods deleted at the end make it run a finished job again. The grace periods are the
 * AppWrapper's annotations. Pure.
 */
public final class AppWrapperResets {
    static final String GROUP = "workload.codeflare.dev";
    static final String KIND = "AppWrapper";
    static final String ADMISSION_GRACE = "workload.codeflare.dev.appwrapper/admissionGracePeriodDuration";
    static final String WARMUP_GRACE = "workload.codeflare.dev.appwrapper/warmupGracePeriodDuration";
    static final String FAILURE_GRACE = "workload.codeflare.dev.appwrapper/failureGracePeriodDuration";

    private AppWrapperResets() {
    }

    /**
     * What the QueuedByOwner event adds when the owner is an AppWrapper: that it may reset the job around a restart,
     * when it leaves any of these grace periods to AppWrapper's defaults (admission 1, warm-up 5, failure 1 minute);
     * and that it may run a finished job again, when the job's clean-up deletes pods it counts. Nothing for any other
     * owner.
     *
     * @param podsCleanedUp the job's clean-up in its API's words, when it deletes pods once the job ends
     */
    static List<String> cautions(OwnerAncestry.Owner owner, Optional<String> podsCleanedUp) {
        OwnerAncestry.Reference reference = owner.reference();
        if (!KIND.equals(reference.kind()) || !reference.apiVersion().startsWith(GROUP + "/")) {
            return List.of();
        }
        List<String> cautions = new ArrayList<>();
        if (!List.of(ADMISSION_GRACE, WARMUP_GRACE, FAILURE_GRACE).stream().allMatch(owner.annotations()::containsKey)) {
            cautions.add("AppWrapper " + reference.name() + " resets the whole job (deletes it and makes it anew, its restarts "
                    + "lost) if it counts fewer running pods than it expects once its grace periods are over, as it may during a "
                    + "group restart, or a failed pod for longer than its failure grace period, as during a restart's back-off: "
                    + "annotate it " + ADMISSION_GRACE + " and " + WARMUP_GRACE + " 24h and " + FAILURE_GRACE + " longer than "
                    + "the operator's back-off grows (torchjob.restart-backoff.max, 5m by default), 10m, to keep the operator's "
                    + "restarts, or give the replicas restartPolicy Never to leave restarts to AppWrapper");
        }
        podsCleanedUp.ifPresent(cleanUp -> cautions.add("AppWrapper " + reference.name() + " calls the job done only once every pod "
                + "it expects has Succeeded, and " + cleanUp + " deletes pods it would count once the job succeeds (a rank still "
                + "running then): AppWrapper would run the job again once its grace period is over; keep the pods (None)"));
        if (!cautions.isEmpty()) {
            cautions.add("see docs/kueue.md, \"A job in an AppWrapper\"");
        }
        return cautions;
    }
}
