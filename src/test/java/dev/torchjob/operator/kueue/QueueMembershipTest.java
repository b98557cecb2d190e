package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * Which queue a job is in when its queue label is edited: followed while it waits, kept for its next
 * wait while it runs or holds quota, as Kueue's webhook and its Workload's rules allow.
 */
class QueueMembershipTest {
    static final Optional<String> A = Optional.of("queue-a");
    static final Optional<String> B = Optional.of("queue-b");
    static final QueueMembership.Workload WAITING_IN_A = new QueueMembership.Workload("w", "queue-a", false, false);
    static final QueueMembership.Workload ADMITTED_IN_A = new QueueMembership.Workload("w", "queue-a", true, false);

    @Test
    void aLabelledJobWithoutPodsOfItsOwnIsInTheQueueItsLabelNames() {
        QueueMembership fresh = QueueMembership.of(A, Optional.empty(), false);
        assertEquals(new QueueMembership(A, false, Optional.empty()), fresh);
        assertEquals(fresh, QueueMembership.of(A, Optional.of(WAITING_IN_A), false), "its Workload agrees: nothing to say");
        assertEquals(fresh, QueueMembership.of(A, Optional.of(ADMITTED_IN_A), true));
        assertEquals(QueueMembership.NONE, QueueMembership.of(Optional.empty(), Optional.empty(), false));
        assertEquals(QueueMembership.NONE, QueueMembership.of(Optional.empty(), Optional.empty(), true));
    }

    @Test
    void aLabelAddedToAJobRunningWithoutAQueueIsKeptForItsNextStartAndSaidOnce() {
        QueueMembership running = QueueMembership.of(A, Optional.empty(), true);
        assertEquals(Optional.empty(), running.queue(), "its pods are not stopped");
        JobEvent said = running.event().orElseThrow();
        assertEquals(List.of(JobEvent.Type.Warning, QueueMembership.DEFERRED), List.of(said.type(), said.reason()));
        assertEquals("The label kueue.x-k8s.io/queue-name was set to queue-a while the job runs without a queue: Kueue does not let a "
                + "running job join a queue, so it runs on; it waits in LocalQueue queue-a the next time none of its pods is left (a pause, "
                + "or a restart of the whole job)", said.message());
    }

    @Test
    void whileTheJobWaitsItsWorkloadMovesWithTheLabel() {
        QueueMembership moved = QueueMembership.of(B, Optional.of(WAITING_IN_A), false);
        assertEquals(B, moved.queue());
        assertFalse(moved.leaving());
        assertEquals(JobEvent.normal(QueueMembership.MOVED, "The label kueue.x-k8s.io/queue-name was changed while the job waited: it "
                + "moves from LocalQueue queue-a to queue-b"), moved.event().orElseThrow());
    }

    @Test
    void whileTheJobWaitsARemovedLabelTakesItOutOfTheQueue() {
        QueueMembership leaving = QueueMembership.of(Optional.empty(), Optional.of(WAITING_IN_A), false);
        assertEquals(A, leaving.queue(), "gated by its old queue until its Workload is gone");
        assertTrue(leaving.leaving());
        assertEquals(JobEvent.normal(QueueMembership.LEFT, "The label kueue.x-k8s.io/queue-name was removed while the job waited in "
                + "LocalQueue queue-a: its Workload w is deleted and the job runs without a queue"), leaving.event().orElseThrow());
    }

    @Test
    void whileTheJobHoldsQuotaItKeepsItsQueueWhateverTheLabelSays() {
        QueueMembership changed = QueueMembership.of(B, Optional.of(ADMITTED_IN_A), true);
        assertEquals(A, changed.queue());
        assertFalse(changed.leaving());
        assertEquals(JobEvent.warning(QueueMembership.DEFERRED, "The label kueue.x-k8s.io/queue-name was changed to queue-b while the "
                + "job holds quota in LocalQueue queue-a: Kueue does not let an admitted job change its queue, so it keeps that "
                + "admission and moves to LocalQueue queue-b when the admission ends (the job is paused or evicted)"),
                changed.event().orElseThrow());

        QueueMembership removed = QueueMembership.of(Optional.empty(), Optional.of(ADMITTED_IN_A), true);
        assertEquals(A, removed.queue(), "its quota stays counted, and is given back when it ends");
        assertFalse(removed.leaving());
        assertTrue(removed.event().orElseThrow().message().contains("was removed while the job holds quota in LocalQueue queue-a"),
                removed.event().toString());
        assertTrue(removed.event().orElseThrow().message().endsWith("leaves the queue when the admission ends (the job is paused or evicted)"),
                removed.event().toString());
    }

    @Test
    void aLabelEditAfterTheJobEndedChangesNothingAndSaysNothing() {
        for (boolean reserved : List.of(true, false)) {
            QueueMembership.Workload finished = new QueueMembership.Workload("w", "queue-a", reserved, true);
            for (Optional<String> label : List.of(A, B, Optional.<String>empty())) {
                assertEquals(new QueueMembership(A, false, Optional.empty()), QueueMembership.of(label, Optional.of(finished), false),
                        label + " reserved " + reserved);
            }
        }
    }

    static Pod pod(boolean admitted, boolean going) {
        PodBuilder pod = new PodBuilder().withNewMetadata().withName("j-worker-0")
                .withLabels(admitted ? Map.of(KueueAdmission.POD_SET_LABEL, "worker") : Map.of()).endMetadata();
        if (going) {
            pod.editMetadata().withDeletionTimestamp("2026-11-30T12:00:00Z").endMetadata();
        }
        return pod.build();
    }

    @Test
    void aJobRunsWithoutAQueueWhenItHasPodsAndNoneWasAdmitted() {
        assertTrue(QueueMembership.runsWithoutQueue(List.of(pod(false, false))));
        assertTrue(QueueMembership.runsWithoutQueue(List.of(pod(false, false), pod(false, true))));
        assertFalse(QueueMembership.runsWithoutQueue(List.of()), "between two sets of pods");
        assertFalse(QueueMembership.runsWithoutQueue(List.of(pod(false, true))), "its pods all going");
        assertFalse(QueueMembership.runsWithoutQueue(List.of(pod(true, false))), "admitted pods: a Workload it lost is made anew");
    }
}
