package dev.torchjob.operator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cli.WaitTarget.Verdict;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.utils.Serialization;
import dev.torchjob.operator.testing.PodFates;

/** What the command line shows of a job of either kind: table, wait verdicts, history. */
class JobViewTest {
    static final Instant NOW = Instant.parse("2026-11-26T12:00:00Z");

    static JobView t9k(String labels, String status) {
        return JobView.of(Serialization.unmarshal("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: ddp, namespace: ml, creationTimestamp: "2026-11-26T11:50:00Z", labels: %s}
                spec:
                  runPolicy: {backoffLimit: 2}
                  replicaSpecs:
                  - {type: master, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                  - {type: worker, replicas: 2, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                status: %s
                """.formatted(labels, status), PyTorchTrainingJob.class));
    }

    static JobView kubeflow(String status) {
        return JobView.of(Serialization.unmarshal("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: mnist, namespace: ml, creationTimestamp: "2026-11-26T09:00:00Z"}
                spec:
                  pytorchReplicaSpecs:
                    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                    Worker: {replicas: 3, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                status: %s
                """.formatted(status), PyTorchJob.class));
    }

    static final String RESTARTED_AND_SUCCEEDED = "\n" + """
            phase: Succeeded
            backoffCount: 1
            conditions:
            - {type: Initialized, status: "True", reason: PodsCreated, lastTransitionTime: "2026-11-26T11:50:01Z"}
            - {type: Completed, status: "True", reason: MasterSucceeded, message: "pod ddp-master-0 succeeded", lastTransitionTime: "2026-11-26T11:58:00Z"}
            """.indent(2);

    @Test
    void aT9kJobShowsItsRestartsAgainstItsLimitAndItsOutcome() {
        JobView job = t9k("{}", RESTARTED_AND_SUCCEEDED);
        assertEquals("1/2", job.restartsOfLimit());
        assertTrue(job.ended());
        assertEquals(Optional.of("job ddp Succeeded: MasterSucceeded (pod ddp-master-0 succeeded)"), job.outcome());
        assertEquals("worker-1", job.replicaOf("ddp-worker-1"));
        assertEquals(Verdict.REACHED, WaitTarget.SUCCEEDED.judge(job));
        assertEquals(Verdict.ENDED_OTHERWISE, WaitTarget.FAILED.judge(job));
        assertEquals(Verdict.ENDED_OTHERWISE, WaitTarget.RUNNING.judge(job), "it ended before it was seen running");
        assertEquals(Verdict.REACHED, WaitTarget.ADMITTED.judge(job), "a job without a queue is admitted from the start");
    }

    @Test
    void aQueuedJobIsAdmittedWhenKueueSaysSo() {
        String queued = "{phase: Pending, conditions: [{type: Queued, status: \"True\", reason: Queued, message: waiting for quota}]}";
        JobView waiting = t9k("{kueue.x-k8s.io/queue-name: team-a}", queued);
        assertEquals(Optional.of("team-a"), waiting.queue());
        assertFalse(waiting.admitted());
        assertEquals(Verdict.NOT_YET, WaitTarget.ADMITTED.judge(waiting));
        assertEquals(Verdict.NOT_YET, WaitTarget.SUCCEEDED.judge(waiting));
        JobView admitted = t9k("{kueue.x-k8s.io/queue-name: team-a}",
                "{phase: Running, conditions: [{type: Queued, status: \"False\", reason: Admitted, message: Admitted by ClusterQueue cq.}]}");
        assertEquals(Verdict.REACHED, WaitTarget.ADMITTED.judge(admitted));
        assertEquals(Verdict.REACHED, WaitTarget.RUNNING.judge(admitted));
    }

    @Test
    void aJobHeldUntilItNamesAQueueIsNotAdmitted() {
        JobView held = t9k("{}", "{phase: Pending, conditions: [{type: Queued, status: \"True\", reason: QueueNameMissing, "
                + "message: Kueue manages every job in namespace team-a}]}");
        assertEquals(Optional.empty(), held.queue());
        assertFalse(held.admitted());
        assertEquals(Verdict.NOT_YET, WaitTarget.ADMITTED.judge(held), "wait --for Admitted waits for it to be queued and admitted");
    }

    @Test
    void aFailedKubeflowJobSaysWhyAndHasNoLimitUnlessItSetsOne() {
        JobView job = kubeflow("""
                {phase: Failed, backoffCount: 0, conditions: [
                  {type: Created, status: "True", reason: PyTorchJobCreated, lastTransitionTime: "2026-11-26T09:00:01Z"},
                  {type: Failed, status: "True", reason: PyTorchJobFailed, message: "pod mnist-worker-2 (container pytorch) exited with code 1; last output:\\nTraceback", lastTransitionTime: "2026-11-26T09:10:00Z"}]}
                """);
        assertEquals("0/-", job.restartsOfLimit());
        assertEquals(Optional.of("job mnist Failed: PyTorchJobFailed (pod mnist-worker-2 (container pytorch) exited with code 1)"), job.outcome());
        assertEquals(Verdict.ENDED_OTHERWISE, WaitTarget.SUCCEEDED.judge(job));
        assertEquals(Verdict.REACHED, WaitTarget.FAILED.judge(job));
        assertEquals("worker", job.typeLabelValue(job.group("Worker").orElseThrow()), "Kubeflow's pods carry the type lowercased");
        assertTrue(job.group("worker").isPresent(), "the user may write the type either way");
    }

    @Test
    void theTableHasBothKindsWithRestartsAndQueue() {
        String table = JobTable.render(List.of(t9k("{kueue.x-k8s.io/queue-name: team-a}", RESTARTED_AND_SUCCEEDED), kubeflow("{}")), NOW);
        assertEquals("""
                NAME    KIND                 PHASE       REPLICAS   RESTARTS   QUEUE    AGE
                ddp     PyTorchTrainingJob   Succeeded   3          1/2        team-a   10m
                mnist   PyTorchJob           Pending     4          0/-        <none>   3h
                """, table);
    }

    /** The operator judges the pod templates; the command line shows its verdict rather than reading them again. */
    @Test
    void aJobTheOperatorFoundInvalidHasNoReplicasAndOneNotYetJudgedShowsWhatItAsksFor() {
        String malformedTemplate = """
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: ddp, namespace: ml, creationTimestamp: "2026-11-26T11:50:00Z"}
                spec:
                  replicaSpecs:
                  - {type: master, template: {spec: {containers: "not a list"}}}
                  - {type: worker, replicas: 2, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """;
        JobView notYetJudged = JobView.of(Serialization.unmarshal(malformedTemplate, PyTorchTrainingJob.class));
        assertEquals(List.of("master 1", "worker 2"), notYetJudged.groups().stream().map(g -> g.type() + " " + g.replicas()).toList());

        JobView judged = JobView.of(Serialization.unmarshal(malformedTemplate + """
                status:
                  phase: Failed
                  conditions:
                  - {type: Failed, status: "True", reason: InvalidSpec, message: "spec.replicaSpecs[0].template is not a valid pod template"}
                """, PyTorchTrainingJob.class));
        assertEquals(List.of(), judged.groups());
        assertTrue(JobHistory.render(judged, List.of(), List.of()).lines().toList()
                .contains("Replicas:  <none: the spec is invalid, see Conditions>"));
        assertEquals(List.of(), kubeflow("{phase: Failed, failureReason: InvalidSpec}").groups());
        assertEquals(List.of("Master 1", "Worker 3"), kubeflow("{phase: Failed, failureReason: BackoffLimitExceeded}").groups().stream()
                .map(g -> g.type() + " " + g.replicas()).toList());
    }

    @Test
    void describeTellsTheHistoryInTimeOrderWithEachRestartAndThePods() {
        JobView job = t9k("{}", RESTARTED_AND_SUCCEEDED);
        Event created = event("PodsCreated", "created pods ddp-master-0, ddp-worker-0, ddp-worker-1", "2026-11-26T11:50:01Z");
        Event restarted = event("ReplicaRestarted", "Restarting pod ddp-worker-0 (container pytorch) exited with code 137 (OOMKilled)"
                + " (restart 1 of backoffLimit 2); last output:\nKilled", "2026-11-26T11:53:00Z");
        Pod master = pod("ddp-master-0");
        PodFates.exited(master, 0, null);
        Pod worker = pod("ddp-worker-0");
        PodFates.running(worker);
        String described = JobHistory.render(job, List.of(worker, master), List.of(restarted, created));
        List<String> lines = described.lines().toList();
        assertTrue(lines.contains("Phase:     Succeeded"), described);
        assertTrue(lines.contains("Restarts:  1/2 (counted / runPolicy.backoffLimit)"), described);
        assertTrue(lines.contains("Outcome:   job ddp Succeeded: MasterSucceeded (pod ddp-master-0 succeeded)"), described);
        List<String> history = lines.subList(lines.indexOf("History:") + 1, lines.indexOf("Pods:") - 1);
        assertEquals(List.of(
                "  2026-11-26 11:50:00Z  Created",
                "  2026-11-26 11:50:01Z  Initialized  PodsCreated",
                "  2026-11-26 11:50:01Z  PodsCreated  created pods ddp-master-0, ddp-worker-0, ddp-worker-1",
                "  2026-11-26 11:53:00Z  ReplicaRestarted  Restarting pod ddp-worker-0 (container pytorch) exited with code 137 (OOMKilled) (restart 1 of backoffLimit 2)",
                "  2026-11-26 11:58:00Z  Completed  MasterSucceeded: pod ddp-master-0 succeeded"), history);
        List<String> pods = lines.subList(lines.indexOf("Pods:") + 1, lines.size());
        assertTrue(pods.get(0).matches("\\s+REPLICA\\s+POD\\s+NODE\\s+PHASE\\s+RESTARTS\\s+LAST TERMINATION"), pods.get(0));
        assertTrue(pods.get(1).matches("\\s+master-0\\s+ddp-master-0\\s+node-a\\s+Succeeded\\s+0\\s+pytorch exited 0 \\(Completed\\)"), pods.get(1));
        assertTrue(pods.get(2).matches("\\s+worker-0\\s+ddp-worker-0\\s+node-a\\s+Running\\s+0"), pods.get(2));
        assertEquals("  1 pod is still running after the job ended: its clean-up policy keeps them (runPolicy.cleanUpPolicy)", pods.get(3));
    }

    @Test
    void describeListsAGroupRestartWithItsCauseAndConsequences() {
        JobView job = t9k("{}", RESTARTED_AND_SUCCEEDED);
        Event restarted = event("JobRestarting", "pod ddp-worker-0 (container pytorch) exited with code 137 (OOMKilled); then ddp-master-0 "
                + "(exit code 1) failed too, a consequence (not counted); the job restarts as a group (restart 1 of backoffLimit 2); last output:\nKilled",
                "2026-11-26T11:53:00Z");
        String described = JobHistory.render(job, List.of(), List.of(restarted));
        assertTrue(described.contains("  2026-11-26 11:53:00Z  JobRestarting  pod ddp-worker-0 (container pytorch) exited with code 137 (OOMKilled); "
                + "then ddp-master-0 (exit code 1) failed too, a consequence (not counted); the job restarts as a group (restart 1 of backoffLimit 2)\n"),
                described);
        assertTrue(!described.contains("still running"), described);
    }

    static Event event(String reason, String message, String time) {
        return new EventBuilder().withNewMetadata().withName(reason + time).endMetadata().withReason(reason).withMessage(message)
                .withLastTimestamp(time).withCount(1).build();
    }

    static Pod pod(String name) {
        return new PodBuilder().withNewMetadata().withName(name).endMetadata().withNewSpec().withNodeName("node-a")
                .addNewContainer().withName("pytorch").withImage("torch").endContainer().endSpec().build();
    }
}
