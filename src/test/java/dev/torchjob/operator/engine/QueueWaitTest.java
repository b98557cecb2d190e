package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.Plan.JobEvent;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * What a job its queue has not admitted says while it waits, for each way of waiting, said once; when it is looked
 * at again; and when Kueue's retention of a job it deactivated is over. (The same through whole passes, with the
 * pods deleted and the job resumed: {@link QueueGateTest}.)
 */
class QueueWaitTest {
    static final Instant NOW = Instant.parse("2026-12-03T10:00:00Z");
    static final Map<String, Pod> NO_PODS = Map.of();

    record Waited(QueueWait.Said said, PassOutput out) {
        Situation.Queued situation() {
            return said.situation();
        }
    }

    static Waited waiting(QueueAdmission queue, boolean requeued, boolean saidBefore, Map<String, Pod> pods) {
        PassOutput out = new PassOutput(NOW);
        return new Waited(QueueWait.of(queue, requeued, saidBefore, pods, NOW, out), out);
    }

    @Test
    void aJobWaitingForQuotaSaysWhereOnceAndIsNotLookedAtAgainByTheClock() {
        Waited first = waiting(new QueueAdmission.Waiting("team-a", "no quota left in ClusterQueue gpus"), false, false, NO_PODS);
        assertEquals(new Situation.Queued("team-a", Situation.Queued.WAITING, "Waiting in LocalQueue team-a: no quota left in ClusterQueue gpus", 0),
                first.situation());
        assertEquals(List.of(JobEvent.normal("Queued", first.situation().message())), first.out().events);
        assertEquals(Optional.empty(), first.out().recheckAfter(), "Kueue's admission is an event of its own");
        assertFalse(first.said().deleteJob());

        Waited again = waiting(new QueueAdmission.Waiting("team-a", "no quota left in ClusterQueue gpus"), false, true, NO_PODS);
        assertEquals(first.situation(), again.situation());
        assertEquals(List.of(), again.out().events, "said once");
    }

    @Test
    void aJobEvictedBeforeSaysItWaitsAgain() {
        Waited requeued = waiting(new QueueAdmission.Waiting("team-a", "no quota left"), true, false, NO_PODS);
        assertEquals(Situation.Queued.REQUEUED, requeued.situation().reason());
        assertEquals("Evicted earlier; waiting in LocalQueue team-a: no quota left", requeued.situation().message());
        assertTrue(Situation.Queued.afterEviction(requeued.situation().reason()), "readmission resumes it");
        assertEquals(List.of(JobEvent.normal("Queued", requeued.situation().message())), requeued.out().events);
    }

    @Test
    void anEvictionSaysHowManyPodsGoAndThatNoneIsCounted() {
        Waited evicted = waiting(new QueueAdmission.Evicted("team-a", "Preempted", "preempted by a higher priority job"), false, false,
                pods(pod("j-master-0", null), pod("j-worker-0", null)));
        assertEquals(new Situation.Queued("team-a", Situation.Queued.EVICTED, "Evicted by Kueue (Preempted): preempted by a higher "
                + "priority job; deleting 2 pod(s), none counted as a failure", 2), evicted.situation());
        assertEquals(List.of(JobEvent.warning(Situation.Queued.EVICTED, evicted.situation().message())), evicted.out().events);
        assertTrue(Situation.Queued.afterEviction(evicted.situation().reason()));

        Waited gone = waiting(new QueueAdmission.Evicted("team-a", "Preempted", "preempted by a higher priority job"), false, true, NO_PODS);
        assertEquals("Evicted by Kueue (Preempted): preempted by a higher priority job", gone.situation().message());
        assertEquals(0, gone.situation().podsLeft());
    }

    @Test
    void anEvictionHeldByAPodLongPastItsGracePeriodSaysThatKueueKeepsTheQuota() {
        Instant graceEnded = NOW.minus(LingeringPod.OVERDUE_AFTER).minusSeconds(1);
        Instant soonOverdue = NOW.minusSeconds(30);
        Waited evicted = waiting(new QueueAdmission.Evicted("team-a", "Preempted", "preempted"), false, true,
                pods(pod("j-master-0", soonOverdue), pod("j-worker-0", graceEnded)));
        String message = evicted.situation().message();
        assertTrue(message.startsWith("Evicted by Kueue (Preempted): preempted; deleting 2 pod(s), none counted as a failure; "
                + "pod j-worker-0 is still terminating"), message);
        assertTrue(message.endsWith("; Kueue keeps the quota until they are gone"), message);
        assertFalse(message.contains("j-master-0"), "not overdue yet: " + message);
        assertEquals(Optional.of(Duration.between(NOW, soonOverdue.plus(LingeringPod.OVERDUE_AFTER))), evicted.out().recheckAfter(),
                "looked at again when the other one is overdue");
    }

