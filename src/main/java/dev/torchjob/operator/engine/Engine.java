package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import dev.torchjob.operator.engine.Decision.PodMode;
import dev.torchjob.operator.engine.Decision.PodRequest;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.Pause;
import dev.torchjob.operator.engine.JobState.Phase;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;
import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.Observation.PodGroupState;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.Plan.PodDeletion;
import dev.torchjob.operator.engine.RestartDecision.Stopped;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * The engine: one pass of reconciliation decided as a pure function of the job (in the neutral
 * model), the state its status recorded, what is observed of it, and the time. No I/O.
 *
 * <p>The steps, in order: a finished job only cleans up; an invalid one fails; pause; resume;
 * admission (the queue's gate, then the gang scheduler's); debug; the deadline; success; and
 * training, where stopped replicas are restarted or end the job ({@link RestartDecision}).
 */
public final class Engine {
    /** A closed gate sends no event when it opens (the API gets installed): look again this often. */
    public static final Duration ADMISSION_RECHECK = Duration.ofSeconds(60);
    /** activeDeadlineSeconds beyond this (about 100 years) counts as this. */
    static final Duration MAX_DEADLINE = Duration.ofDays(36_525);
    /** The furthest a pass asks to be woken: every job is looked at again within this anyway. */
    static final Duration MAX_RECHECK = Duration.ofMinutes(10);

    private Engine() {
    }

    public static Decision decide(TrainingJob job, JobState previous, Observation<?> observation, Wording wording,
            RestartBackoff backoff) {
        return new Pass(job, previous, observation, wording, backoff).run();
    }

    /** Mutable scratch space of one pass; never escapes {@link #decide}. */
    private static final class Pass {
        private final TrainingJob job;
        private final JobState previous;
        private final Wording wording;
        private final RestartBackoff backoff;
        private final Map<String, Pod> pods;
        private final Map<String, String> createdPods;
        private final Map<String, List<StartBlocker.PodWarning>> podWarnings;
        private final boolean serviceExists;
        private final PodGroupState podGroup;
        private final QueueAdmission queue;
        private final Instant now;
        private final RestartLedger ledger;
        private final ReplicaView view;

        private final List<PodRequest> creates = new ArrayList<>();
        private final List<PodDeletion> deletes = new ArrayList<>();
        private final List<JobEvent> events = new ArrayList<>();
        private final List<Plan.RestartCounted> restarts = new ArrayList<>();
        private final Map<String, Integer> restartsThisPass = new LinkedHashMap<>();
        private boolean createService;
        private boolean createPodGroup;
        private boolean resuming;
        private Duration recheckAfter;
        private Plan.CreationReport podsCreated;
        private boolean deleteJob;
        /** A fault whose verdict waits for the other replicas: what the status says meanwhile. */
        private String incidentUnderWay;

        // The next state, starting from the previous one.
        private Phase phase;
        private Instant startTime;
        private Instant completionTime;
        private List<ReplicaGroupState> replicaGroups;
        private Integer elasticReplicas;
        private boolean initialized;
        private boolean running;
        private Pause pause;
        private boolean awaitingAdmission;
        private boolean queued;
        private Outcome outcome;

        Pass(TrainingJob job, JobState previous, Observation<?> observation, Wording wording, RestartBackoff backoff) {
            this.job = job;
            this.previous = previous;
            this.wording = wording;
            this.backoff = backoff;
            this.pods = Pods.ownedBy(job.uid(), observation.pods());
            this.createdPods = observation.createdPods();
            this.podWarnings = observation.podWarnings();
            this.serviceExists = observation.serviceExists();
            this.podGroup = observation.podGroup();
            this.queue = observation.queue();
            this.now = observation.now().truncatedTo(ChronoUnit.SECONDS);
            this.ledger = new RestartLedger(previous);
            this.view = new ReplicaView(pods, previous, ledger, createdPods);
            this.phase = previous.phase();
            this.startTime = previous.startTime();
            this.completionTime = previous.completionTime();
            this.replicaGroups = previous.replicaGroups();
            this.elasticReplicas = previous.elasticReplicas();
            this.initialized = previous.initialized();
            this.running = previous.running();
            this.pause = previous.pause();
            this.queued = previous.queued();
            this.outcome = previous.outcome();
        }

