package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/** Which new jobs are put in their namespace's default LocalQueue, as Kueue's webhooks put the jobs they know. */
class DefaultLocalQueueTest {
    static final Set<String> UNMANAGED = Set.of(DefaultLocalQueue.UNMANAGED_NAMESPACES.split(","));

    @Test
    void aJobNotStartedWithoutAQueueLabelIsLookedForInAManagedNamespace() {
        assertTrue(DefaultLocalQueue.sought(Optional.empty(), () -> false, "team-a", UNMANAGED));
    }

    @Test
    void aJobThatNamesItsQueueKeepsIt() {
        assertFalse(DefaultLocalQueue.sought(Optional.of("team-a-queue"), () -> false, "team-a", UNMANAGED));
    }

    @Test
    void aStartedJobIsNeverPutInAQueueThatAppearedLater() {
        assertFalse(DefaultLocalQueue.sought(Optional.empty(), () -> true, "team-a", UNMANAGED));
    }

    @Test
    void kueuesOwnNamespaceAndKubeSystemAreNotManagedAsKueueLeavesThemByDefault() {
        assertEquals(Set.of("kube-system", "kueue-system"), UNMANAGED);
        for (String namespace : UNMANAGED) {
            assertFalse(DefaultLocalQueue.sought(Optional.empty(), () -> false, namespace, UNMANAGED), namespace);
        }
        assertTrue(DefaultLocalQueue.sought(Optional.empty(), () -> false, "kueue-system", Set.of()), "a setting can manage it");
    }

    @Test
    void theStartIsAskedOnlyWhenItDecides() {
        assertFalse(DefaultLocalQueue.sought(Optional.of("q"), () -> {
            throw new AssertionError("the job's pods are not looked at for a labelled job");
        }, "team-a", UNMANAGED));
    }

    @Test
    void theLabelIsWrittenOnlyOnTheVersionOfTheJobThatWasLookedAt() {
        Map<?, ?> patch = new KubernetesSerialization().unmarshal(DefaultLocalQueue.labelPatch("4711"), Map.class);
        assertEquals(Map.of("metadata", Map.of("resourceVersion", "4711", "labels", Map.of("kueue.x-k8s.io/queue-name", "default"))), patch);
    }
}
