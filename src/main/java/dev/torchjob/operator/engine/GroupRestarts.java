package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Collectors;

import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.RestartDecision.Stopped;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * A job without elastic training restarting as a group (restart scope Job): one rank's fault and the
 * failures that follow it are one {@link Incident}, judged by its cause and counted once; the replicas
 * restart together.
 */
final class GroupRestarts {
    /**
     * The longest a survivor of a group restart is given to stop (its own grace period when shorter): its
     * group is already broken, and a rank blocked in a collective, or still importing, ignores SIGTERM
     * until the kubelet's SIGKILL, while the new group waits for every old pod to go.
     */
    static final long SURVIVOR_GRACE_SECONDS = 5;
    /** What a restart says when every rank that stopped only lost a peer. */
    static final String ONLY_LOST_PEERS = "each says a peer was lost and none failed on its own (the network between them, a rank "
            + "that hangs, or a rank stopped where no pod shows it)";

    private final TrainingJob job;
    private final JobState previous;
    private final Map<String, Pod> pods;
    private final Map<String, String> createdPods;
    private final RestartLedger ledger;
    private final ReplicaView view;
    private final RestartBackoff backoff;
    private final Instant now;
    private final PassOutput out;
    /** A fault whose verdict waits for the other replicas: what the status says meanwhile. */
    private String underWay;

    GroupRestarts(PassContext pass) {
        this.job = pass.job();
        this.previous = pass.previous();
        this.pods = pass.pods();
        this.createdPods = pass.createdPods();
        this.ledger = pass.ledger();
        this.view = pass.view();
        this.backoff = pass.backoff();
        this.now = pass.now();
        this.out = pass.out();
    }

    /** While a verdict waits: the incident so far and what it waits for. */
    Optional<String> underWay() {
        return Optional.ofNullable(underWay);
    }

    /**
     * The verdict on an incident. When the first failure seen is a program's own exit (or says a peer was
     * lost), it may be the consequence of a fault not reported yet: the verdict waits until every replica
     * has stopped, or {@link Incident#SETTLE} has passed since the first failure. A stop from outside (a
     * signal, OOM, deletion, eviction) is nobody's consequence and is decided at once. Then a cause its policy does not
     * restart ends the job, one the budget cannot pay for too, and otherwise the replicas restart together
     * for one restart of the budget ({@code missing} gets the slots whose new pod comes now).
     */
    Optional<Ending> judge(JobTopology topology, Incident incident, List<RestartedInPlace> inPlace, List<ReplicaSlot> missing) {
        List<String> running = topology.slots().stream().filter(slot -> !incident.involves(slot) && isStillRunning(pods.get(slot.podName())))
                .map(ReplicaSlot::podName).toList();
        Optional<Instant> settles = incident.settlesAt();
        ReplicaEnding first = incident.cause().ending();
        boolean nobodysConsequence = first.fromOutside() && !first.showsLostPeer();
        if (!running.isEmpty() && !nobodysConsequence && settles.isPresent() && now.isBefore(settles.get())) {
            out.recheckAt(settles.get());
            underWay = incident.story() + "; waiting until " + settles.get() + " for " + String.join(", ", running) + " before deciding";
            return Optional.empty();
        }
        Stopped cause = incident.cause();
        int limit = job.runPolicy().backoffLimit();
        // ExitCode tells a code error from a fault outside the code by the exit code; ranks that all say they lost a peer
        // raised no error of their own, whatever code they exited with.
        boolean noCodeError = cause.policy() == RestartPolicy.ExitCode && incident.onlyLostPeers();
        if (!noCodeError && !RestartRules.isRestartable(cause.policy(), cause.ending(), job.retryableExitCodes())) {
            return Optional.of(fails(incident, Outcome.ReplicaFailedPermanently, "restartPolicy " + cause.policy() + " does not restart "
                    + cause.slot().podName()));
        }
        if (ledger.backoffCount() + 1 > job.runPolicy().restartsAllowed()) {
            return Optional.of(fails(incident, Outcome.BackoffLimitExceeded, "the restart budget is spent (backoffCount "
                    + ledger.backoffCount() + " of runPolicy.backoffLimit " + limit + ")"));
        }
        restart(topology, incident, inPlace, missing, limit);
        return Optional.empty();
    }

