package dev.torchjob.operator.engine;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import dev.torchjob.operator.engine.Decision.PodMode;
import dev.torchjob.operator.engine.Decision.PodRequest;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.JobState.Pause;
import dev.torchjob.operator.engine.JobState.ReplicaGroupState;
import dev.torchjob.operator.engine.JobState.ReplicaState;
import dev.torchjob.operator.engine.Observation.PodGroupState;
import dev.torchjob.operator.engine.Plan.DeletionReason;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.RestartDecision.Stopped;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * The engine: one pass of reconciliation decided as a pure function of the job (in the neutral
 * model), the state its status recorded, what is observed of it, and the time. No I/O.
 *
 * <p>The steps, in order: a finished job only cleans up ({@link JobEnd}, which also ends a job); an invalid one fails; pause; resume;
 * admission (the queue's gate, where a job not admitted waits as {@link QueueWait} says, then the gang
 * scheduler's); debug; the deadline; success (by the job's rule, {@link JobSuccess}); and training, where stopped replicas restart or end the
 * job: together for a job that restarts as a group ({@link GroupRestarts}), one by one otherwise
 * ({@link ReplicaRestarts}); missing replicas get new pods unless {@link NewPodsHold} says why not, and replicas whose
 * pods cannot start wait ({@link ReplicasCannotStart}).
 * The steps share one {@link PassContext}; what a pass decides to do accumulates in its {@link PassOutput}, and the job's
 * next state in its {@link NextState}.
 */
public final class Engine {
    /** A closed gate sends no event when it opens (the API gets installed): look again this often. */
    public static final Duration ADMISSION_RECHECK = Duration.ofSeconds(60);
    /** activeDeadlineSeconds beyond this (about 100 years) counts as this. */
    static final Duration MAX_DEADLINE = Duration.ofDays(36_525);

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
        private final Map<String, Pod> pods;
        private final Gang gang;
        private final boolean serviceExists;
        private final PodGroupState podGroup;
        private final QueueAdmission queue;
        private final Instant now;
        private final RestartLedger ledger;
        private final ReplicaView view;

        private final PassOutput out;
        private final PassContext context;
        private final NextState next;
        private final JobEnd jobEnd;
        private final GroupRestarts groupRestarts;
        private final ReplicaRestarts replicaRestarts;
        private final ReplicasCannotStart replicasCannotStart;
        /** A paused or evicted job is taken up again this pass. */
        private boolean resuming;

        Pass(TrainingJob job, JobState previous, Observation<?> observation, Wording wording, RestartBackoff backoff) {
            this.job = job;
            this.previous = previous;
            this.wording = wording;
            this.pods = Pods.ownedBy(job.uid(), observation.pods());
            Map<String, String> createdPods = observation.createdPods();
            this.gang = observation.gang();
            this.serviceExists = observation.serviceExists();
            this.podGroup = observation.podGroup();
            this.queue = observation.queue();
            this.now = observation.now().truncatedTo(ChronoUnit.SECONDS);
            this.ledger = new RestartLedger(previous);
            this.view = new ReplicaView(pods, previous, ledger, createdPods);
            this.out = new PassOutput(now);
            this.context = new PassContext(job, previous, pods, createdPods, observation.gonePods(), ledger, view, backoff, now, out);
            this.groupRestarts = new GroupRestarts(context);
            this.replicaRestarts = new ReplicaRestarts(context);
            this.replicasCannotStart = new ReplicasCannotStart(context, observation.podWarnings(), gang);
            this.next = new NextState(previous);
            this.jobEnd = new JobEnd(context, next, wording);
        }

