package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.JobState.Outcome;
import dev.torchjob.operator.engine.Observation.PodGroupState;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.TrainingJob.CleanPodPolicy;
import dev.torchjob.operator.engine.TrainingJob.ReplicaGroup;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.RunMode;
import dev.torchjob.operator.engine.TrainingJob.RunPolicy;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * The engine on its own, with no job API: a neutral job, pods as the cluster would show them, and
 * the state carried from pass to pass exactly as an adapter would store it.
 */
class EngineTest {
    static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    static final Wording WORDING = new Wording() {
        public String paused() {
            return "paused";
        }

        public String pausing(int podsLeft) {
            return "pausing " + podsLeft;
        }

        public String resuming() {
            return "resuming";
        }

        public String pauseIgnored(JobPhase phase) {
            return "ignored";
        }

        public String awaitingAdmission() {
            return "waiting";
        }
    };

    /** A job, its state and pods: each pass applies the decision as the executor would. */
    static final class Run {
        TrainingJob job;
        JobState state = JobState.NEW;
        RestartBackoff backoff = RestartBackoff.NONE;
        QueueAdmission queue = QueueAdmission.NOT_QUEUED;
        Instant now = T0;
        /** Pods created by the last pass, by name: what the operator knows before any pass sees them. */
        final Map<String, String> created = new LinkedHashMap<>();
        final Map<String, Pod> pods = new LinkedHashMap<>();
        /** Pods removed from the cluster, as last seen, by name: what the shell keeps of them a while (GonePods). */
        final Map<String, Pod> gone = new LinkedHashMap<>();
        /** Warning events of pods slow to start, by pod UID, as the shell would look them up. */
        Map<String, List<StartBlocker.PodWarning>> warnings = Map.of();
        /** Pods the API server keeps when they are deleted (their node is lost, a finalizer holds them): they go on terminating. */
        final java.util.Set<String> lingering = new java.util.HashSet<>();
        int uids;

        Run(int workers, int backoffLimit) {
            job = job(workers, backoffLimit);
        }

        Run(TrainingJob job) {
            this.job = job;
        }

        /** The job restarts each replica on its own (restart scope Replica), as Kubeflow v1 does. */
        Run perReplica() {
            job = new TrainingJob(job.name(), job.namespace(), job.uid(), job.generation(), job.groups(),
                    job.runPolicy().withRestartScope(TrainingJob.RestartScope.Replica), job.runMode(), job.successRule(),
                    job.retryableExitCodes(), job.elastic(), job.problem());
            return this;
        }

        /** The job's run mode changes (a pause asked for, or lifted). */
        void runMode(RunMode mode) {
            job = new TrainingJob(job.name(), job.namespace(), job.uid(), job.generation(), job.groups(), job.runPolicy(), mode,
                    job.successRule(), job.retryableExitCodes(), job.elastic(), job.problem());
        }

        static TrainingJob job(int workers, int backoffLimit) {
            return new TrainingJob("j", "ns", "job-uid", 1L,
                    List.of(new ReplicaGroup("master", 1, RestartPolicy.OnFailure), new ReplicaGroup("worker", workers, RestartPolicy.OnFailure)),
                    new RunPolicy(backoffLimit, null, CleanPodPolicy.None), RunMode.TRAIN, TrainingJob.SuccessRule.MASTER,
                    RetryableExitCodes.SIGNALS, false, Optional.empty());
        }

        /** Workers only, one restart policy, as a Kubeflow job without a Master would be. */
        static TrainingJob workersOnly(int workers, RestartPolicy policy, SuccessRule rule, RetryableExitCodes retryable) {
            return new TrainingJob("j", "ns", "job-uid", 1L, List.of(new ReplicaGroup("worker", workers, policy)),
                    new RunPolicy(3, null, CleanPodPolicy.None), RunMode.TRAIN, rule, retryable, rule == SuccessRule.ANY_REPLICA,
                    Optional.empty());
        }

        /** The kubelet restarts the pod's container in place after it exited with this code; the pod stays Running. */
        void restartInPlace(String pod, int exitCode) {
            var status = pods.get(pod).getStatus();
            int restarts = status.getContainerStatuses() == null || status.getContainerStatuses().isEmpty() ? 0
                    : status.getContainerStatuses().get(0).getRestartCount();
            pods.get(pod).setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().withPhase("Running")
                    .addNewContainerStatus().withName("pytorch").withRestartCount(restarts + 1)
                    .withNewState().withNewRunning().endRunning().endState()
                    .withNewLastState().withNewTerminated().withExitCode(exitCode).withReason("Error").endTerminated().endLastState()
                    .endContainerStatus().build());
        }

