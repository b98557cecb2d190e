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
import io.javaoperatorsdk.operator.processing.event.source.ResourceAction;
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
    private final ActingReplica replica;
    private final Counter reconcileErrors;

    @Inject
    public OperatorSdkMetrics(MeterRegistry registry, JobMetrics jobs, ActingReplica replica) {
        this.sdk = MicrometerMetrics.withoutPerResourceMetrics(registry);
        this.jobs = jobs;
        this.replica = replica;
        // Registered at start, so alerts and panels on it have data before the first error.
        this.reconcileErrors = Counter.builder("pytorchtrainingjob_reconcile_errors")
                .description("Reconciliations of jobs (both kinds) that ended in an error: a step the API server refused, or any other (retried with back-off)")
                .register(registry);
    }

    /**
     * JOSDK tells every replica of every event, the standing-by ones too (their informers run, only their
     * reconciling waits for the Lease): a deletion is counted by the replica that acts on jobs alone.
     */
    @Override
    public void eventReceived(Event event, Map<String, Object> metadata) {
        if (event instanceof ResourceEvent resourceEvent && resourceEvent.getAction() == ResourceAction.DELETED && replica.acting()
                && resourceEvent.getResource().map(r -> r instanceof PyTorchTrainingJob || r instanceof PyTorchJob).orElse(false)) {
            jobs.jobDeleted(resourceEvent.getResource().get().getKind(), event.getRelatedCustomResourceID());
        }
        sdk.eventReceived(event, metadata);
    }

    @Override
    public void controllerRegistered(Controller<? extends HasMetadata> controller) {
        sdk.controllerRegistered(controller);
    }

    @Override
    public void reconciliationSubmitted(HasMetadata resource, RetryInfo retryInfo, Map<String, Object> metadata) {
        sdk.reconciliationSubmitted(resource, retryInfo, metadata);
    }

    @Override
    public void reconciliationStarted(HasMetadata resource, Map<String, Object> metadata) {
        sdk.reconciliationStarted(resource, metadata);
    }

    @Override
    public void reconciliationFailed(HasMetadata resource, RetryInfo retryInfo, Exception exception, Map<String, Object> metadata) {
        reconcileErrors.increment();
        sdk.reconciliationFailed(resource, retryInfo, exception, metadata);
    }

    /** A pass that the API server refused a step of: handled by the reconciler (said once, retried), counted here. */
    public void refusedReconciliation() {
        reconcileErrors.increment();
    }

    @Override
    public void reconciliationSucceeded(HasMetadata resource, Map<String, Object> metadata) {
        sdk.reconciliationSucceeded(resource, metadata);
    }

    @Override
    public void reconciliationFinished(HasMetadata resource, RetryInfo retryInfo, Map<String, Object> metadata) {
        sdk.reconciliationFinished(resource, retryInfo, metadata);
    }

    @Override
    public void cleanupDone(ResourceID resourceID, Map<String, Object> metadata) {
        sdk.cleanupDone(resourceID, metadata);
    }

    @Override
    public <T> T timeControllerExecution(ControllerExecution<T> execution) throws Exception {
        return sdk.timeControllerExecution(execution);
    }
}
