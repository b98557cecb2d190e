package dev.torchjob.operator.kueue;

import static dev.torchjob.operator.kueue.KueueProtocolTest.FLAVORS;
import static dev.torchjob.operator.kueue.KueueProtocolTest.workload;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.QueueAdmission;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;

/**
 * Where a job in a queue stands with it, from its Workload and its labels: each way of waiting, an invalid job (said
 * while it waits, run on while it holds quota), an admission, and Kueue's retention of a job it deactivated, kept
 * through a move to another queue.
 */
class QueueStandingTest {
    static final String QUEUE = "team-a-user-queue";
    static final Optional<Duration> NO_RETENTION = Optional.empty();
    static final String TOO_BIG = "the label kueue.x-k8s.io/max-exec-time-seconds must be a positive number of seconds";

    static final String WAITING = """
            conditions:
            - {type: QuotaReserved, status: "False", reason: Pending, message: "insufficient quota"}
            """;
    static final String ADMITTED = """
            conditions:
            - {type: QuotaReserved, status: "True", reason: QuotaReserved}
            - {type: Admitted, status: "True", reason: Admitted}
            admission:
              clusterQueue: gpu-cluster-queue
              podSetAssignments:
              - {name: master, count: 1, flavors: {nvidia.com/gpu: a100}}
              - {name: worker, count: 8, flavors: {nvidia.com/gpu: a100}}
            """;
    static final String DEACTIVATED_BY_KUEUE = """
            conditions:
            - {type: Evicted, status: "True", reason: DeactivatedDueToRequeuingLimitExceeded, message: "exceeded", lastTransitionTime: "2026-12-01T10:00:00Z"}
            """;

    static QueueAdmission standing(String queue, Optional<String> invalid, GenericKubernetesResource workload, Optional<Duration> retention) {
        return QueueStanding.of(queue, "w", false, invalid, Optional.of(workload), Optional.of(KueueAdmission.of(workload, FLAVORS)),
                List.of(), retention);
    }

    @Test
    void aJobWhoseLabelWasRemovedWaitsForItsWorkloadToGo() {
        assertEquals(new QueueAdmission.Waiting(QUEUE, "the label kueue.x-k8s.io/queue-name was removed: the job leaves this queue "
                + "and runs without one once its Workload w is gone"),
                QueueStanding.of(QUEUE, "w", true, Optional.empty(), Optional.of(workload(ADMITTED)), Optional.empty(), List.of(), NO_RETENTION));
    }

    @Test
    void aJobWithoutItsWorkloadYetWaitsForItOrSaysWhatIsWrong() {
        assertEquals(new QueueAdmission.Waiting(QUEUE, "its Workload w is being created"),
                QueueStanding.of(QUEUE, "w", false, Optional.empty(), Optional.empty(), Optional.empty(), List.of(), NO_RETENTION));
        assertEquals(new QueueAdmission.Invalid(QUEUE, TOO_BIG),
                QueueStanding.of(QUEUE, "w", false, Optional.of(TOO_BIG), Optional.empty(), Optional.empty(), List.of(), NO_RETENTION),
                "no Workload is made for it");
    }

    @Test
    void aJobWaitingForQuotaSaysWhyAndAnInvalidOneSaysWhatIsWrong() {
        assertEquals(new QueueAdmission.Waiting(QUEUE, "insufficient quota"), standing(QUEUE, Optional.empty(), workload(WAITING), NO_RETENTION));
        assertEquals(new QueueAdmission.Invalid(QUEUE, TOO_BIG), standing(QUEUE, Optional.of(TOO_BIG), workload(WAITING), NO_RETENTION));
    }

    @Test
    void anAdmittedJobRunsOnThoughItsLabelsWentWrongWhileItHeldQuota() {
        QueueAdmission admitted = standing(QUEUE, Optional.of(TOO_BIG), workload(ADMITTED), NO_RETENTION);
        assertEquals("gpu-cluster-queue", assertInstanceOf(QueueAdmission.Admitted.class, admitted).clusterQueue(),
                "Kueue's webhook refuses such a change then; the Workload is not changed while quota is held");
    }

    @Test
    void aJobKueueDeactivatedIsDeletedOnceItsRetentionIsOverEvenIfItMovesToAnotherQueue() {
        GenericKubernetesResource deactivated = workload(DEACTIVATED_BY_KUEUE);
        deactivated.<Map<String, Object>>get("spec").put("active", false);
        Optional<Instant> deleteAt = Optional.of(Instant.parse("2026-12-01T10:10:00Z"));

        QueueAdmission kept = standing(QUEUE, Optional.empty(), deactivated, NO_RETENTION);
        assertEquals(Optional.empty(), assertInstanceOf(QueueAdmission.Waiting.class, kept).deleteJobAt(), "no retention set: kept");

        QueueAdmission retained = standing(QUEUE, Optional.empty(), deactivated, Optional.of(Duration.ofMinutes(10)));
        assertEquals(deleteAt, assertInstanceOf(QueueAdmission.Waiting.class, retained).deleteJobAt());

        QueueAdmission moved = standing("team-b-user-queue", Optional.empty(), deactivated, Optional.of(Duration.ofMinutes(10)));
        assertEquals(new QueueAdmission.Waiting("team-b-user-queue", "moving here from LocalQueue " + QUEUE, deleteAt), moved,
                "a move does not reactivate it");
    }

    @Test
    void aWaitingJobMovedToAnotherQueueSaysSo() {
        assertEquals(new QueueAdmission.Waiting("team-b-user-queue", "moving here from LocalQueue " + QUEUE),
                standing("team-b-user-queue", Optional.empty(), workload(WAITING), NO_RETENTION));
    }
}