    @Test
    void withoutKueueTheJobSaysSoAndIsLookedAtAgainPeriodically() {
        Waited unavailable = waiting(new QueueAdmission.Unavailable("team-a", "Kueue's Workload API is not installed"), false, false,
                NO_PODS);
        assertEquals(new Situation.Queued("team-a", Situation.Queued.UNAVAILABLE, "Kueue's Workload API is not installed", 0),
                unavailable.situation());
        assertEquals(List.of(JobEvent.warning(Situation.Queued.UNAVAILABLE, "Kueue's Workload API is not installed")),
                unavailable.out().events);
        assertEquals(Optional.of(Engine.ADMISSION_RECHECK), unavailable.out().recheckAfter(), "nothing says when Kueue comes");
    }

    @Test
    void aJobThatMustNameAQueueOrAsksWhatKueueRefusesSaysWhatToFixAndWaitsForTheFix() {
        Waited unnamed = waiting(new QueueAdmission.NoQueueName("name a LocalQueue"), false, false, NO_PODS);
        assertEquals(new Situation.Queued("", Situation.Queued.NO_QUEUE_NAME, "name a LocalQueue", 0), unnamed.situation());
        assertEquals(List.of(JobEvent.warning(Situation.Queued.NO_QUEUE_NAME, "name a LocalQueue")), unnamed.out().events);
        assertEquals(Optional.empty(), unnamed.out().recheckAfter(), "the label brings it back");

        Waited invalid = waiting(new QueueAdmission.Invalid("team-a", "the label kueue.x-k8s.io/max-exec-time-seconds is \"1h\""), false,
                false, NO_PODS);
        assertEquals(new Situation.Queued("team-a", Situation.Queued.INVALID,
                "Not queued in LocalQueue team-a: the label kueue.x-k8s.io/max-exec-time-seconds is \"1h\"", 0), invalid.situation());
        assertEquals(Situation.Queued.INVALID, invalid.out().events.get(0).reason());
        assertEquals(Optional.empty(), invalid.out().recheckAfter(), "fixing the label brings it back");
    }

    @Test
    void aJobKueueDeactivatedGoesWhenItsRetentionIsOverAndItsPodsAreGoneNotBefore() {
        Instant at = NOW.plusSeconds(90);
        QueueAdmission.Waiting deactivated = new QueueAdmission.Waiting("team-a", "deactivated", Optional.of(at));
        Waited before = waiting(deactivated, true, true, NO_PODS);
        assertFalse(before.said().deleteJob());
        assertEquals(Optional.of(Duration.ofSeconds(90)), before.out().recheckAfter(), "looked at again when it is over");

        Waited podsLeft = waiting(new QueueAdmission.Waiting("team-a", "deactivated", Optional.of(NOW)), true, true,
                pods(pod("j-master-0", NOW)));
        assertFalse(podsLeft.said().deleteJob(), "its pods go first");
        assertEquals(List.of(), podsLeft.out().events);

        Waited over = waiting(new QueueAdmission.Waiting("team-a", "deactivated", Optional.of(NOW)), true, false, NO_PODS);
        assertTrue(over.said().deleteJob());
        assertEquals(List.of("Deleted", "Queued"), over.out().events.stream().map(JobEvent::reason).toList());
        assertEquals("Deleted: deactivated by Kueue and not reactivated by " + NOW + ", as its objectRetentionPolicies say; deactivated",
                over.out().events.get(0).message());
    }

    @Test
    void anAdmissionIsNoWait() {
        assertThrows(IllegalArgumentException.class, () -> waiting(QueueAdmission.NOT_QUEUED, false, false, NO_PODS));
        assertThrows(IllegalArgumentException.class, () -> waiting(new QueueAdmission.Refused("contradicts the template"), false, false,
                NO_PODS));
    }

    static Pod pod(String name, Instant deleted) {
        return new PodBuilder().withNewMetadata().withName(name).withUid(name + "-uid")
                .withDeletionTimestamp(deleted == null ? null : deleted.toString()).withDeletionGracePeriodSeconds(deleted == null ? null : 0L)
                .endMetadata().withNewSpec().withNodeName("node-7").endSpec().build();
    }

    static Map<String, Pod> pods(Pod... pods) {
        Map<String, Pod> byName = new LinkedHashMap<>();
        for (Pod pod : pods) {
            byName.put(pod.getMetadata().getName(), pod);
        }
        return byName;
    }
}
