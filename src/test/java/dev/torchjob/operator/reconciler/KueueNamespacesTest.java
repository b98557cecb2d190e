package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.kueue.ManagedJobsNamespaces;

/** The operator's view of the namespaces Kueue manages: no read for a selector of names, and a bad setting said on the job. */
class KueueNamespacesTest {
    static KueueNamespaces set(String selector, Set<String> leftOut) {
        KueueNamespaces namespaces = new KueueNamespaces();
        namespaces.selector = selector;
        namespaces.leftOut = Optional.of(leftOut);
        return namespaces; // no client: a selector of names must not need one
    }

    @Test
    void kueuesDefaultAndTheOlderListOfNamesNeedNoRead() {
        KueueNamespaces namespaces = set(ManagedJobsNamespaces.KUEUE_DEFAULT, Set.of("sandbox"));
        assertFalse(namespaces.manages("kube-system"));
        assertFalse(namespaces.manages("sandbox"));
        assertTrue(namespaces.manages("team-a"));
    }

    @Test
    void aSettingThatIsNoLabelSelectorIsSaidOnEachJobThatNeedsIt() {
        KueueNamespaces namespaces = set("kueue-managed=true", Set.of());
        ApplyFailure failure = assertThrows(ApplyFailure.class, () -> namespaces.manages("team-a"));
        assertEquals(KueueNamespaces.INVALID, failure.reason());
        assertTrue(failure.getMessage().startsWith("the operator's setting: TORCHJOB_KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR (as Kueue's "
                + "managedJobsNamespaceSelector) is not a label selector but 'kueue-managed=true'"), failure.getMessage());
    }
}
