package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.kueue.OwnerAncestry.Owner;
import dev.torchjob.operator.kueue.OwnerAncestry.Reference;

/**
 * Whether Kueue queues a job through an owner, as Kueue walks a job's controller owners (its own
 * examples: a JobSet inside an AppWrapper, with and without queue labels, with and without
 * manageJobsWithoutQueueName).
 */
class OwnerAncestryTest {
    static final KueueIntegrations DEFAULT = KueueIntegrations.parse(List.of(KueueIntegrations.KUEUE_DEFAULT.split(",")));
    static final Reference WRAPPER = new Reference("workload.codeflare.dev/v1beta2", "AppWrapper", "aw", "u-aw");
    static final Reference JOBSET = new Reference("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "u-js");
    /** An AppWrapper's grace periods as docs/kueue.md gives them. */
    static final Map<String, String> ALL_GRACE = Map.of(AppWrapperResets.ADMISSION_GRACE, "24h", AppWrapperResets.WARMUP_GRACE, "24h",
            AppWrapperResets.FAILURE_GRACE, "10m");

    /** The owners in the cluster, by name; each read counted. */
    static final class Owners implements Function<Reference, Optional<Owner>> {
        final Map<String, Owner> byName = new HashMap<>();
        int reads;

        Owners with(Reference reference, String queue, Reference controller) {
            byName.put(reference.name(), new Owner(reference, reference.uid(), queue == null ? Map.of()
                    : Map.of(KueueWorkload.QUEUE_LABEL, queue), Map.of(), Optional.ofNullable(controller)));
            return this;
        }

        @Override
        public Optional<Owner> apply(Reference reference) {
            reads++;
            return Optional.ofNullable(byName.get(reference.name()));
        }
    }

    static Optional<String> ancestor(Reference controller, Owners owners, KueueIntegrations integrations, boolean everyJobQueued) {
        return OwnerAncestry.of(Optional.ofNullable(controller), owners, integrations, everyJobQueued).ancestor()
                .map(o -> o.reference().kind());
    }

    @Test
    void aJobWrappedInAnAppWrapperWithAQueueIsQueuedThroughIt() {
        Owners owners = new Owners().with(WRAPPER, "team-a", null);
        OwnerAncestry ancestry = OwnerAncestry.of(Optional.of(WRAPPER), owners, DEFAULT, false);
        assertTrue(ancestry.ownerKindManaged());
        assertEquals(Optional.of("AppWrapper"), ancestry.ancestor().map(o -> o.reference().kind()));
        assertTrue(ancestry.queuedByOwnerMessage(Optional.empty()).contains("through its owner AppWrapper aw (workload.codeflare.dev/v1beta2)"),
                ancestry.queuedByOwnerMessage(Optional.empty()));
    }

    @Test
    void theTopmostOwnerKueueManagesIsTheOneAsInKueuesExamples() {
        // Without manageJobsWithoutQueueName, only owners with a queue label count.
        assertEquals(Optional.empty(), ancestor(JOBSET, new Owners().with(JOBSET, null, WRAPPER).with(WRAPPER, null, null), DEFAULT, false));
        assertEquals(Optional.of("JobSet"), ancestor(JOBSET, new Owners().with(JOBSET, "q", WRAPPER).with(WRAPPER, null, null), DEFAULT, false));
        assertEquals(Optional.of("AppWrapper"), ancestor(JOBSET, new Owners().with(JOBSET, null, WRAPPER).with(WRAPPER, "q", null), DEFAULT,
                false));
        assertEquals(Optional.of("AppWrapper"), ancestor(JOBSET, new Owners().with(JOBSET, "q", WRAPPER).with(WRAPPER, "q", null), DEFAULT,
                false));
        // With it, every owner of a kind Kueue manages counts: the topmost wins.
        assertEquals(Optional.of("AppWrapper"), ancestor(JOBSET, new Owners().with(JOBSET, null, WRAPPER).with(WRAPPER, null, null), DEFAULT,
                true));
        // A kind Kueue knows but which is not enabled is walked through, never chosen.
        KueueIntegrations noJobSet = KueueIntegrations.parse(List.of("workload.codeflare.dev/appwrapper"));
        assertEquals(Optional.of("AppWrapper"), ancestor(JOBSET, new Owners().with(JOBSET, "q", WRAPPER).with(WRAPPER, "q", null), noJobSet,
                false));
        assertEquals(Optional.empty(), ancestor(JOBSET, new Owners().with(JOBSET, "q", WRAPPER).with(WRAPPER, null, null), noJobSet, false));
        assertFalse(OwnerAncestry.of(Optional.of(JOBSET), new Owners().with(JOBSET, "q", null), noJobSet, false).ownerKindManaged());
    }

    @Test
    void aJobWithoutAnOwnerKueueKnowsCostsNoRead() {
        Owners owners = new Owners();
        assertEquals(OwnerAncestry.NONE, OwnerAncestry.of(Optional.empty(), owners, DEFAULT, true));
        Reference workflow = new Reference("argoproj.io/v1alpha1", "Workflow", "wf", "u-wf");
        assertEquals(OwnerAncestry.NONE, OwnerAncestry.of(Optional.of(workflow), owners, DEFAULT, true));
        assertEquals(0, owners.reads);
        // The walk stops at an owner Kueue does not know, above one it manages.
        assertEquals(Optional.of("AppWrapper"), ancestor(WRAPPER, new Owners().with(WRAPPER, "q", workflow), DEFAULT, false));
    }

    @Test
    void anExternalFrameworkIsManagedAsKueueManagesIt() {
        KueueIntegrations external = KueueIntegrations.parse(List.of("batch/job", " MyWrapper.v1.example.com "));
        Reference mine = new Reference("example.com/v1", "MyWrapper", "w", "u-w");
        assertEquals(Optional.of("MyWrapper"), ancestor(mine, new Owners().with(mine, "q", null), external, false));
        assertFalse(DEFAULT.knows("example.com/v1", "MyWrapper"));
        assertFalse(DEFAULT.knows("workload.codeflare.dev/v1beta1", "AppWrapper"), "Kueue matches the apiVersion too");
    }

    @Test
    void anOwnerOfAnotherUidStopsTheWalkAsInKueue() {
        Owners owners = new Owners();
        owners.byName.put("aw", new Owner(WRAPPER, "another-uid", Map.of(KueueWorkload.QUEUE_LABEL, "q"), Map.of(), Optional.empty()));
        assertEquals(Optional.empty(), ancestor(WRAPPER, owners, DEFAULT, false));
    }

    @Test
    void aWalkThatCannotEndIsRefusedNamingWhy() {
        assertTrue(assertThrows(OwnerAncestry.Unresolved.class, () -> ancestor(WRAPPER, new Owners(), DEFAULT, false)).getMessage()
                .contains("its owner AppWrapper aw is not found"));
        Owners cycle = new Owners().with(JOBSET, "q", WRAPPER).with(WRAPPER, null, JOBSET);
        assertTrue(assertThrows(OwnerAncestry.Unresolved.class, () -> ancestor(JOBSET, cycle, DEFAULT, false)).getMessage()
                .contains("cycle"));
        Owners deep = new Owners();
        for (int i = 0; i < 12; i++) {
            deep.with(new Reference("batch/v1", "Job", "j" + i, "u" + i), null, new Reference("batch/v1", "Job", "j" + (i + 1), "u" + (i + 1)));
        }
        assertTrue(assertThrows(OwnerAncestry.Unresolved.class, () -> ancestor(new Reference("batch/v1", "Job", "j0", "u0"), deep, DEFAULT,
                false)).getMessage().contains("longer than Kueue walks (10)"));
    }

    @Test
    void aFrameworkKueueWouldNotStartWithIsRefusedNamingIt() {
        var e = assertThrows(KueueIntegrations.Invalid.class, () -> KueueIntegrations.parse(List.of("batch/job", "kubeflow.org/pytorchjobs")));
        assertTrue(e.getMessage().contains("names kubeflow.org/pytorchjobs, neither one of Kueue's frameworks")
                && e.getMessage().contains("TORCHJOB_KUEUE_INTEGRATIONS"), e.getMessage());
    }

    @Test
    void anAppWrapperLeavingItsGracePeriodsToItsDefaultsIsToldHowItMeetsAGroupRestart() {
        String said = new OwnerAncestry(true, Optional.of(new Owner(WRAPPER, "u-aw", Map.of(KueueWorkload.QUEUE_LABEL, "q"),
                Map.of(AppWrapperResets.WARMUP_GRACE, "24h"), Optional.empty()))).queuedByOwnerMessage(Optional.empty());
        assertTrue(said.contains("AppWrapper aw resets the whole job") && said.contains(AppWrapperResets.ADMISSION_GRACE + " and "
                + AppWrapperResets.WARMUP_GRACE + " 24h and " + AppWrapperResets.FAILURE_GRACE + " longer than the operator's back-off")
                && said.contains("restartPolicy Never"), said);
        String twoSet = new OwnerAncestry(true, Optional.of(new Owner(WRAPPER, "u-aw", Map.of(KueueWorkload.QUEUE_LABEL, "q"),
                Map.of(AppWrapperResets.ADMISSION_GRACE, "24h", AppWrapperResets.WARMUP_GRACE, "24h"), Optional.empty())))
                .queuedByOwnerMessage(Optional.empty());
        assertTrue(twoSet.contains("resets the whole job"), "the failure grace period left at 1 minute: a back-off outlasts it; " + twoSet);

        String set = new OwnerAncestry(true, Optional.of(new Owner(WRAPPER, "u-aw", Map.of(KueueWorkload.QUEUE_LABEL, "q"),
                ALL_GRACE, Optional.empty()))).queuedByOwnerMessage(Optional.empty());
        assertFalse(set.contains("resets"), "all set: the user chose; " + set);
        String jobSet = new OwnerAncestry(true, Optional.of(new Owner(JOBSET, "u-js", Map.of(KueueWorkload.QUEUE_LABEL, "q"), Map.of(),
                Optional.empty()))).queuedByOwnerMessage(Optional.empty());
        assertFalse(jobSet.contains("resets"), "another owner kind: " + jobSet);
    }

    @Test
    void anAppWrappersJobWhoseCleanUpDeletesPodsItCountsIsToldItWouldRunAgain() {
        OwnerAncestry ancestry = new OwnerAncestry(true, Optional.of(new Owner(WRAPPER, "u-aw", Map.of(KueueWorkload.QUEUE_LABEL, "q"),
                ALL_GRACE, Optional.empty())));
        String said = ancestry.queuedByOwnerMessage(Optional.of("runPolicy.cleanPodPolicy Running"));
        assertTrue(said.contains("runPolicy.cleanPodPolicy Running deletes pods it would count") && said.contains("run the job again")
                && said.contains("keep the pods (None)") && said.endsWith("see docs/kueue.md, \"A job in an AppWrapper\""), said);
        assertFalse(said.contains("resets the whole job"), "its grace periods are set: " + said);
        String jobSet = new OwnerAncestry(true, Optional.of(new Owner(JOBSET, "u-js", Map.of(KueueWorkload.QUEUE_LABEL, "q"), Map.of(),
                Optional.empty()))).queuedByOwnerMessage(Optional.of("runPolicy.cleanPodPolicy All"));
        assertFalse(jobSet.contains("AppWrapper"), "another owner kind counts no pods: " + jobSet);
    }
}
