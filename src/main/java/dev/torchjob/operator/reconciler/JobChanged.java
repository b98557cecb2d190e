package dev.torchjob.operator.reconciler;

import java.util.Objects;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.javaoperatorsdk.operator.processing.event.source.filter.OnUpdateFilter;

/**
 * Which updates of a job start a pass: a new spec (its generation), new labels or annotations (the
 * job's Kueue queue, priority and time limit are labels; its restart scope an annotation), or its
 * deletion; never a status write alone, ours or anyone's. The controllers are not generation-aware,
 * so that this filter, not JOSDK's generation check, decides.
 */
public class JobChanged implements OnUpdateFilter<HasMetadata> {
    @Override
    public boolean accept(HasMetadata newJob, HasMetadata oldJob) {
        var now = newJob.getMetadata();
        var before = oldJob.getMetadata();
        return now.getGeneration() == null || !Objects.equals(now.getGeneration(), before.getGeneration())
                || !Objects.equals(now.getLabels(), before.getLabels()) || !Objects.equals(now.getAnnotations(), before.getAnnotations())
                || newJob.isMarkedForDeletion() && !oldJob.isMarkedForDeletion();
    }
}
