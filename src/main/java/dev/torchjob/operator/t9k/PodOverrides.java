package dev.torchjob.operator.t9k;

import java.util.List;

import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.api.RunMode;

/**
 * How a run mode changes a replica's training container (spec §9): debug runs a debug command
 * with no args and no torchrun; a resumed job may replace command and args. Null keeps the template's.
 */
public record PodOverrides(List<String> command, List<String> args, boolean skipInitContainers, boolean torchrun) {
    public static final PodOverrides NONE = new PodOverrides(null, null, false, true);
    public static final List<String> DEFAULT_DEBUG_COMMAND = List.of("sleep", "inf");

    public static PodOverrides debug(PyTorchTrainingJobSpec spec, String type) {
        RunMode.DebugReplicaSpec settings = spec.runMode.debug.replicaSpecs == null ? null
                : spec.runMode.debug.replicaSpecs.stream().filter(s -> type.equals(s.type)).findFirst().orElse(null);
        List<String> command = settings == null || settings.command == null || settings.command.isEmpty()
                ? DEFAULT_DEBUG_COMMAND
                : settings.command;
        return new PodOverrides(command, List.of(), settings != null && Boolean.TRUE.equals(settings.skipInitContainer), false);
    }

    public static PodOverrides resume(PyTorchTrainingJobSpec spec, String type) {
        RunMode.ResumeReplicaSpec settings = spec.runMode == null || spec.runMode.pause == null || spec.runMode.pause.resumeSpecs == null
                ? null
                : spec.runMode.pause.resumeSpecs.stream().filter(s -> type.equals(s.type)).findFirst().orElse(null);
        if (settings == null) {
            return NONE;
        }
        return new PodOverrides(settings.command, settings.args, Boolean.TRUE.equals(settings.skipInitContainer), true);
    }
}