        Decision run() {
            if (previous.phase() != null && previous.phase().isTerminal()) {
                return decided(jobEnd.finished());
            }
            if (job.problem().isPresent()) {
                String problem = job.problem().get();
                out.events.add(JobEvent.warning(Outcome.InvalidSpec.name(), problem));
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
                next.startTime = null;
                if (previous.pause() == Pause.PAUSED) {
                    out.events.add(JobEvent.normal("Resumed", wording.resuming()));
                }
            }
            if (queue instanceof QueueAdmission.Admitted admission && previous.queued()) {
                out.events.add(JobEvent.normal("Admitted", "Admitted by ClusterQueue " + admission.clusterQueue()
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
                        + job.runPolicy().activeDeadlineSeconds() + " (started " + next.startTime + ")", topology);
            }
            Optional<String> success = JobSuccess.of(job.successRule(), topology, pods, ledger);
            if (success.isPresent() && !(job.restartsAsGroup() && groupRestarts.failedBeforeSuccess(topology))) {
                if (job.restartsAsGroup()) {
                    groupRestarts.countRestartsInPlaceBeforeSuccess(topology);
                }
                return end(Outcome.Succeeded, "The job has finished successfully: " + success.get() + ".", topology);
            }
            return training(topology);
        }

        // ---- training -----------------------------------------------------------------------------

        private Decision training(JobTopology topology) {
            ReplicaSurvey survey = ReplicaSurvey.of(context, topology);
            List<ReplicaSlot> missing = survey.missing();
            List<Stopped> stopped = survey.stopped();
            List<RestartedInPlace> inPlace = survey.inPlace();
            ledger.retainOnly(topology.slots().stream().map(ReplicaSlot::podName).collect(Collectors.toSet()));

            List<Stopped> failures = new ArrayList<>(stopped.stream().filter(Stopped::isFailure).toList());
            if (job.restartsAsGroup() && (!failures.isEmpty() || !inPlace.isEmpty())) {
                List<Stopped> incident = new ArrayList<>(failures);
                inPlace.forEach(r -> incident.add(r.stopped()));
                Optional<Ending> ended = groupRestarts.judge(topology, Incident.of(incident), inPlace, missing);
                if (ended.isPresent()) {
                    return end(ended.get().outcome(), ended.get().message(), topology);
                }
                // A success under Always is still one replica's restart.
                stopped.removeIf(Stopped::isFailure);
                inPlace.clear();
                failures.clear();
            }
            Optional<Ending> ended = replicaRestarts.apply(topology, stopped, inPlace, missing);
            if (ended.isPresent()) {
                return end(ended.get().outcome(), ended.get().message(), topology);
            }

            scaleDown(topology);
            out.createService = !serviceExists;
            out.createPodGroup = podGroup == PodGroupState.MISSING;
            boolean pausedBefore = previous.pause() != Pause.NEVER;
            NewPodsHold hold = NewPodsHold.of(context, topology, missing, gang, resuming);
            for (ReplicaSlot slot : hold.holds() ? List.<ReplicaSlot>of() : missing) {
                out.creates.add(new PodRequest(slot, pausedBefore ? PodMode.RESUME : PodMode.TRAIN));
            }
            podsCreated("Created pods ");
            deadline().ifPresent(d -> out.recheckAt(d.plusSeconds(1)));

            List<StartBlocker> cannotStart = replicasCannotStart.of(topology, hold.byGang() ? missing : List.of());
            next.replicaGroups = view.of(topology, true, out.restartsByType);
            if (job.elastic()) {
                next.elasticReplicas = (int) topology.slots().stream().filter(s -> pods.containsKey(s.podName())).count();
            }
            boolean allCreated = serviceExists && topology.slots().stream().allMatch(s -> pods.containsKey(s.podName()));
            boolean allRunning = topology.slots().stream().allMatch(s -> isRunningOrDone(s, pods.get(s.podName())));
            next.initialized = allCreated || previous.initialized();
            next.running = allRunning || previous.running();
            next.phase = next.running ? JobPhase.Running : pausedBefore ? JobPhase.Resuming : JobPhase.Pending;
            ReplicaHealth health = ReplicaHealth.of(groupRestarts.underWay(), failures.stream().map(Stopped::ending).toList(),
                    ledger.entries(), next.replicaGroups, now);
            return decided(new Situation.Active(health.failing(), health.message(), cannotStart));
        }

        /** Pods beyond the replicas wanted (elastic scale-down) are deleted on purpose, never counted. */
        private void scaleDown(JobTopology topology) {
            Set<String> wanted = topology.slots().stream().map(ReplicaSlot::podName).collect(Collectors.toSet());
            pods.values().stream()
                    .filter(pod -> !wanted.contains(pod.getMetadata().getName()))
                    .forEach(pod -> out.delete(pod, DeletionReason.SCALE_DOWN));
        }

        /** Reported by the executor once the pods exist, naming only those it did create. */
        private void podsCreated(String wording) {
            if (!out.creates.isEmpty()) {
                if (next.startTime == null) {
                    next.startTime = now;
                }
                out.podsCreated = new Plan.CreationReport(wording);
            }
        }

        // ---- run modes and admission ----------------------------------------------------------------

        /** Pause: delete every pod (never counted), create none; paused once all are gone. */
        private Decision pausing(JobTopology topology) {
            pods.values().forEach(pod -> out.delete(pod, DeletionReason.PAUSE));
            boolean allGone = pods.isEmpty();
            ledger.close();
            // Pods deleted by the pause are forgotten at once, so a resume, however soon, never takes them for vanished.
            next.replicaGroups = forgettingPods(topology);
            next.phase = allGone ? JobPhase.Paused : previous.phase() == null ? JobPhase.Pending : previous.phase();
            next.running = false;
            next.pause = allGone ? Pause.PAUSED : Pause.NOT_PAUSED;
            if (allGone && previous.pause() != Pause.PAUSED) {
                out.events.add(JobEvent.normal("Paused", "The job is paused: " + wording.paused()));
            }
            return decided(new Situation.Pausing(pods.size(), LingeringPod.saidOf(pods.values(), now, out)));
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
            pods.values().forEach(pod -> out.delete(pod, DeletionReason.QUEUE));
            ledger.close();
            next.replicaGroups = forgettingPods(topology);
            if (!resuming && (next.startTime != null || hadPods || previous.pause() == Pause.EVICTED)) {
                next.pause = Pause.EVICTED;
            }
            next.phase = JobPhase.Pending;
            next.running = false;
            next.queued = true;
            if (job.elastic()) {
                next.elasticReplicas = pods.size();
            }
            QueueWait.Said said = QueueWait.of(queue, next.pause == Pause.EVICTED, previous.queued(), pods, now, out);
            out.deleteJob = said.deleteJob();
            return decided(said.situation());
        }

        /** Debug: the environment of a training replica, the debug command, no restarts, no outcome. */
        private Decision debugging(JobTopology topology) {
            List<ReplicaSlot> missing = topology.slots().stream().filter(s -> !pods.containsKey(s.podName())).toList();
            out.createService = !serviceExists;
            out.createPodGroup = podGroup == PodGroupState.MISSING;
            missing.forEach(slot -> out.creates.add(new PodRequest(slot, PodMode.DEBUG)));
            podsCreated("Created debug pods ");
            ledger.close();
            next.replicaGroups = view.of(topology, true, Map.of());
            boolean allCreated = serviceExists && missing.isEmpty();
            boolean allRunning = topology.slots().stream().allMatch(s -> "Running".equals(Pods.phaseOrNull(pods.get(s.podName()))));
            next.initialized = allCreated || previous.initialized();
            next.running = allRunning || previous.running();
            List<String> failed = topology.slots().stream().filter(s -> "Failed".equals(Pods.phaseOrNull(pods.get(s.podName()))))
                    .map(ReplicaSlot::podName).toList();
            next.phase = next.running ? JobPhase.Running : JobPhase.Pending;
            return decided(new Situation.Debugging(failed));
        }

        /** The gate is closed (the PodGroup API is missing): wait, create nothing, say why once. */
        private Decision awaitingAdmission(JobTopology topology) {
            next.phase = JobPhase.Pending;
            next.replicaGroups = view.of(topology, true, Map.of());
            next.initialized = false;
            next.running = false;
            if (!previous.awaitingAdmission()) {
                out.events.add(JobEvent.warning("SchedulerUnavailable", wording.awaitingAdmission()));
            }
            next.awaitingAdmission = true;
            out.recheckAt(now.plus(ADMISSION_RECHECK));
            return decided(new Situation.AwaitingAdmission());
        }

        // ---- the end ---------------------------------------------------------------------------------

        /** The job ends with this outcome ({@link JobEnd}). */
        private Decision end(Outcome ending, String message, JobTopology topology) {
            return decided(jobEnd.end(ending, message, topology));
        }

        /** The one tail every path ends in: the next state and what to do. */
        private Decision decided(Situation situation) {
            if (resuming) {
                // Whatever path the pass took (training, debug, waiting for admission), the pause is over.
                next.pause = Pause.NOT_PAUSED;
            }
            if (!(situation instanceof Situation.AwaitingAdmission)) {
                next.awaitingAdmission = false;
            }
            if (!(situation instanceof Situation.Queued)) {
                next.queued = false;
            }
            return new Decision(next.with(ledger), situation, resuming, out.createService, out.createPodGroup, List.copyOf(out.creates),
                    List.copyOf(out.deletes), sidecarsToStop(), List.copyOf(out.events), Optional.ofNullable(out.podsCreated),
                    List.copyOf(out.restarts), out.recheckAfter(), now, out.deleteJob, queue);
        }

        // ---- helpers ------------------------------------------------------------------------------

        /**
         * Pods whose training ended for good while a sidecar runs on, in any state of the job: the replica is
         * judged by its training container, and its pod, kept for its logs, holds nothing more.
         */
        private List<Plan.SidecarStop> sidecarsToStop() {
            Set<String> deleted = out.deletes.stream().map(Plan.PodDeletion::name).collect(Collectors.toSet());
            return pods.values().stream().filter(Pods::runsOnlySidecars).filter(pod -> !deleted.contains(pod.getMetadata().getName()))
                    .map(pod -> new Plan.SidecarStop(pod.getMetadata().getName(), pod.getMetadata().getResourceVersion()))
                    .toList();
        }

        private boolean isRunningOrDone(ReplicaSlot slot, Pod pod) {
            if (pod == null) {
                return false;
            }
            String podPhase = Pods.phase(pod);
            return "Running".equals(podPhase) || ("Succeeded".equals(podPhase) && !slot.isMaster());
        }

        private Optional<Instant> deadline() {
            Long seconds = job.runPolicy().activeDeadlineSeconds();
            // A deadline centuries away is no deadline, and must not overflow the clock.
            return seconds == null || next.startTime == null ? Optional.empty()
                    : Optional.of(next.startTime.plusSeconds(Math.min(seconds, MAX_DEADLINE.getSeconds())));
        }
    }
}
