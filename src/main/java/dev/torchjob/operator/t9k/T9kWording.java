package dev.torchjob.operator.t9k;

import dev.torchjob.operator.api.PyTorchTrainingJobSpec;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Wording;

/** The engine's sentences that name T9k's fields (runMode.pause, spec.scheduler). */
record T9kWording(PyTorchTrainingJobSpec spec) implements Wording {

    @Override
    public String paused() {
        return "All pods are deleted; set runMode.pause.enabled to false to resume.";
    }

    @Override
    public String pausing(int podsLeft) {
        return "Deleting " + podsLeft + " pods.";
    }

    @Override
    public String resuming() {
        boolean resumeSpecs = spec != null && spec.runMode != null && spec.runMode.pause != null
                && spec.runMode.pause.resumeSpecs != null && !spec.runMode.pause.resumeSpecs.isEmpty();
        return "Resuming: recreating the pods" + (resumeSpecs ? " with runMode.pause.resumeSpecs" : "") + ".";
    }

    @Override
    public String pauseIgnored(JobPhase phase) {
        return "The job has " + phase + "; pausing it changes nothing.";
    }

    @Override
    public String awaitingAdmission() {
        return "The T9k scheduler's PodGroup API (" + PodTemplates.POD_GROUP_API_VERSION
                + ") is not installed in this cluster: install the T9k scheduler, or remove spec.scheduler to use the default scheduler.";
    }
}
