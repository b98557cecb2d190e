package dev.torchjob.operator.metrics;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.javaoperatorsdk.operator.api.monitoring.Metrics;
import io.javaoperatorsdk.operator.api.reconciler.Constants;
import io.javaoperatorsdk.operator.api.reconciler.RetryInfo;
import io.javaoperatorsdk.operator.monitoring.micrometer.MicrometerMetricsV2;
import io.javaoperatorsdk.operator.processing.Controller;
import io.javaoperatorsdk.operator.processing.event.Event;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.ResourceAction;
import io.javaoperatorsdk.operator.processing.event.source.controller.ResourceEvent;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * The passes of each job kind under names of our own (what the shipped alerts and dashboard read: they
 * must not change when the SDK renames its meters), the SDK's own meters (per controller, never per
 * job: their number would grow with every job ever seen), and the one event only the SDK sees: a job
 * being deleted.
 */
@Singleton // replaces quarkus-operator-sdk's default bean
public class OperatorSdkMetrics implements Metrics {
    /** A pass takes milliseconds unless a call to the API server waits; the slowest are retried calls. */
    private static final Duration[] PASS_BUCKETS = {Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10),
            Duration.ofMillis(25), Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
            Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30)};

    /** One controller's meters, registered with it, by the kind it reconciles. */
    private record Passes(Counter started, Timer duration) {
    }

    private final MeterRegistry registry;
    private final Metrics sdk;
    private final JobMetrics jobs;
    private final ActingReplica replica;
    private final Counter reconcileErrors;
    private final Map<String, Passes> byController = new ConcurrentHashMap<>();

    @Inject
    public OperatorSdkMetrics(MeterRegistry registry, JobMetrics jobs, ActingReplica replica) {
        this.registry = registry;
        this.sdk = MicrometerMetricsV2.newBuilder(registry).build();
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
        String kind = HasMetadata.getKind(controller.getConfiguration().getResourceClass());
        byController.put(controller.getConfiguration().getName(), new Passes(
                Counter.builder("pytorchtrainingjob_reconciliations").tag("kind", kind)
                        .description("Reconciliations (passes) of jobs of the kind that started, retries included").register(registry),
                Timer.builder("pytorchtrainingjob_reconcile_duration").tag("kind", kind)
                        .description("How long each reconciliation (pass) of a job of the kind took, failed ones included")
                        .serviceLevelObjectives(PASS_BUCKETS).register(registry)));
        sdk.controllerRegistered(controller);
    }

    @Override
    public void reconciliationSubmitted(HasMetadata resource, RetryInfo retryInfo, Map<String, Object> metadata) {
        sdk.reconciliationSubmitted(resource, retryInfo, metadata);
    }

    @Override
    public void reconciliationStarted(HasMetadata resource, Map<String, Object> metadata) {
        passes(metadata).ifPresent(p -> p.started().increment());
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
        Timer.Sample sample = Timer.start(registry);
        try {
            return sdk.timeControllerExecution(execution);
        } finally {
            Passes passes = byController.get(execution.controllerName());
            if (passes != null) {
                sample.stop(passes.duration());
            }
        }
    }

    private Optional<Passes> passes(Map<String, Object> metadata) {
        return Optional.ofNullable(metadata.get(Constants.CONTROLLER_NAME)).map(byController::get);
    }
}
