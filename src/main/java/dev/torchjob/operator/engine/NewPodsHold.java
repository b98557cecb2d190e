package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import dev.torchjob.operator.engine.Plan.JobEvent;

/**
 * Why a training job's missing replicas get no new pods on this pass, if they get none: each reason is a way a new
 * rank would fail at once, or never be placed.
 *
 * <ul>
 * <li>{@code oldGroupLeaving}: a job restarting as a group starts anew only once every pod of the old group is gone; a
 * new rank must not reach an old master still shutting down (its name still resolves to it).</li>
 * <li>{@code byGang}: the gang scheduler holds the group back until it admits it (its pods would only wait; they are
 * said as replicas that cannot start).</li>
 * <li>{@code oldMasterAddress}: until when the cluster's DNS may still answer the master's name with its ended pod's
 * address ({@link MasterAddress}) — after a resume, a replica's restart, or a job of this name deleted just before. A
 * group restart decided its own wait when it counted the incident, so it is not waited for again here.</li>
 * </ul>
 */
record NewPodsHold(boolean oldGroupLeaving, boolean byGang, Optional<Instant> oldMasterAddress) {

    /** Whether the missing replicas' pods wait. */
    boolean holds() {
        return oldGroupLeaving || byGang || oldMasterAddress.isPresent();
    }

    /**
     * The hold of this pass. A wait for the old address asks for a pass when it is over, and is said once: on the pass
     * that resumes the job ({@code resuming}), or on the job's first.
     */
    static NewPodsHold of(PassContext pass, JobTopology topology, List<ReplicaSlot> missing, Gang gang, boolean resuming) {
        boolean groupRestart = pass.job().restartsAsGroup();
        boolean oldGroupLeaving = groupRestart && pass.pods().values().stream().anyMatch(pass.ledger()::isCounted);
        boolean byGang = gang.hold().isPresent() && !missing.isEmpty();
        Optional<Instant> oldMasterAddress = missing.isEmpty() || (groupRestart && pass.ledger().hasEntries()) ? Optional.empty()
                : MasterAddress.oldAddressForgottenAt(pass, topology);
        oldMasterAddress.ifPresent(at -> {
            pass.out().recheckAt(at);
            if (resuming || !pass.previous().planned()) {
                pass.out().events.add(JobEvent.normal(MasterAddress.WAITING_FOR_DNS, "New pods " + MasterAddress.waiting(topology, at)
                        + (resuming ? ": the ranks looked it up before the job stopped."
                                : ": a pod of that name ended moments ago (a job of this name deleted just before?).")));
            }
        });
        return new NewPodsHold(oldGroupLeaving, byGang, oldMasterAddress);
    }
}