        void succeed(String pod) {
            pods.get(pod).setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().withPhase("Succeeded")
                    .addNewContainerStatus().withName("pytorch").withNewState().withNewTerminated().withExitCode(0)
                    .endTerminated().endState().endContainerStatus().build());
        }

        Decision pass() {
            Map<String, String> unseen = new LinkedHashMap<>(created);
            unseen.keySet().removeIf(name -> pods.containsKey(name) && pods.get(name).getMetadata().getUid().equals(unseen.get(name)));
            created.clear();
            Decision decision = Engine.decide(job, state, new Observation<>(job, new ArrayList<>(pods.values()), true,
                    PodGroupState.NOT_NEEDED, now, unseen, queue, warnings).withGonePods(Map.copyOf(gone)), WORDING, backoff);
            state = decision.state();
            for (Plan.PodDeletion deletion : decision.podsToDelete()) {
                Pod pod = pods.get(deletion.name());
                if (!lingering.contains(deletion.name())) {
                    // As the API server does for a graceful deletion: the pod is marked, then removed once its containers stopped.
                    if (pod.getMetadata().getDeletionTimestamp() == null) {
                        long grace = deletion.gracePeriodSeconds() == null ? 30 : deletion.gracePeriodSeconds();
                        pod.getMetadata().setDeletionTimestamp(now.plusSeconds(grace).toString());
                        pod.getMetadata().setDeletionGracePeriodSeconds(grace);
                    }
                    removed(deletion.name());
                } else if (pod.getMetadata().getDeletionTimestamp() == null) {
                    long grace = deletion.gracePeriodSeconds() == null ? 30 : deletion.gracePeriodSeconds();
                    pod.getMetadata().setDeletionTimestamp(now.plusSeconds(grace).toString());
                    pod.getMetadata().setDeletionGracePeriodSeconds(grace);
                }
            }
            for (Plan.SidecarStop stop : decision.sidecarsToStop()) {
                Pod pod = pods.get(stop.name());
                Map<String, String> annotations = new LinkedHashMap<>(pod.getMetadata().getAnnotations() == null ? Map.of()
                        : pod.getMetadata().getAnnotations());
                annotations.put(Pods.SIDECARS_STOPPED, now.toString());
                pod.getMetadata().setAnnotations(annotations);
                pod.getSpec().setActiveDeadlineSeconds(1L);
            }
            for (Decision.PodRequest request : decision.podsToCreate()) {
                String name = request.slot().podName();
                created.put(name, "uid-" + (uids + 1));
                pods.put(name, new PodBuilder().withNewMetadata().withName(name).withUid("uid-" + ++uids)
                        .addNewOwnerReference().withController(true).withUid("job-uid").endOwnerReference().endMetadata()
                        .withNewSpec().addNewContainer().withName("pytorch").endContainer().endSpec()
                        .withNewStatus().withPhase("Running").endStatus().build());
            }
            return decision;
        }

        void fail(String pod, int exitCode) {
            fail(pod, exitCode, Duration.ofSeconds(1));
        }

        /** The container exited at {@code at} (the kubelet's finishedAt, whole seconds) with this reason and last output. */
        void exit(String pod, int exitCode, String reason, String output, Instant at) {
            pods.get(pod).setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().withPhase("Failed")
                    .addNewContainerStatus().withName("pytorch").withNewState().withNewTerminated().withExitCode(exitCode)
                    .withReason(reason).withMessage(output).withStartedAt(at.minusSeconds(60).toString()).withFinishedAt(at.toString())
                    .endTerminated().endState().endContainerStatus().build());
        }

        /**
         * The training container exited at {@code at} while a sidecar (a mesh's proxy) runs on: the kubelet keeps the pod
         * Running. {@code restartPolicy} is the pod's: under OnFailure the kubelet would start a failed one again.
         */
        void exitBesideSidecar(String pod, String restartPolicy, int exitCode, String reason, String output, Instant at) {
            Pod p = pods.get(pod);
            p.getSpec().setRestartPolicy(restartPolicy);
            p.getSpec().getContainers().add(new io.fabric8.kubernetes.api.model.ContainerBuilder().withName("istio-proxy").build());
            p.setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().withPhase("Running")
                    .addNewContainerStatus().withName("istio-proxy").withNewState().withNewRunning().endRunning().endState().endContainerStatus()
                    .addNewContainerStatus().withName("pytorch").withNewState().withNewTerminated().withExitCode(exitCode)
                    .withReason(reason).withMessage(output).withStartedAt(at.minusSeconds(60).toString()).withFinishedAt(at.toString())
                    .endTerminated().endState().endContainerStatus().build());
        }

        /** The kubelet ends a pod whose activeDeadlineSeconds is past: the sidecar is killed, the pod Failed with DeadlineExceeded. */
        void deadlineExceeded(String pod) {
            dev.torchjob.operator.testing.PodFates.deadlineExceeded(pods.get(pod));
        }

        /**
         * Stopped from outside at {@code at}: the kubelet's eviction ({@code reason} Evicted, its words on the pod) or, with
         * a null {@code reason}, a DisruptionTarget condition only (the Eviction API, a preemption: the pod is then deleted).
         */
        void disrupted(String pod, String reason, String conditionReason, String message, Instant at) {
            pods.get(pod).setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().withPhase(reason == null ? "Running" : "Failed")
                    .withReason(reason).withMessage(reason == null ? null : message)
                    .addNewCondition().withType("DisruptionTarget").withStatus("True").withReason(conditionReason)
                    .withMessage(message).withLastTransitionTime(at.toString()).endCondition()
                    .addNewContainerStatus().withName("pytorch").withNewState().withNewTerminated().withExitCode(137).withReason("Error")
                    .withFinishedAt(at.toString()).endTerminated().endState().endContainerStatus().build());
            if (reason == null) {
                pods.get(pod).getStatus().getContainerStatuses().get(0).setState(new io.fabric8.kubernetes.api.model.ContainerStateBuilder()
                        .withNewRunning().endRunning().build());
                deleting(pod, at);
            }
        }

        /** The containers of every pod of the run started at {@code at}, and are running. */
        void startedAt(Instant at) {
            pods.values().forEach(pod -> pod.setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().withPhase("Running")
                    .addNewContainerStatus().withName("pytorch").withNewState().withNewRunning().withStartedAt(at.toString()).endRunning()
                    .endState().endContainerStatus().build()));
        }

        /** The pod leaves the cluster (its deletion finished, or it was forced) before the next pass. */
        void removed(String pod) {
            gone.put(pod, pods.remove(pod));
        }

        /** Someone deletes the pod at {@code at} with a 30 s grace period: it is terminating. */
        void deleting(String pod, Instant at) {
            pods.get(pod).getMetadata().setDeletionTimestamp(at.plusSeconds(30).toString());
            pods.get(pod).getMetadata().setDeletionGracePeriodSeconds(30L);
        }

        /** The container ran {@code ranFor} until now, then exited. */
        void fail(String pod, int exitCode, Duration ranFor) {
            pods.get(pod).setStatus(new io.fabric8.kubernetes.api.model.PodStatusBuilder().withPhase("Failed")
                    .addNewContainerStatus().withName("pytorch").withNewState().withNewTerminated().withExitCode(exitCode)
                    .withStartedAt(now.minus(ranFor).toString()).withFinishedAt(now.toString())
                    .endTerminated().endState().endContainerStatus().build());
        }
    }

    @Test
    void withoutAMasterTheJobSucceedsWhenEveryReplicaHasSucceeded() {
        Run run = new Run(Run.workersOnly(2, RestartPolicy.OnFailure, SuccessRule.ALL_REPLICAS, RetryableExitCodes.FROM_128));
        run.pass();
        run.succeed("j-worker-1");
        Decision waiting = run.pass();
        assertEquals(JobPhase.Running, waiting.state().phase(), "one of two workers is done: the job goes on");
        assertTrue(waiting.podsToCreate().isEmpty() && waiting.podsToDelete().isEmpty(), "a finished worker is left as it is");
        run.succeed("j-worker-0");
        Decision done = run.pass();
        assertEquals(Outcome.Succeeded, done.state().outcome());
        assertEquals("The job has finished successfully: all 2 replicas succeeded.", ((Situation.Ended) done.situation()).message());
    }

    @Test
    void anElasticJobWithoutAMasterSucceedsWhenAnyReplicaSucceeds() {
        Run run = new Run(Run.workersOnly(3, RestartPolicy.OnFailure, SuccessRule.ANY_REPLICA, RetryableExitCodes.FROM_128));
        run.pass();
        run.succeed("j-worker-2");
        Decision done = run.pass();
        assertEquals(Outcome.Succeeded, done.state().outcome());
        assertEquals("The job has finished successfully: pod j-worker-2 succeeded.", ((Situation.Ended) done.situation()).message());
    }

    @Test
    void whichExitCodesExitCodeRestartsIsTheJobApisChoice() {
        for (RetryableExitCodes retryable : RetryableExitCodes.values()) {
            for (int exitCode : new int[] {1, 127, 128, 129, 137, 143, 255}) {
                Run run = new Run(Run.workersOnly(1, RestartPolicy.ExitCode, SuccessRule.ALL_REPLICAS, retryable));
                run.pass();
                run.fail("j-worker-0", exitCode);
                Decision decision = run.pass();
                boolean restarts = retryable == RetryableExitCodes.FROM_128 ? exitCode >= 128
                        : List.of(130, 137, 138, 143).contains(exitCode);
                assertEquals(restarts ? null : Outcome.ReplicaFailedPermanently, decision.state().outcome(), retryable + " exit " + exitCode);
                assertEquals(restarts ? 1 : 0, decision.state().backoffCount(), retryable + " exit " + exitCode);
            }
        }
    }

    @Test
    void underKubeflowsBudgetRuleTheJobFailsWhenItsRestartsReachTheLimit() {
        TrainingJob job = Run.workersOnly(1, RestartPolicy.OnFailure, SuccessRule.ALL_REPLICAS, RetryableExitCodes.FROM_128);
        Run run = new Run(new TrainingJob(job.name(), job.namespace(), job.uid(), job.generation(), job.groups(),
                new RunPolicy(2, null, CleanPodPolicy.None, TrainingJob.BudgetRule.FAILS_WHEN_RESTARTS_REACH_LIMIT), job.runMode(),
                job.successRule(), job.retryableExitCodes(), false, Optional.empty()));
        run.pass();
        run.fail("j-worker-0", 1);
        assertEquals(1, run.pass().state().backoffCount(), "restart 1 of backoffLimit 2");
        run.pass();
        run.fail("j-worker-0", 1);
        Decision failed = run.pass();
        assertEquals(Outcome.BackoffLimitExceeded, failed.state().outcome(), "a second restart would reach backoffLimit 2");
        assertTrue(((Situation.Ended) failed.situation()).message().contains("runPolicy.backoffLimit 2"),
                ((Situation.Ended) failed.situation()).message());
    }

    static TrainingJob kubeflowRules(TrainingJob job, int backoffLimit) {
        return new TrainingJob(job.name(), job.namespace(), job.uid(), job.generation(), job.groups(),
                new RunPolicy(backoffLimit, null, CleanPodPolicy.None, TrainingJob.BudgetRule.FAILS_WHEN_RESTARTS_REACH_LIMIT), job.runMode(),
                job.successRule(), job.retryableExitCodes(), false, Optional.empty());
    }

    @Test
    void restartsTheKubeletMakesInPlaceAreEachCountedOnceAcrossPassesAndOperatorRestarts() {
        Run run = new Run(kubeflowRules(Run.workersOnly(2, RestartPolicy.OnFailure, SuccessRule.ALL_REPLICAS, RetryableExitCodes.FROM_128), 3)).perReplica();
        run.pass();
        String uid = run.pods.get("j-worker-1").getMetadata().getUid();
        run.restartInPlace("j-worker-1", 1);
        Decision counted = run.pass();
        assertEquals(1, counted.state().backoffCount());
        assertEquals(1, counted.state().group("worker").restartCount());
        assertTrue(counted.podsToDelete().isEmpty() && counted.podsToCreate().isEmpty(), "the kubelet restarted it: nothing to do");
        assertTrue(counted.events().stream().anyMatch(e -> e.reason().equals("ReplicaRestarted") && e.message().equals(
                "pod j-worker-1 (container pytorch) exited with code 1 (Error) and was restarted in place (restart 1 of backoffLimit 3)")),
                counted.events().toString());
        assertEquals(1, run.pass().state().backoffCount(), "seen again: not counted again");

        // A new operator reads only what the status kept: the state, and the same pods.
        Run after = new Run(run.job);
        after.state = run.state;
        after.pods.putAll(run.pods);
        assertEquals(1, after.pass().state().backoffCount(), "not counted again after an operator restart");
        assertEquals(uid, after.pods.get("j-worker-1").getMetadata().getUid());

        after.restartInPlace("j-worker-0", 137);
        after.restartInPlace("j-worker-1", 1);
        Decision failed = after.pass();
        assertEquals(Outcome.BackoffLimitExceeded, failed.state().outcome(), "restarts reached backoffLimit 3");
        assertEquals(3, failed.state().backoffCount());
        assertTrue(((Situation.Ended) failed.situation()).message().contains("backoffCount 3 of runPolicy.backoffLimit 3"),
                ((Situation.Ended) failed.situation()).message());
    }

    @Test
    void severalInPlaceRestartsBetweenTwoPassesAreAllCounted() {
        Run run = new Run(kubeflowRules(Run.workersOnly(1, RestartPolicy.Always, SuccessRule.ALL_REPLICAS, RetryableExitCodes.FROM_128), 10)).perReplica();
        run.pass();
        run.restartInPlace("j-worker-0", 1);
        run.restartInPlace("j-worker-0", 1);
        run.restartInPlace("j-worker-0", 1);
        assertEquals(3, run.pass().state().backoffCount());
        assertEquals(3, run.state.replica("j-worker-0").restartsInPlace());
    }

    @Test
    void aBackoffLimitLoweredBelowTheRestartsSpentFailsTheJobAtTheNextFailureOnly() {
        Run run = new Run(1, 3).perReplica();
        run.pass();
        for (int restart = 0; restart < 2; restart++) {
            run.fail("j-worker-0", 1);
            run.pass(); // counted, deleted
            run.pass(); // created again
        }
        assertEquals(2, run.state.backoffCount());

        run.job = Run.job(1, 1); // the user lowers the limit below what is spent
        run.perReplica();
        Decision calm = run.pass();
        assertEquals(JobPhase.Running, calm.state().phase(), "no replica failed: the job goes on");

        run.fail("j-master-0", 137);
        Decision failed = run.pass();
        assertEquals(Outcome.BackoffLimitExceeded, failed.state().outcome());
        assertTrue(((Situation.Ended) failed.situation()).message().contains("pod j-master-0"),
                ((Situation.Ended) failed.situation()).message());
        assertTrue(failed.podsToCreate().isEmpty());
    }

    @Test
    void replicasOfOneTypeFailingTogetherAreEachCountedAgainstTheBudgetAndTheirGroup() {
        Run run = new Run(3, 5).perReplica();
        run.pass();
        run.fail("j-worker-0", 1);
        run.fail("j-worker-2", 1);
        Decision decision = run.pass();
        assertEquals(2, decision.state().backoffCount());
        assertEquals(2, decision.state().group("worker").restartCount());
        assertEquals(0, decision.state().group("master").restartCount());
        assertEquals(2, decision.restarts().size());
        run.pass();
        assertEquals(2, run.state.backoffCount(), "the recreated pods are not counted again");
        assertEquals(List.of("j-master-0", "j-worker-0", "j-worker-1", "j-worker-2"), run.pods.keySet().stream().sorted().toList());
    }

    @Test
    void twoFailuresWithOneRestartLeftFailTheJobNamingTheOneTheBudgetCannotPayFor() {
        Run run = new Run(2, 1).perReplica();
        run.pass();
        run.fail("j-worker-0", 1);
        run.fail("j-worker-1", 1);
        Decision decision = run.pass();
        assertEquals(Outcome.BackoffLimitExceeded, decision.state().outcome());
        assertTrue(((Situation.Ended) decision.situation()).message().startsWith("pod j-worker-1"));
        assertEquals(0, decision.state().backoffCount(), "a job that failed restarts nothing");
    }

    @Test
    void aCrashLoopingReplicaWaitsLongerAtEachFailureAndFromTheStartAgainAfterALongRun() {
        Run run = new Run(1, 10).perReplica();
        run.backoff = new RestartBackoff(Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofMinutes(10));
        run.pass(); // one worker, ten restarts, a back-off capped at 30 s
        run.fail("j-worker-0", 2);
        Decision first = run.pass();
        assertEquals(Optional.empty(), first.recheckAfter(), "a first failure restarts at once");
        assertEquals(1, first.podsToDelete().size());
        assertEquals(1, run.pass().podsToCreate().size());
        for (long expected : new long[] {10, 20, 30, 30}) {
            run.fail("j-worker-0", 2);
            Decision counted = run.pass();
            assertEquals(Optional.of(Duration.ofSeconds(expected)), counted.recheckAfter(), "back-off " + expected + " s");
            assertTrue(counted.podsToDelete().isEmpty(), "the failed pod stays until the restart is due: its logs can be read");
            run.now = run.now.plusSeconds(expected - 1);
            Decision early = run.pass();
            assertTrue(early.podsToDelete().isEmpty() && early.podsToCreate().isEmpty(), "not yet due");
            assertEquals(Optional.of(Duration.ofSeconds(1)), early.recheckAfter());
            run.now = run.now.plusSeconds(1);
            assertEquals(1, run.pass().podsToDelete().size(), "due: the old pod goes");
            assertEquals(1, run.pass().podsToCreate().size(), "and the new one comes");
        }
        assertEquals(5, run.state.backoffCount(), "each restart counted once");
        run.fail("j-worker-0", 2, Duration.ofMinutes(10));
        Decision afterLongRun = run.pass();
        assertEquals(Optional.empty(), afterLongRun.recheckAfter(), "a long run resets the back-off: at once again");
        assertEquals(1, afterLongRun.podsToDelete().size());
    }

    @Test
    void aReplicaDeletedBySomeoneElseAlsoWaitsItsBackOff() {
        Run run = new Run(1, 10).perReplica();
        run.backoff = new RestartBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5), Duration.ofMinutes(10));
        run.pass();
        run.fail("j-worker-0", 2);
        run.pass(); // a first failure: restarted at once
        run.pass(); // the status now names the new pod's UID: a missing pod is one that vanished
        run.pods.remove("j-worker-0");
        Decision counted = run.pass();
        assertEquals(2, counted.state().backoffCount());
        assertTrue(counted.podsToCreate().isEmpty());
        run.now = run.now.plusSeconds(10);
        assertEquals(List.of("j-worker-0"), run.pass().podsToCreate().stream().map(r -> r.slot().podName()).toList());
    }

    @Test
    void aPodDeletedBeforeAnyPassSawItIsCountedAsARestart() {
        Run run = new Run(1, 3).perReplica();
        run.pass();
        run.pass(); // the status names the first pods
        run.fail("j-worker-0", 1);
        run.pass(); // counted, deleted
        run.pass(); // the new pod is created...
        run.pods.remove("j-worker-0"); // ...and deleted by someone before any pass saw it
        Decision decision = run.pass();
        assertEquals(2, decision.state().backoffCount(), "the pod the status never named is counted too");
        assertTrue(decision.events().stream().anyMatch(e -> e.message().contains("pod j-worker-0 was deleted")));
        assertEquals(List.of("j-worker-0"), decision.podsToCreate().stream().map(r -> r.slot().podName()).toList());
    }

    /**
     * A pass cut before its status was written is decided again from the same state, maybe later: each
     * restart event names the same thing (the pod's UID; in place, with the kubelet's restart count), so
     * the event gets the same name, though its wording (the back-off's due time) has moved on.
     */
    @Test
    void aRestartDecidedAgainFromTheSameStateSaysItOfTheSameThing() {
        Run run = new Run(1, 10).perReplica();
        run.backoff = new RestartBackoff(Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofMinutes(10));
        run.pass();
        run.fail("j-worker-0", 2);
        run.pass(); // a first failure: restarted at once
        run.pass();
        String uid = run.pods.get("j-worker-0").getMetadata().getUid();
        run.fail("j-worker-0", 2);
        JobState before = run.state;
        JobEvent first = restartEvent(run.pass());
        run.state = before; // the status of that pass was never written
        run.now = run.now.plusSeconds(3);
        JobEvent again = restartEvent(run.pass());
        assertEquals(uid, first.subject());
        assertEquals(first.subject(), again.subject());
        assertNotEquals(first.message(), again.message(), "the due time moved on; the subject, not the wording, names the event");

        Run inPlace = new Run(kubeflowRules(Run.workersOnly(1, RestartPolicy.OnFailure, SuccessRule.ALL_REPLICAS,
                RetryableExitCodes.FROM_128), 3)).perReplica();
        inPlace.pass();
        String podUid = inPlace.pods.get("j-worker-0").getMetadata().getUid();
        inPlace.restartInPlace("j-worker-0", 1);
        assertEquals(podUid + "#1", restartEvent(inPlace.pass()).subject());
        inPlace.restartInPlace("j-worker-0", 1);
        assertEquals(podUid + "#2", restartEvent(inPlace.pass()).subject(), "the next restart of the same pod is another fact");
    }

    private static JobEvent restartEvent(Decision decision) {
        return decision.events().stream().filter(e -> e.reason().equals("ReplicaRestarted")).findFirst()
                .orElseThrow(() -> new AssertionError("no ReplicaRestarted in " + decision.events()));
    }
}
