package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.kueue.JobWithoutQueueName.Placement;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * What becomes of a job without a queue label: put in its namespace's default LocalQueue as Kueue's
 * webhooks put the jobs they know, held where Kueue manages every job, or run as it is.
 */
class JobWithoutQueueNameTest {
    static final BooleanSupplier YES = () -> true;
    static final BooleanSupplier NO = () -> false;
    static final BooleanSupplier NOT_ASKED = () -> {
        throw new AssertionError("not asked: it changes nothing here");
    };

    @Test
    void aNewJobGoesToItsNamespacesDefaultLocalQueueWhereThereIsOne() {
        assertEquals(Placement.DEFAULT_QUEUE, JobWithoutQueueName.of(Optional.empty(), NO, YES, YES, false));
        assertEquals(Placement.DEFAULT_QUEUE, JobWithoutQueueName.of(Optional.empty(), NO, YES, YES, true),
                "a default queue takes the job before Kueue's manageJobsWithoutQueueName would hold it, as Kueue's webhook runs first");
    }

    @Test
    void withoutADefaultLocalQueueANewJobRunsAsItIsUnlessKueueManagesEveryJob() {
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, YES, NO, false));
        assertEquals(Placement.HOLD, JobWithoutQueueName.of(Optional.empty(), NO, YES, NO, true));
    }

    @Test
    void aJobThatNamesItsQueueKeepsIt() {
        for (boolean everyJobQueued : new boolean[] {false, true}) {
            assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.of("team-a-queue"), NOT_ASKED, NOT_ASKED, NOT_ASKED,
                    everyJobQueued), "the job's pods and the namespace's queues are not looked at for a labelled job");
        }
    }

    @Test
    void aStartedJobIsNeverStoppedByAQueueOrASettingThatCameLater() {
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), YES, NOT_ASKED, NOT_ASKED, false));
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), YES, NOT_ASKED, NOT_ASKED, true));
    }

    @Test
    void aNamespaceKueueDoesNotManageKeepsItsJobsAsTheyAre() {
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, NO, YES, false), "no default queue taken");
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, NO, NO, true), "not held");
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, NOT_ASKED, NO, false),
                "the namespace is not looked at where nothing would queue the job");
    }

    @Test
    void theLabelIsWrittenOnlyOnTheVersionOfTheJobThatWasLookedAt() {
        Map<?, ?> patch = new KubernetesSerialization().unmarshal(JobWithoutQueueName.labelPatch("4711"), Map.class);
        assertEquals(Map.of("metadata", Map.of("resourceVersion", "4711", "labels", Map.of("kueue.x-k8s.io/queue-name", "default"))), patch);
    }

    @Test
    void aHeldJobSaysWhyAndHowToQueueIt() {
        String message = JobWithoutQueueName.heldMessage("team-a");
        assertTrue(message.contains("manageJobsWithoutQueueName") && message.contains("namespace team-a")
                && message.contains("kueue.x-k8s.io/queue-name=<LocalQueue>") && message.contains("kubectl get localqueues -n team-a"), message);
    }
}