        Decision run() {
            if (previous.phase() != null && previous.phase().isTerminal()) {
                return finished();
            }
            if (job.problem().isPresent()) {
                String problem = job.problem().get();
                events.add(JobEvent.warning(Outcome.InvalidSpec.name(), problem));
                return end(Outcome.InvalidSpec, problem, null);
            }
            JobTopology topology = JobTopology.of(job);
            if (job.runMode() == RunMode.PAUSE) {
                return pausing(topology);
            }
            boolean admitted = queue instanceof QueueAdmission.NotQueued || queue instanceof QueueAdmission.Admitted;
            if (previous.pause() == Pause.PAUSED || (previous.pause() == Pause.EVICTED && admitted)) {
                // Resuming (after a pause, or readmitted after an eviction): startTime restarts with the new
                // pods; backoffCount is kept.
                resuming = true;
                startTime = null;
                if (previous.pause() == Pause.PAUSED) {
                    events.add(JobEvent.normal("Resumed", wording.resuming()));
                }
            }
            if (queue instanceof QueueAdmission.Admitted admission && previous.queued()) {
                events.add(JobEvent.normal("Admitted", "Admitted by ClusterQueue " + admission.clusterQueue()
                        + (previous.pause() == Pause.EVICTED ? "; the job resumes after its eviction" : "")));
            }
            if (queue instanceof QueueAdmission.Refused refused) {
                String message = "the queue's admission cannot be applied to the pods: " + refused.message();
                return end(Outcome.FailedToStart, message, topology);
            }
            if (!admitted) {
                return queued(topology);
            }
            if (podGroup == PodGroupState.API_MISSING) {
                return awaitingAdmission(topology);
            }
            if (job.runMode() == RunMode.DEBUG) {
                return debugging(topology);
            }
            ledger.prune(pods);

            Optional<Instant> deadline = deadline();
            if (deadline.isPresent() && !now.isBefore(deadline.get())) {
                return end(Outcome.DeadlineExceeded, "the job ran longer than runPolicy.activeDeadlineSeconds="
                        + job.runPolicy().activeDeadlineSeconds() + " (started " + startTime + ")", topology);
            }
            Optional<String> success = success(topology);
            if (success.isPresent() && !failedBeforeSuccess(topology)) {
                countRestartsInPlaceBeforeSuccess(topology);
                return end(Outcome.Succeeded, "The job has finished successfully: " + success.get() + ".", topology);
            }
            return training(topology);
        }

        // ---- training -----------------------------------------------------------------------------

        private Decision training(JobTopology topology) {
            List<ReplicaSlot> missing = new ArrayList<>();
            List<Stopped> stopped = new ArrayList<>();
            List<RestartedInPlace> inPlace = new ArrayList<>();
            for (ReplicaSlot slot : topology.slots()) {
                Pod pod = pods.get(slot.podName());
                ReplicaState before = previous.replica(slot.podName());
                // The last pod this replica had: one this operator created may be newer than the status knows.
                String lastUid = createdPods.getOrDefault(slot.podName(), before == null ? null : before.uid());
                Optional<Instant> restartAt = ledger.restartAt(slot.podName()).filter(now::isBefore);
                if (pod != null) {
                    if (ledger.isCounted(pod)) {
                        // Restart already counted (maybe by an earlier operator run): count nothing. A pod still running
                        // (a survivor of a group restart) is ended at once; a failed one stays until its back-off is due,
                        // so its logs can still be read.
                        if (restartAt.isPresent() && Pods.replicaPhase(pod).isFinished()) {
                            recheckAt(restartAt.get());
                        } else {
                            deleteUnlessTerminating(pod, DeletionReason.RESTART);
                        }
                    } else if (Pods.isTerminating(pod)) {
                        if (job.restartsAsGroup() && java.util.Objects.equals(uidOf(pod), lastUid)) {
                            // Being deleted by someone else (kubectl delete pod, an eviction): it stops from outside, now.
                            stopped.add(new Stopped(slot, ReplicaEnding.ofDeletedPod(pod), uidOf(pod), pod));
                        }
                    } else {
                        restartedInPlace(slot, pod).ifPresent(inPlace::add);
                        String podPhase = Pods.phase(pod);
                        if ("Failed".equals(podPhase)) {
                            stopped.add(new Stopped(slot, ReplicaEnding.ofFailedPod(pod), uidOf(pod), pod));
                        } else if ("Succeeded".equals(podPhase) && !slot.isMaster()
                                && slot.restartPolicy() == TrainingJob.RestartPolicy.Always) {
                            stopped.add(new Stopped(slot, ReplicaEnding.succeeded(pod), uidOf(pod), pod));
                        }
                    }
                } else if (lastUid != null && !ledger.isCounted(slot.podName(), lastUid)) {
                    stopped.add(new Stopped(slot, ReplicaEnding.vanished(slot.podName()), lastUid, null));
                } else if (restartAt.isPresent()) {
                    recheckAt(restartAt.get()); // backing off: the new pod comes when it is due
                } else {
                    missing.add(slot);
                }
            }
            ledger.retainOnly(topology.slots().stream().map(ReplicaSlot::podName).collect(Collectors.toSet()));

            int limit = job.runPolicy().backoffLimit();
            if (job.restartsAsGroup()) {
                List<Stopped> failures = new ArrayList<>(stopped.stream().filter(Stopped::isFailure).toList());
                inPlace.forEach(r -> failures.add(new Stopped(r.slot(), ReplicaEnding.restartedInPlace(r.pod()), uidOf(r.pod()), r.pod())));
                if (!failures.isEmpty()) {
                    Optional<Decision> ended = incident(topology, Incident.of(failures), inPlace, missing);
                    if (ended.isPresent()) {
                        return ended.get();
                    }
                    stopped.removeIf(Stopped::isFailure);
                    inPlace.clear();
                }
            }
            for (RestartedInPlace restarted : inPlace) {
                Optional<Decision> spent = countInPlace(restarted, limit, topology);
                if (spent.isPresent()) {
                    return spent.get();
                }
            }
            RestartDecision decision = RestartDecision.of(stopped, ledger.backoffCount(), job.runPolicy().restartsAllowed(),
                    job.retryableExitCodes());
            if (decision instanceof RestartDecision.NotRestartable notRestartable) {
                Stopped s = notRestartable.replica();
                view.failed(s.ending());
                String message = s.ending().withOutput(s.ending().summary() + "; restartPolicy " + s.policy() + " does not restart it");
                events.add(JobEvent.warning("ReplicaFailed", message).about(s.podUid()));
                return end(Outcome.ReplicaFailedPermanently, message, topology);
            }
            if (decision instanceof RestartDecision.BudgetSpent spent) {
                view.failed(spent.replica().ending());
                ReplicaEnding ending = spent.replica().ending();
                String message = ending.withOutput(ending.summary() + "; the restart budget is spent (backoffCount "
                        + ledger.backoffCount() + " of runPolicy.backoffLimit " + limit + ")");
                events.add(JobEvent.warning("ReplicaFailed", message).about(spent.replica().podUid()));
                return end(Outcome.BackoffLimitExceeded, message, topology);
            }
            RestartDecision.Restart restart = (RestartDecision.Restart) decision;
            for (Stopped s : restart.restarts()) {
                Optional<Instant> restartAt = countRestart(s, limit);
                if (restartAt.isPresent()) {
                    recheckAt(restartAt.get());
                } else if (s.pod() != null) {
                    deleteUnlessTerminating(s.pod(), DeletionReason.RESTART);
                } else {
                    missing.add(s.slot());
                }
            }

            scaleDown(topology);
            createService = !serviceExists;
            createPodGroup = podGroup == PodGroupState.MISSING;
            boolean pausedBefore = previous.pause() != Pause.NEVER;
            for (ReplicaSlot slot : missing) {
                creates.add(new PodRequest(slot, pausedBefore ? PodMode.RESUME : PodMode.TRAIN));
            }
            podsCreated("Created pods ");
            deadline().ifPresent(d -> recheckAt(d.plusSeconds(1)));

            List<StartBlocker> cannotStart = cannotStart(topology);
            replicaGroups = view.of(topology, true, restartsThisPass);
            if (job.elastic()) {
                elasticReplicas = (int) topology.slots().stream().filter(s -> pods.containsKey(s.podName())).count();
            }
            boolean allCreated = serviceExists && topology.slots().stream().allMatch(s -> pods.containsKey(s.podName()));
            boolean allRunning = topology.slots().stream().allMatch(s -> isRunningOrDone(s, pods.get(s.podName())));
            initialized = allCreated || previous.initialized();
            running = allRunning || previous.running();
            phase = running ? Phase.Running : pausedBefore ? Phase.Resuming : Phase.Pending;
            boolean replicaFailure = !restart.failures().isEmpty() || ledger.hasEntries() || incidentUnderWay != null;
            return decided(new Situation.Active(replicaFailure, incidentUnderWay != null ? incidentUnderWay
                    : replicaFailureMessage(restart.failures()), cannotStart));
        }

