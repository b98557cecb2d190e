package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.kueue.KueueIntegrations;
import dev.torchjob.operator.kueue.OwnerAncestry;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;

/** The operator's read of a job's owners: none for the common job, and a bad setting said on the job that needs it. */
class KueueOwnersTest {
    static KueueOwners set(List<String> frameworks) {
        KueueOwners owners = new KueueOwners();
        owners.frameworks = frameworks;
        return owners; // no client: a job without an owner Kueue knows must not need one
    }

    static PyTorchTrainingJob ownedBy(String apiVersion, String kind) {
        PyTorchTrainingJob job = new PyTorchTrainingJob();
        job.setMetadata(new ObjectMetaBuilder().withName("j").withNamespace("team-a").withUid("u-j").withOwnerReferences(
                new OwnerReferenceBuilder().withApiVersion(apiVersion).withKind(kind).withName("o").withUid("u-o").withController(true)
                        .build()).build());
        return job;
    }

    @Test
    void aJobWithoutAnOwnerKueueKnowsIsReadFromNothing() {
        KueueOwners owners = set(List.of(KueueIntegrations.KUEUE_DEFAULT.split(",")));
        PyTorchTrainingJob plain = new PyTorchTrainingJob();
        plain.setMetadata(new ObjectMetaBuilder().withName("p").withNamespace("team-a").withUid("u-p").build());
        assertEquals(OwnerAncestry.NONE, owners.of(plain));
        assertEquals(OwnerAncestry.NONE, owners.of(ownedBy("argoproj.io/v1alpha1", "Workflow")));
    }

    @Test
    void aSettingKueueWouldNotStartWithIsSaidOnEachJobThatNeedsIt() {
        KueueOwners owners = set(List.of("batch/job", "appwrapper"));
        ApplyFailure failure = assertThrows(ApplyFailure.class, () -> owners.of(ownedBy("workload.codeflare.dev/v1beta2", "AppWrapper")));
        assertEquals(KueueNamespaces.INVALID, failure.reason());
        assertTrue(failure.getMessage().startsWith("the operator's setting: TORCHJOB_KUEUE_INTEGRATIONS (as Kueue's integrations.frameworks "
                + "and externalFrameworks) names appwrapper, neither one of Kueue's frameworks"), failure.getMessage());
    }
}
