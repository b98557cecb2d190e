package dev.torchjob.operator.testing;

import java.util.function.UnaryOperator;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.dsl.Resource;

/**
 * A user's change to an object the operator writes too (a job: its status, its conditions), made as
 * {@code kubectl patch} makes it: on the object as it is now, with no resourceVersion precondition.
 * fabric8's {@code edit} adds one (since 6.5), so an edit that meets one of the operator's status
 * writes between its read and its patch fails with 409 — a race of the test, not of the operator.
 */
public final class UserEdits {
    private UserEdits() {
    }

    public static <T extends HasMetadata> T edit(Resource<T> resource, UnaryOperator<T> change) {
        return resource.edit(current -> {
            T changed = change.apply(current);
            changed.getMetadata().setResourceVersion(null);
            return changed;
        });
    }
}