        // ---- group restarts ---------------------------------------------------------------------------

        /**
         * A fault of a job that restarts as a group. When the first failure seen is a program's own exit, it
         * may be the consequence of a fault not reported yet: the verdict waits until every replica has
         * stopped, or {@link Incident#SETTLE} has passed since the first failure. A stop from outside (a
         * signal, OOM, deletion, eviction) is nobody's consequence and is decided at once. Then a cause its
         * policy does not restart fails the job, one the budget cannot pay for too, and otherwise the replicas
         * restart together for one restart of the budget. Returns the decision when the job ends.
         */
        private Optional<Decision> incident(JobTopology topology, Incident incident, List<RestartedInPlace> inPlace,
                List<ReplicaSlot> missing) {
            List<String> running = topology.slots().stream().filter(slot -> !incident.involves(slot) && isStillRunning(pods.get(slot.podName())))
                    .map(ReplicaSlot::podName).toList();
            Optional<Instant> settles = incident.settlesAt();
            if (!running.isEmpty() && !incident.cause().ending().fromOutside() && settles.isPresent() && now.isBefore(settles.get())) {
                recheckAt(settles.get());
                incidentUnderWay = incident.story() + "; waiting until " + settles.get() + " for " + String.join(", ", running)
                        + " before deciding";
                return Optional.empty();
            }
            Stopped cause = incident.cause();
            int limit = job.runPolicy().backoffLimit();
            if (!RestartRules.isRestartable(cause.policy(), cause.ending(), job.retryableExitCodes())) {
                recordIncident(incident, null);
                String message = cause.ending().withOutput(incident.story() + "; restartPolicy " + cause.policy() + " does not restart "
                        + cause.slot().podName());
                events.add(JobEvent.warning("ReplicaFailed", message).about(cause.podUid()));
                return Optional.of(end(Outcome.ReplicaFailedPermanently, message, topology));
            }
            if (ledger.backoffCount() + 1 > job.runPolicy().restartsAllowed()) {
                recordIncident(incident, null);
                String message = cause.ending().withOutput(incident.story() + "; the restart budget is spent (backoffCount "
                        + ledger.backoffCount() + " of runPolicy.backoffLimit " + limit + ")");
                events.add(JobEvent.warning("ReplicaFailed", message).about(cause.podUid()));
                return Optional.of(end(Outcome.BackoffLimitExceeded, message, topology));
            }
            restartGroup(topology, incident, inPlace, missing, limit);
            return Optional.empty();
        }