    private Ending fails(Incident incident, Outcome outcome, String why) {
        record(incident, null);
        Stopped cause = incident.cause();
        String message = cause.ending().withOutput(incident.story() + "; " + why);
        out.events.add(JobEvent.warning("ReplicaFailed", message).about(cause.podUid()));
        return new Ending(outcome, message);
    }

    /**
     * Counts the incident once and ends the group: every pod of the replicas goes (a survivor at once, a
     * failed one when the back-off is due) and the new pods come once all of them are gone (Engine). When the
     * kubelet restarted every replica in place, they re-form the group by themselves and stay; when some
     * did not restart (blocked in a collective, or waiting at a rendezvous the others left), the whole
     * group starts anew, so no rank of the old group is left to fail later.
     */
    private void restart(JobTopology topology, Incident incident, List<RestartedInPlace> inPlace, List<ReplicaSlot> missing, int limit) {
        Stopped cause = incident.cause();
        boolean survivors = topology.slots().stream().anyMatch(slot -> isStillRunning(pods.get(slot.podName())) && !incident.involves(slot));
        // Faults in a row of the job as a whole, whichever rank failed: the back-off grows with them.
        boolean ranLongEnough = cause.ending().ran() != null && cause.ending().ran().compareTo(backoff.resetAfter()) >= 0;
        int inARow = ranLongEnough ? 0 : previous.replicaGroups().stream().flatMap(g -> g.replicas().stream())
                .mapToInt(ReplicaState::failuresInARow).max().orElse(0);
        Duration delay = backoff.delay(inARow);
        Instant restartAt = delay.isZero() ? null : now.plus(delay);
        Optional<Instant> oldAddressForgotten = backoff.oldAddressForgottenAt(lastStart(topology), incident.firstAt().orElse(now))
                .filter(at -> at.isAfter(now));
        boolean waitsForDns = oldAddressForgotten.isPresent() && (restartAt == null || oldAddressForgotten.get().isAfter(restartAt));
        if (waitsForDns) {
            restartAt = oldAddressForgotten.get();
        }
        ledger.countIncident();
        record(incident, inARow + 1);
        Map<String, RestartedInPlace> keptInPlace = survivors ? Map.of()
                : inPlace.stream().collect(Collectors.toMap(r -> r.slot().podName(), r -> r, (a, b) -> a));
        List<String> stoppedWithIt = new ArrayList<>();
        for (ReplicaSlot slot : topology.slots()) {
            RestartedInPlace restarted = keptInPlace.get(slot.podName());
            if (restarted != null) {
                view.restartedInPlace(restarted.ending(), restarted.restarts());
                continue;
            }
            Pod pod = pods.get(slot.podName());
            ReplicaState known = previous.replica(slot.podName());
            String uid = pod != null ? pod.getMetadata().getUid() : createdPods.getOrDefault(slot.podName(), known == null ? null : known.uid());
            if (uid == null) {
                continue; // not created yet: nothing to end
            }
            boolean survivor = isStillRunning(pod) && !incident.involves(slot);
            if (survivor) {
                stoppedWithIt.add(slot.podName());
            }
            if (!ledger.isCounted(slot.podName(), uid)) {
                ledger.mark(slot.podName(), uid, restartAt);
            }
            if (pod == null) {
                if (restartAt == null) {
                    missing.add(slot);
                } else {
                    out.recheckAt(restartAt);
                }
            } else if (restartAt != null && Pods.replicaPhase(pod).isFinished()) {
                out.recheckAt(restartAt);
            } else {
                out.delete(pod, DeletionReason.RESTART, stopGrace(pod));
            }
        }
        ReplicaEnding ending = cause.ending();
        boolean inPlaceCause = ending.cause() == ReplicaEnding.Cause.RESTARTED_IN_PLACE;
        out.counted(cause.slot().type(), ending.countedAs(), inPlaceCause);
        String message = incident.story() + (incident.onlyLostPeers() ? "; " + ONLY_LOST_PEERS : "")
                + (stoppedWithIt.isEmpty() ? "" : "; stopping " + String.join(", ", stoppedWithIt))
                + "; the job restarts as a group (" + PassOutput.restartOf(ledger.backoffCount(), limit)
                + (waitsForDns ? "; new pods " + MasterAddress.waiting(topology, restartAt)
                        : restartAt == null ? "" : "; back-off " + delay.toSeconds() + " s, new pods at " + restartAt) + ")";
        out.events.add(JobEvent.warning("JobRestarting", ending.withOutput(message)).about(cause.podUid()));
    }

