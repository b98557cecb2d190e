package dev.torchjob.operator.t9k;

import java.util.ArrayList;
import java.util.List;

import dev.torchjob.operator.api.JobCondition;

/** Keeps conditions in a fixed order and lastTransitionTime unchanged unless status changes. */
final class Conditions {
    private final List<JobCondition> previous;
    private final List<JobCondition> next = new ArrayList<>();
    private final String now;

    Conditions(List<JobCondition> previous, String now) {
        this.previous = previous == null ? List.of() : previous;
        this.now = now;
    }

    static JobCondition find(List<JobCondition> conditions, String type) {
        if (conditions == null) {
            return null;
        }
        return conditions.stream().filter(c -> type.equals(c.type)).findFirst().orElse(null);
    }

    static boolean isTrue(List<JobCondition> conditions, String type) {
        JobCondition condition = find(conditions, type);
        return condition != null && condition.isTrue();
    }

    Conditions set(String type, boolean status, String reason, String message) {
        JobCondition condition = new JobCondition(type, status, reason, message);
        JobCondition before = find(previous, type);
        condition.lastTransitionTime = before != null && before.status.equals(condition.status) && before.lastTransitionTime != null
                ? before.lastTransitionTime
                : now;
        next.add(condition);
        return this;
    }

    /** Conditions this pass did not set (such as Paused) are kept as they were. */
    List<JobCondition> build() {
        for (JobCondition before : previous) {
            if (find(next, before.type) == null) {
                next.add(before);
            }
        }
        return next;
    }
}