        /** Alive as far as the pods show: not being deleted and not finished. */
        private boolean isStillRunning(Pod pod) {
            return pod != null && !Pods.isTerminating(pod) && !ledger.isCounted(pod) && !Pods.replicaPhase(pod).isFinished();
        }

        /**
         * Counts the incident once and ends the group: every pod of the replicas goes (a survivor at once, a
         * failed one when the back-off is due) and the new pods come once their names are free. When the
         * kubelet restarted every replica in place, they re-form the group by themselves and stay; when some
         * did not restart (blocked in a collective, or waiting at a rendezvous the others left), the whole
         * group starts anew, so no rank of the old group is left to fail later.
         */
        private void restartGroup(JobTopology topology, Incident incident, List<RestartedInPlace> inPlace, List<ReplicaSlot> missing,
                int limit) {
            Stopped cause = incident.cause();
            boolean survivors = topology.slots().stream().anyMatch(slot -> isStillRunning(pods.get(slot.podName())) && !incident.involves(slot));
            // Faults in a row of the job as a whole, whichever rank failed: the back-off grows with them.
            boolean ranLongEnough = cause.ending().ran() != null && cause.ending().ran().compareTo(backoff.resetAfter()) >= 0;
            int inARow = ranLongEnough ? 0 : previous.replicaGroups().stream().flatMap(g -> g.replicas().stream())
                    .mapToInt(ReplicaState::failuresInARow).max().orElse(0);
            Duration delay = backoff.delay(inARow);
            Instant restartAt = delay.isZero() ? null : now.plus(delay);
            ledger.countIncident();
            recordIncident(incident, inARow + 1);
            Map<String, RestartedInPlace> restartedInPlace = survivors ? Map.of() : inPlace.stream()
                    .collect(Collectors.toMap(r -> r.slot().podName(), r -> r, (a, b) -> a));
            List<String> stoppedWithIt = new ArrayList<>();
            for (ReplicaSlot slot : topology.slots()) {
                RestartedInPlace restarted = restartedInPlace.get(slot.podName());
                if (restarted != null) {
                    view.restartedInPlace(ReplicaEnding.restartedInPlace(restarted.pod()), restarted.restarts());
                    continue;
                }
                Pod pod = pods.get(slot.podName());
                ReplicaState known = previous.replica(slot.podName());
                String uid = pod != null ? uidOf(pod) : createdPods.getOrDefault(slot.podName(), known == null ? null : known.uid());
                if (uid == null) {
                    continue; // not created yet: nothing to end
                }
                if (isStillRunning(pod) && !incident.involves(slot)) {
                    stoppedWithIt.add(slot.podName());
                }
                if (!ledger.isCounted(slot.podName(), uid)) {
                    ledger.mark(slot.podName(), uid, restartAt);
                }
                if (pod == null) {
                    if (restartAt == null) {
                        missing.add(slot);
                    } else {
                        recheckAt(restartAt);
                    }
                } else if (restartAt != null && Pods.replicaPhase(pod).isFinished()) {
                    recheckAt(restartAt);
                } else {
                    deleteUnlessTerminating(pod, DeletionReason.RESTART);
                }
            }
            restartsThisPass.merge(cause.slot().type(), 1, Integer::sum);
            ReplicaEnding ending = cause.ending();
            restarts.add(new Plan.RestartCounted(cause.slot().type(), ending.exitCode() != null
                    && (ending.cause() == ReplicaEnding.Cause.FAILED || ending.cause() == ReplicaEnding.Cause.RESTARTED_IN_PLACE)
                            ? ending.exitCode().toString() : ending.cause().name().toLowerCase(),
                    ending.cause() == ReplicaEnding.Cause.RESTARTED_IN_PLACE));
            String message = incident.story()
                    + (stoppedWithIt.isEmpty() ? "" : "; stopping " + String.join(", ", stoppedWithIt))
                    + "; the job restarts as a group (restart " + ledger.backoffCount()
                    + (limit == Integer.MAX_VALUE ? ", no backoffLimit" : " of backoffLimit " + limit)
                    + (restartAt == null ? "" : "; back-off " + delay.toSeconds() + " s, new pods at " + restartAt) + ")";
            events.add(JobEvent.warning("JobRestarting", ending.withOutput(message)).about(cause.podUid()));
        }