    /** When the last of the group's containers started (a container the kubelet restarted in place: its new start). */
    private Instant lastStart(JobTopology topology) {
        return topology.slots().stream().map(slot -> pods.get(slot.podName())).filter(Objects::nonNull)
                .map(MasterAddress::lastStart).filter(Objects::nonNull).max(Comparator.naturalOrder()).orElse(null);
    }

    /**
     * The grace period a pod of the old group is stopped within: {@link #SURVIVOR_GRACE_SECONDS} at most, for a
     * survivor and for one the kubelet restarted in place, the cause too (a rank importing PyTorch, waiting at a
     * rendezvous or blocked in a collective runs no SIGTERM handler, and the new pod of its name waits for it);
     * null for one whose containers ended already. A pod someone else deleted keeps that deletion's grace: the
     * kubelet does not shorten a stop under way (docs/decisions.md).
     */
    static Long stopGrace(Pod pod) {
        if (Pods.replicaPhase(pod).isFinished()) {
            return null;
        }
        Long own = pod.getSpec() == null ? null : pod.getSpec().getTerminationGracePeriodSeconds();
        return own == null ? SURVIVOR_GRACE_SECONDS : Math.min(own, SURVIVOR_GRACE_SECONDS);
    }

    /** What the status keeps of an incident: each replica's last failure, the cause's and the consequences'. */
    private void record(Incident incident, Integer inARow) {
        ReplicaEnding cause = incident.cause().ending();
        if (inARow == null) {
            view.failed(cause);
        } else {
            view.failed(cause, inARow);
        }
        for (Stopped consequence : incident.consequences()) {
            ReplicaEnding ending = consequence.ending();
            view.failed(ending.podName(), ending.withOutput(ending.summary() + ", after " + cause.podName() + " had stopped (a consequence)"));
        }
    }

    /** Alive as far as the pods show: not being deleted, not finished, not the old group of a restart. */
    private boolean isStillRunning(Pod pod) {
        return pod != null && !Pods.isTerminating(pod) && !ledger.isCounted(pod) && !Pods.replicaPhase(pod).isFinished();
    }

    /**
     * A replica failed in an earlier second than the success was reported: the failure came first (the
     * master may finish while the verdict waits), so the incident is judged, not the success.
     */
    boolean failedBeforeSuccess(JobTopology topology) {
        Instant succeededAt = podsOf(topology).filter(pod -> "Succeeded".equals(Pods.phase(pod)))
                .map(pod -> ReplicaEnding.ofFailedPod(pod).at()).filter(Objects::nonNull).max(Comparator.naturalOrder()).orElse(null);
        return succeededAt != null && podsOf(topology).filter(pod -> "Failed".equals(Pods.phase(pod)) && !ledger.isCounted(pod))
                .map(pod -> ReplicaEnding.ofFailedPod(pod).at()).anyMatch(at -> at != null && at.isBefore(succeededAt));
    }

    /**
     * The job succeeded while the verdict on restarts the kubelet made in place still waited: they
     * happened (the group re-formed and trained to the end), so they are one restart, said and counted.
     */
    void countRestartsInPlaceBeforeSuccess(JobTopology topology) {
        List<RestartedInPlace> inPlace = topology.slots().stream()
                .filter(slot -> pods.get(slot.podName()) != null && !Pods.isTerminating(pods.get(slot.podName())))
                .map(slot -> RestartedInPlace.of(slot, pods.get(slot.podName()), view)).flatMap(Optional::stream).toList();
        if (inPlace.isEmpty()) {
            return;
        }
        Incident incident = Incident.of(inPlace.stream().map(RestartedInPlace::stopped).toList());
        ledger.countIncident();
        record(incident, null);
        inPlace.forEach(r -> view.restartedInPlace(r.ending(), r.restarts()));
        ReplicaEnding ending = incident.cause().ending();
        out.counted(incident.cause().slot().type(), ending.countedAs(), true);
        out.events.add(JobEvent.warning("JobRestarting", ending.withOutput(incident.story() + "; the ranks re-formed the group in place ("
                + PassOutput.restartOf(ledger.backoffCount(), job.runPolicy().backoffLimit()) + ")")).about(incident.cause().podUid()));
    }

    private java.util.stream.Stream<Pod> podsOf(JobTopology topology) {
        return topology.slots().stream().map(slot -> pods.get(slot.podName())).filter(Objects::nonNull);
    }
}
