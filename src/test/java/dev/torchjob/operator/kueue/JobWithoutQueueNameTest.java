package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

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
    static final Supplier<OwnerAncestry> NO_OWNER = () -> OwnerAncestry.NONE;
    static final Supplier<OwnerAncestry> OWNERS_NOT_READ = () -> {
        throw new AssertionError("the owners are not read: they change nothing here");
    };
    static final OwnerAncestry.Owner WRAPPER = new OwnerAncestry.Owner(
            new OwnerAncestry.Reference("workload.codeflare.dev/v1beta2", "AppWrapper", "aw", "u1"), "u1",
            Map.of("kueue.x-k8s.io/queue-name", "team-a"), Map.of(), Optional.empty());

    @Test
    void aNewJobGoesToItsNamespacesDefaultLocalQueueWhereThereIsOne() {
        assertEquals(Placement.DEFAULT_QUEUE, JobWithoutQueueName.of(Optional.empty(), NO, YES, YES, false, NO_OWNER));
        assertEquals(Placement.DEFAULT_QUEUE, JobWithoutQueueName.of(Optional.empty(), NO, YES, YES, true, NO_OWNER),
                "a default queue takes the job before Kueue's manageJobsWithoutQueueName would hold it, as Kueue's webhook runs first");
    }

    @Test
    void withoutADefaultLocalQueueANewJobRunsAsItIsUnlessKueueManagesEveryJob() {
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, YES, NO, false, NO_OWNER));
        assertEquals(Placement.HOLD, JobWithoutQueueName.of(Optional.empty(), NO, YES, NO, true, NO_OWNER));
    }

    @Test
    void aJobThatNamesItsQueueKeepsIt() {
        for (boolean everyJobQueued : new boolean[] {false, true}) {
            assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.of("team-a-queue"), NOT_ASKED, NOT_ASKED, NOT_ASKED,
                    everyJobQueued, OWNERS_NOT_READ), "the job's pods, the namespace's queues and its owners are not looked at for a "
                    + "labelled job");
        }
    }

    @Test
    void aStartedJobIsNeverStoppedByAQueueOrASettingThatCameLater() {
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), YES, NOT_ASKED, NOT_ASKED, false, OWNERS_NOT_READ));
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), YES, NOT_ASKED, NOT_ASKED, true, OWNERS_NOT_READ));
    }

    @Test
    void aNamespaceKueueDoesNotManageKeepsItsJobsAsTheyAre() {
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, NO, YES, false, OWNERS_NOT_READ), "no default queue taken");
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, NO, NO, true, OWNERS_NOT_READ), "not held");
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, NOT_ASKED, NO, false, OWNERS_NOT_READ),
                "the namespace is not looked at where nothing would queue the job");
    }

    @Test
    void aJobKueueQueuesThroughItsOwnerIsNeitherPutInTheDefaultQueueNorHeld() {
        Supplier<OwnerAncestry> wrapped = () -> new OwnerAncestry(true, Optional.of(WRAPPER));
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, YES, YES, false, wrapped),
                "its owner's Workload covers it: a second one would take the quota twice");
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, YES, NO, true, wrapped));
        // An owner of a kind Kueue manages, but not queued (no label, manageJobsWithoutQueueName off): Kueue still leaves the
        // default LocalQueue off its child, which runs as it is.
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, YES, YES, false,
                () -> new OwnerAncestry(true, Optional.empty())));
        // An owner Kueue walks through without managing (a kind not enabled): the job is the one queued.
        assertEquals(Placement.DEFAULT_QUEUE, JobWithoutQueueName.of(Optional.empty(), NO, YES, YES, false,
                () -> new OwnerAncestry(false, Optional.empty())));
        assertEquals(Placement.HOLD, JobWithoutQueueName.of(Optional.empty(), NO, YES, NO, true,
                () -> new OwnerAncestry(false, Optional.empty())));
        assertEquals(Placement.AS_IS, JobWithoutQueueName.of(Optional.empty(), NO, YES, NO, false, OWNERS_NOT_READ),
                "nothing would queue it: its owners are not read");
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