        /** What the status keeps of an incident: each replica's last failure, the cause's and the consequences'. */
        private void recordIncident(Incident incident, Integer inARow) {
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

        /**
         * The replicas whose pods cannot start, and why: said once per pod and cause, counted as nothing;
         * they start by themselves once the cause is fixed (only the deadline, or the queue's own
         * waitForPodsReady, ends the wait).
         */
        private List<StartBlocker> cannotStart(JobTopology topology) {
            List<StartBlocker> blocked = new ArrayList<>();
            for (ReplicaSlot slot : topology.slots()) {
                Pod pod = pods.get(slot.podName());
                if (pod == null || ledger.isCounted(pod)) {
                    continue;
                }
                ReplicaState before = previous.replica(slot.podName());
                String uid = uidOf(pod);
                StartBlocker known = before != null && uid != null && uid.equals(before.uid()) ? before.cannotStart() : null;
                Optional<StartBlocker> blocker = StartBlocker.of(pod, uid == null ? null : podWarnings.get(uid), known, now);
                StartBlocker.nextLookAtWarnings(pod, now).ifPresent(this::recheckAt);
                if (blocker.isPresent()) {
                    view.cannotStart(slot.podName(), blocker.get());
                    blocked.add(blocker.get());
                    if (known == null || !known.reason().equals(blocker.get().reason())) {
                        events.add(JobEvent.warning("ReplicaCannotStart", blocker.get().message()
                                + "; the job waits for it, nothing is counted").about(uid + "#" + blocker.get().reason()));
                    }
                }
            }
            return blocked;
        }

        /** Container restarts the kubelet made of one pod since the last pass. */
        private record RestartedInPlace(ReplicaSlot slot, Pod pod, int restarts, int uncounted) {
        }

        /** The kubelet restarts containers itself under pod restartPolicy OnFailure and Always: those not counted yet. */
        private Optional<RestartedInPlace> restartedInPlace(ReplicaSlot slot, Pod pod) {
            int restarts = Pods.containerRestarts(pod);
            int counted = view.restartsInPlaceCounted(pod);
            return restarts > counted ? Optional.of(new RestartedInPlace(slot, pod, restarts, restarts - counted)) : Optional.empty();
        }

        /**
         * The job succeeded while the verdict on restarts the kubelet made in place still waited: they
         * happened (the group re-formed and trained to the end), so they are one restart, said and counted.
         */
        private void countRestartsInPlaceBeforeSuccess(JobTopology topology) {
            if (!job.restartsAsGroup()) {
                return;
            }
            List<RestartedInPlace> inPlace = topology.slots().stream()
                    .filter(slot -> pods.get(slot.podName()) != null && !Pods.isTerminating(pods.get(slot.podName())))
                    .map(slot -> restartedInPlace(slot, pods.get(slot.podName()))).flatMap(Optional::stream).toList();
            if (inPlace.isEmpty()) {
                return;
            }
            Incident incident = Incident.of(inPlace.stream()
                    .map(r -> new Stopped(r.slot(), ReplicaEnding.restartedInPlace(r.pod()), uidOf(r.pod()), r.pod())).toList());
            ledger.countIncident();
            recordIncident(incident, null);
            inPlace.forEach(r -> view.restartedInPlace(ReplicaEnding.restartedInPlace(r.pod()), r.restarts()));
            restartsThisPass.merge(incident.cause().slot().type(), 1, Integer::sum);
            ReplicaEnding ending = incident.cause().ending();
            restarts.add(new Plan.RestartCounted(incident.cause().slot().type(),
                    ending.exitCode() != null ? ending.exitCode().toString() : "in-place", true));
            events.add(JobEvent.warning("JobRestarting", ending.withOutput(incident.story() + "; the ranks re-formed the group in place "
                    + "(restart " + ledger.backoffCount() + ")")).about(incident.cause().podUid()));
        }

        /**
         * Counts restarts the kubelet already made, each once (the replica's status keeps how many of
         * its pod's restarts were counted); the job fails when they spend the budget.
         */
        private Optional<Decision> countInPlace(RestartedInPlace restarted, int limit, JobTopology topology) {
            ReplicaEnding ending = ReplicaEnding.restartedInPlace(restarted.pod());
            for (int i = 0; i < restarted.uncounted(); i++) {
                ledger.countInPlace();
                restartsThisPass.merge(restarted.slot().type(), 1, Integer::sum);
                restarts.add(new Plan.RestartCounted(restarted.slot().type(),
                        ending.exitCode() != null ? ending.exitCode().toString() : "in-place", true));
                if (ledger.backoffCount() > job.runPolicy().restartsAllowed()) {
                    view.restartedInPlace(ending, restarted.restarts());
                    String message = ending.withOutput(ending.summary() + "; the restart budget is spent (backoffCount "
                            + ledger.backoffCount() + " of runPolicy.backoffLimit " + limit + ")");
                    events.add(JobEvent.warning("ReplicaFailed", message).about(inPlaceSubject(restarted)));
                    return Optional.of(end(Outcome.BackoffLimitExceeded, message, topology));
                }
            }
            view.restartedInPlace(ending, restarted.restarts());
            events.add(JobEvent.warning("ReplicaRestarted", ending.withOutput(ending.summary() + " (restart " + ledger.backoffCount()
                    + (limit == Integer.MAX_VALUE ? ", no backoffLimit" : " of backoffLimit " + limit) + ")")).about(inPlaceSubject(restarted)));
            return Optional.empty();
        }

        /** A pod's restarts in place are told apart by how many the kubelet had made. */
        private static String inPlaceSubject(RestartedInPlace restarted) {
            return uidOf(restarted.pod()) + "#" + restarted.restarts();
        }

        /** Counts the restart; when the back-off makes it wait, returns when its new pod is due. */
        private Optional<Instant> countRestart(Stopped s, int limit) {
            ReplicaEnding ending = s.ending();
            Duration delay = Duration.ZERO;
            if (s.isFailure()) {
                ReplicaState before = previous.replica(s.slot().podName());
                boolean ranLongEnough = ending.ran() != null && ending.ran().compareTo(backoff.resetAfter()) >= 0;
                int inARow = before == null || ranLongEnough ? 0 : before.failuresInARow();
                delay = backoff.delay(inARow);
                view.failed(ending, inARow + 1);
            }
            Instant restartAt = delay.isZero() ? null : now.plus(delay);
            ledger.count(s.slot().podName(), s.podUid(), restartAt);
            restartsThisPass.merge(s.slot().type(), 1, Integer::sum);
            restarts.add(new Plan.RestartCounted(s.slot().type(),
                    ending.cause() == ReplicaEnding.Cause.FAILED && ending.exitCode() != null
                            ? ending.exitCode().toString()
                            : ending.cause().name().toLowerCase()));
            events.add(JobEvent.warning("ReplicaRestarted", ending.withOutput("Restarting " + ending.summary() + " (restart "
                    + ledger.backoffCount() + (limit == Integer.MAX_VALUE ? ", no backoffLimit" : " of backoffLimit " + limit) + (restartAt == null ? "" : "; back-off " + delay.toSeconds()
                    + " s, new pod at " + restartAt) + ")")).about(s.podUid()));
            return Optional.ofNullable(restartAt);
        }

        /** Look again at this time (or earlier, if something else asked so): nothing else would say it is time. */
        private void recheckAt(Instant when) {
            Duration in = Duration.between(now, when.isAfter(now.plus(MAX_RECHECK)) ? now.plus(MAX_RECHECK) : when);
            if (recheckAfter == null || in.compareTo(recheckAfter) < 0) {
                recheckAfter = in;
            }
        }

        private String replicaFailureMessage(List<Stopped> failures) {
            if (!failures.isEmpty()) {
                return failures.stream().map(s -> s.ending().describe()).collect(Collectors.joining("; "));
            }
            if (ledger.hasEntries()) {
                return "Restarting " + ledger.entries().stream()
                        .map(c -> c.restartAt() != null && now.isBefore(c.restartAt()) ? c.pod() + " at " + c.restartAt() : c.pod())
                        .collect(Collectors.joining(", ")) + ".";
            }
            return "All replicas are healthy.";
        }

        /** Pods beyond the replicas wanted (elastic scale-down) are deleted on purpose, never counted. */
        private void scaleDown(JobTopology topology) {
            Set<String> wanted = topology.slots().stream().map(ReplicaSlot::podName).collect(Collectors.toSet());
            pods.values().stream()
                    .filter(pod -> !wanted.contains(pod.getMetadata().getName()))
                    .forEach(pod -> deleteUnlessTerminating(pod, DeletionReason.SCALE_DOWN));
        }

        /** Reported by the executor once the pods exist, naming only those it did create. */
        private void podsCreated(String wording) {
            if (!creates.isEmpty()) {
                if (startTime == null) {
                    startTime = now;
                }
                podsCreated = new Plan.CreationReport(wording);
            }
        }

        // ---- run modes and admission ----------------------------------------------------------------

        /** Pause: delete every pod (never counted), create none; paused once all are gone. */
        private Decision pausing(JobTopology topology) {
            pods.values().forEach(pod -> deleteUnlessTerminating(pod, DeletionReason.PAUSE));
            boolean allGone = pods.isEmpty();
            ledger.close();
            // Pods deleted by the pause are forgotten at once, so a resume, however soon, never takes them for vanished.
            replicaGroups = forgettingPods(topology);
            phase = allGone ? Phase.Paused : previous.phase() == null ? Phase.Pending : previous.phase();
            running = false;
            pause = allGone ? Pause.PAUSED : Pause.NOT_PAUSED;
            if (allGone && previous.pause() != Pause.PAUSED) {
                events.add(JobEvent.normal("Paused", "The job is paused: " + wording.paused()));
            }
            return decided(new Situation.Pausing(pods.size()));
        }

        private List<ReplicaGroupState> forgettingPods(JobTopology topology) {
            return view.of(topology, false, Map.of()).stream()
                    .map(group -> new ReplicaGroupState(group.type(), group.restartCount(), group.replicas().stream()
                            .map(r -> new ReplicaState(r.name(), null, r.phase(), r.containers(), r.lastFailure(), r.failuresInARow()))
                            .toList()))
                    .toList();
        }

        /**
         * Not admitted by its queue: no pod may run (an evicted job's are deleted, never counted, and
         * forgotten like a pause's); the job waits, and readmission after an eviction resumes it.
         */
        private Decision queued(JobTopology topology) {
            boolean hadPods = !pods.isEmpty();
            pods.values().forEach(pod -> deleteUnlessTerminating(pod, DeletionReason.QUEUE));
            ledger.close();
            replicaGroups = forgettingPods(topology);
            if (!resuming && (startTime != null || hadPods || previous.pause() == Pause.EVICTED)) {
                pause = Pause.EVICTED;
            }
            phase = Phase.Pending;
            running = false;
            queued = true;
            if (job.elastic()) {
                elasticReplicas = pods.size();
            }
            Situation.Queued situation;
            if (queue instanceof QueueAdmission.Waiting waiting) {
                boolean requeued = pause == Pause.EVICTED;
                situation = new Situation.Queued(waiting.queue(), requeued ? Situation.Queued.REQUEUED : Situation.Queued.WAITING,
                        (requeued ? "Evicted earlier; waiting in LocalQueue " : "Waiting in LocalQueue ") + waiting.queue() + ": "
                                + waiting.message(), pods.size());
            } else if (queue instanceof QueueAdmission.Unavailable unavailable) {
                situation = new Situation.Queued(unavailable.queue(), Situation.Queued.UNAVAILABLE, unavailable.message(), pods.size());
                recheckAfter = ADMISSION_RECHECK;
            } else {
                QueueAdmission.Evicted evicted = (QueueAdmission.Evicted) queue;
                situation = new Situation.Queued(evicted.queue(), Situation.Queued.EVICTED, "Evicted by Kueue (" + evicted.reason() + "): "
                        + evicted.message() + (pods.isEmpty() ? "" : "; deleting " + pods.size() + " pod(s), none counted as a failure"),
                        pods.size());
            }
            if (!previous.queued()) {
                events.add(queue instanceof QueueAdmission.Waiting ? JobEvent.normal("Queued", situation.message())
                        : JobEvent.warning(situation.reason(), situation.message()));
            }
            return decided(situation);
        }

        /** Debug: the environment of a training replica, the debug command, no restarts, no outcome. */
        private Decision debugging(JobTopology topology) {
            List<ReplicaSlot> missing = topology.slots().stream().filter(s -> !pods.containsKey(s.podName())).toList();
            createService = !serviceExists;
            createPodGroup = podGroup == PodGroupState.MISSING;
            missing.forEach(slot -> creates.add(new PodRequest(slot, PodMode.DEBUG)));
            podsCreated("Created debug pods ");
            ledger.close();
            replicaGroups = view.of(topology, true, Map.of());
            boolean allCreated = serviceExists && missing.isEmpty();
            boolean allRunning = topology.slots().stream().allMatch(s -> "Running".equals(Pods.phaseOrNull(pods.get(s.podName()))));
            initialized = allCreated || previous.initialized();
            running = allRunning || previous.running();
            List<String> failed = topology.slots().stream().filter(s -> "Failed".equals(Pods.phaseOrNull(pods.get(s.podName()))))
                    .map(ReplicaSlot::podName).toList();
            phase = running ? Phase.Running : Phase.Pending;
            return decided(new Situation.Debugging(failed));
        }

        /** The gate is closed (the PodGroup API is missing): wait, create nothing, say why once. */
        private Decision awaitingAdmission(JobTopology topology) {
            phase = Phase.Pending;
            replicaGroups = view.of(topology, true, Map.of());
            initialized = false;
            running = false;
            if (!previous.awaitingAdmission()) {
                events.add(JobEvent.warning("SchedulerUnavailable", wording.awaitingAdmission()));
            }
            awaitingAdmission = true;
            recheckAfter = ADMISSION_RECHECK;
            return decided(new Situation.AwaitingAdmission());
        }

        // ---- the end ---------------------------------------------------------------------------------

        /** The job ends with this outcome: completion time, clean-up, the replica view as the pods are left. */
        private Decision end(Outcome ending, String message, JobTopology topology) {
            outcome = ending;
            phase = ending == Outcome.Succeeded ? Phase.Succeeded : Phase.Failed;
            completionTime = now;
            ledger.close();
            replicaGroups = topology != null ? view.of(topology, false, restartsThisPass) : view.refreshed();
            cleanUp(ending == Outcome.DeadlineExceeded);
            initialized = ending == Outcome.Succeeded || previous.initialized();
            running = false;
            timeToLive().ifPresent(this::recheckAt);
            if (ending == Outcome.Succeeded) {
                events.add(JobEvent.normal(Outcome.Succeeded.name(), message));
            } else {
                events.add(JobEvent.warning("Failed", "Job failed (" + ending + "): " + message));
            }
            return decided(new Situation.Ended(ending, message));
        }

        /** A finished job keeps its outcome; only clean-up, the replica view and its time to live move on. */
        private Decision finished() {
            replicaGroups = view.refreshed();
            Optional<Instant> expires = timeToLive();
            if (expires.isPresent() && !now.isBefore(expires.get())) {
                deleteJob = true;
            } else {
                expires.ifPresent(this::recheckAt);
            }
            cleanUp(previous.outcome() == Outcome.DeadlineExceeded);
            boolean pauseRequested = job.runMode() == RunMode.PAUSE;
            if (pauseRequested) {
                if (previous.pause() != Pause.IGNORED) {
                    events.add(JobEvent.warning("PauseIgnored", wording.pauseIgnored(previous.phase())));
                }
                pause = Pause.IGNORED;
            }
            return decided(new Situation.Finished(pauseRequested));
        }

        /** The clean-pod policy after the outcome; a deadline also deletes unfinished pods whatever the policy. */
        private void cleanUp(boolean deadline) {
            CleanPodPolicy policy = job.runPolicy().cleanPodPolicy();
            for (Pod pod : pods.values()) {
                boolean unfinished = !Pods.replicaPhase(pod).isFinished();
                if (policy == CleanPodPolicy.All || (unfinished && (policy == CleanPodPolicy.Unfinished || deadline))) {
                    deleteUnlessTerminating(pod, deadline && unfinished ? DeletionReason.DEADLINE : DeletionReason.CLEAN_UP);
                }
            }
        }

        /** The one tail every path ends in: the next state and what to do. */
        private Decision decided(Situation situation) {
            if (resuming) {
                // Whatever path the pass took (training, debug, waiting for admission), the pause is over.
                pause = Pause.NOT_PAUSED;
            }
            if (!(situation instanceof Situation.AwaitingAdmission)) {
                awaitingAdmission = false;
            }
            if (!(situation instanceof Situation.Queued)) {
                queued = false;
            }
            JobState next = new JobState(true, phase, startTime, completionTime, ledger.backoffCount(), ledger.entries(),
                    List.copyOf(replicaGroups), elasticReplicas, initialized, running, pause, awaitingAdmission, queued, outcome);
            return new Decision(next, situation, resuming, createService, createPodGroup, List.copyOf(creates),
                    List.copyOf(deletes), List.copyOf(events), Optional.ofNullable(podsCreated), List.copyOf(restarts),
                    Optional.ofNullable(recheckAfter), now, deleteJob, queue);
        }

        // ---- helpers ------------------------------------------------------------------------------

        /** What made the job succeed, by its success rule; empty while it has not. */
        private Optional<String> success(JobTopology topology) {
            return switch (job.successRule()) {
                case MASTER -> succeeded(topology.master()).map(pod -> "master pod " + pod + " succeeded");
                case ANY_REPLICA -> topology.slots().stream().map(this::succeeded).flatMap(Optional::stream).findFirst()
                        .map(pod -> "pod " + pod + " succeeded");
                case ALL_REPLICAS -> topology.slots().stream().allMatch(slot -> succeeded(slot).isPresent())
                        ? Optional.of("all " + topology.worldSize() + " replicas succeeded") : Optional.empty();
            };
        }

        /** The replica's pod, if it succeeded (and that success is not a restart already counted). */
        private Optional<String> succeeded(ReplicaSlot slot) {
            Pod pod = pods.get(slot.podName());
            return pod != null && "Succeeded".equals(Pods.phase(pod)) && !ledger.isCounted(pod) ? Optional.of(slot.podName())
                    : Optional.empty();
        }

        /**
         * A job restarting as a group whose replica failed in an earlier second than the success was
         * reported: the failure came first (the master may finish while the verdict waits), so the incident
         * is judged, not the success.
         */
        private boolean failedBeforeSuccess(JobTopology topology) {
            if (!job.restartsAsGroup()) {
                return false;
            }
            Instant succeededAt = topology.slots().stream().map(slot -> pods.get(slot.podName()))
                    .filter(pod -> pod != null && "Succeeded".equals(Pods.phase(pod)))
                    .map(pod -> ReplicaEnding.ofFailedPod(pod).at()).filter(java.util.Objects::nonNull)
                    .max(java.util.Comparator.naturalOrder()).orElse(null);
            return succeededAt != null && topology.slots().stream().map(slot -> pods.get(slot.podName()))
                    .filter(pod -> pod != null && "Failed".equals(Pods.phase(pod)) && !ledger.isCounted(pod))
                    .map(pod -> ReplicaEnding.ofFailedPod(pod).at())
                    .anyMatch(at -> at != null && at.isBefore(succeededAt));
        }

        private boolean isRunningOrDone(ReplicaSlot slot, Pod pod) {
            if (pod == null) {
                return false;
            }
            String podPhase = Pods.phase(pod);
            return "Running".equals(podPhase) || ("Succeeded".equals(podPhase) && !slot.isMaster());
        }

        /** When a finished job is deleted (ttlSecondsAfterFinished), if it is. */
        private Optional<Instant> timeToLive() {
            Long seconds = job.runPolicy().ttlSecondsAfterFinished();
            return seconds == null || completionTime == null ? Optional.empty()
                    : Optional.of(completionTime.plusSeconds(Math.min(seconds, MAX_DEADLINE.getSeconds())));
        }

        private Optional<Instant> deadline() {
            Long seconds = job.runPolicy().activeDeadlineSeconds();
            // A deadline centuries away is no deadline, and must not overflow the clock.
            return seconds == null || startTime == null ? Optional.empty()
                    : Optional.of(startTime.plusSeconds(Math.min(seconds, MAX_DEADLINE.getSeconds())));
        }

        private void deleteUnlessTerminating(Pod pod, DeletionReason reason) {
            if (!Pods.isTerminating(pod)) {
                deletes.add(new PodDeletion(pod.getMetadata().getName(), uidOf(pod), pod.getMetadata().getResourceVersion(), reason));
            }
        }

        private static String uidOf(Pod pod) {
            return pod.getMetadata().getUid();
        }
    }
}
