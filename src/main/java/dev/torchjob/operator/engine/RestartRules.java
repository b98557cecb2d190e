package dev.torchjob.operator.engine;

import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;

/** Whether a replica that stopped may be restarted, before the restart budget is considered. */
public final class RestartRules {
    private RestartRules() {
    }

    public static boolean isRestartable(RestartPolicy policy, ReplicaEnding ending, RetryableExitCodes retryable) {
        RestartPolicy effective = policy == null ? RestartPolicy.OnFailure : policy;
        if (ending.cause() == ReplicaEnding.Cause.SUCCEEDED) {
            return effective == RestartPolicy.Always;
        }
        return switch (effective) {
            case Never -> false;
            case OnFailure, Always -> true;
            case ExitCode -> ending.cause() == ReplicaEnding.Cause.EVICTED
                    || ending.cause() == ReplicaEnding.Cause.VANISHED
                    || ending.onFailedDevice()
                    || (ending.judgedExitCode() != null && retryable.contains(ending.judgedExitCode()));
        };
    }
}
