package dev.torchjob.operator.metrics;

import java.util.Map;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.javaoperatorsdk.operator.api.monitoring.Metrics;
import io.javaoperatorsdk.operator.api.reconciler.RetryInfo;
import io.javaoperatorsdk.operator.monitoring.micrometer.MicrometerMetrics;
import io.javaoperatorsdk.operator.processing.Controller;
import io.javaoperatorsdk.operator.processing.event.Event;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.controller.ResourceAction;
import io.javaoperatorsdk.operator.processing.event.source.controller.ResourceEvent;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * The operator SDK's reconciliation metrics, without per-job meters (their number would grow
 * with every job ever seen), plus the one event only the SDK sees: a job being deleted.
 */
@Singleton // replaces quarkus-operator-sdk's default bean, which keeps meters per resource
public class OperatorSdkMetrics implements Metrics {
    private final Metrics sdk;
    private final JobMetrics jobs;
    private final Counter reconcileErrors;

    @Inject
    public OperatorSdkMetrics(MeterRegistry registry, JobMetrics jobs) {
        this.sdk = MicrometerMetrics.withoutPerResourceMetrics(registry);
        this.jobs = jobs;
        // Registered at start, so alerts and panels on it have data before the first error.
        this.reconcileErrors = Counter.builder("pytorchtrainingjob_reconcile_errors")
                .description("Reconciliations of jobs (both kinds) that ended in an error: a step the API server refused, or any other (retried with back-off)")
                .register(registry);
    }

    @Override
    public void receivedEvent(Event event, Map<String, Object> metadata) {
        if (event instanceof ResourceEvent resourceEvent && resourceEvent.getAction() == ResourceAction.DELETED
                && resourceEvent.getResource().map(r -> r instanceof PyTorchTrainingJob || r instanceof PyTorchJob).orElse(false)) {
            jobs.jobDeleted(resourceEvent.getResource().get().getKind(), event.getRelatedCustomResourceID());
        }
        sdk.receivedEvent(event, metadata);
    }

    @Override
    public void controllerRegistered(Controller<? extends HasMetadata> controller) {
        sdk.controllerRegistered(controller);
    }

    @Override
    public void reconcileCustomResource(HasMetadata resource, RetryInfo retryInfo, Map<String, Object> metadata) {
        sdk.reconcileCustomResource(resource, retryInfo, metadata);
    }

    @Override
    public void failedReconciliation(HasMetadata resource, Exception exception, Map<String, Object> metadata) {
        reconcileErrors.increment();
        sdk.failedReconciliation(resource, exception, metadata);
    }

    /** A pass that the API server refused a step of: handled by the reconciler (said once, retried), counted here. */
    public void refusedReconciliation() {
        reconcileErrors.increment();
    }

    @Override
    public void reconciliationExecutionStarted(HasMetadata resource, Map<String, Object> metadata) {
        sdk.reconciliationExecutionStarted(resource, metadata);
    }

    @Override
    public void reconciliationExecutionFinished(HasMetadata resource, Map<String, Object> metadata) {
        sdk.reconciliationExecutionFinished(resource, metadata);
    }

    @Override
    public void cleanupDoneFor(ResourceID resourceID, Map<String, Object> metadata) {
        sdk.cleanupDoneFor(resourceID, metadata);
    }

    @Override
    public void finishedReconciliation(HasMetadata resource, Map<String, Object> metadata) {
        sdk.finishedReconciliation(resource, metadata);
    }

    @Override
    public <T> T timeControllerExecution(ControllerExecution<T> execution) throws Exception {
        return sdk.timeControllerExecution(execution);
    }

    @Override
    public <T extends Map<?, ?>> T monitorSizeOf(T map, String name) {
        return sdk.monitorSizeOf(map, name);
    }
}
