package dev.torchjob.operator.reconciler;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;

@ControllerConfiguration(name = "pytorchtrainingjob")
public class PyTorchTrainingJobReconciler implements Reconciler<PyTorchTrainingJob> {
    @Override
    public UpdateControl<PyTorchTrainingJob> reconcile(PyTorchTrainingJob job, Context<PyTorchTrainingJob> context) {
        return UpdateControl.noUpdate();
    }
}
