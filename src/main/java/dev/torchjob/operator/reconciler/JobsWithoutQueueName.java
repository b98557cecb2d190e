package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import dev.torchjob.operator.kueue.JobWithoutQueueName;
import dev.torchjob.operator.kueue.KueueWorkload;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.javaoperatorsdk.operator.api.config.informer.FieldSelector;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.processing.GroupVersionKind;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.event.source.inbound.SimpleInboundEventSource;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * A job without a queue label, where Kueue is used: put in its namespace's default LocalQueue, or held
 * where Kueue manages every job, as Kueue does for the kinds it knows ({@link JobWithoutQueueName}
 * decides; here the LocalQueues are read and the label written). The LocalQueues named
 * {@value JobWithoutQueueName#DEFAULT_QUEUE} are watched (an informer per controller, only where Kueue
 * is installed), so that no job costs a read; where jobs are held, a relabel that leaves their namespace
 * out of those Kueue manages ({@link KueueNamespaces}) looks at them again.
 */
@ApplicationScoped
public class JobsWithoutQueueName {
    private static final Logger LOG = Logger.getLogger(JobsWithoutQueueName.class);
    static final ResourceDefinitionContext LOCAL_QUEUES = KueueWorkloads.api("localqueues", "LocalQueue", true);
    /** The step a refused label write is said as. */
    static final String STEP = "FailedSetQueueLabel";

    @Inject
    @PassClient
    KubernetesClient client;

    @Inject
    Clock clock;

    @ConfigProperty(name = "torchjob.kueue.enabled", defaultValue = "true")
    boolean enabled;

    @Inject
    KueueNamespaces namespaces;

    @Inject
    KueueOwners owners;

    /** As Kueue's manageJobsWithoutQueueName: a new job that names no queue does not start until it names one. */
    @ConfigProperty(name = "torchjob.kueue.manage-jobs-without-queue-name", defaultValue = "false")
    boolean everyJobQueued;

    /** Per controller, the informer of the LocalQueues named default. */
    private final Map<String, InformerEventSource<GenericKubernetesResource, ?>> queues = new ConcurrentHashMap<>();
    private volatile ApiDiscovery discovery;

    /**
     * The controller's event sources, at its start: the informer of default LocalQueues, when Kueue is
     * installed then; and, where jobs without a queue name are held, their namespaces' relabels.
     */
    public <J extends HasMetadata> List<EventSource<?, J>> atStart(EventSourceContext<J> context, String controller) {
        if (!enabled) {
            return List.of();
        }
        List<EventSource<?, J>> sources = new ArrayList<>();
        if (everyJobQueued) {
            // A held job starts once its namespace is left out of those Kueue manages, without a change of its own.
            SimpleInboundEventSource<J> relabels = new SimpleInboundEventSource<>(controller + "-namespace-relabels");
            namespaces.whenRelabelled(namespace -> context.getPrimaryCache().list(namespace)
                    .filter(job -> KueueWorkload.queueOf(job).isEmpty())
                    .forEach(job -> relabels.propagateEvent(ResourceID.fromResource(job))));
            sources.add(relabels);
        }
        if (discovery().installed()) {
            InformerEventSource<GenericKubernetesResource, J> informer = new InformerEventSource<>(configuration(context, controller),
                    context);
            queues.put(controller, informer);
            sources.add(informer);
        }
        return sources;
    }

    /**
     * What becomes of the job: {@code DEFAULT_QUEUE} when it was labelled with the default LocalQueue, or
     * changed since it was read (its next pass, the label's own event, queues it or decides again);
     * {@code HOLD} when it may not start until it names a queue; else {@code AS_IS}.
     *
     * @param started whether the operator made a pod of the job
     */
    public <J extends HasMetadata> JobWithoutQueueName.Placement place(J job, BooleanSupplier started, Context<J> context) {
        if (!enabled) {
            return JobWithoutQueueName.Placement.AS_IS;
        }
        String namespace = job.getMetadata().getNamespace();
        JobWithoutQueueName.Placement placement = JobWithoutQueueName.of(KueueWorkload.queueOf(job), started,
                () -> namespaces.manages(namespace), () -> hasDefaultQueue(namespace, context), everyJobQueued, () -> owners.of(job));
        if (placement != JobWithoutQueueName.Placement.DEFAULT_QUEUE) {
            return placement;
        }
        try {
            client.resource(job).patch(PatchContext.of(PatchType.JSON_MERGE),
                    JobWithoutQueueName.labelPatch(job.getMetadata().getResourceVersion()));
            LOG.debugf("%s %s/%s: put in LocalQueue %s", job.getKind(), namespace, job.getMetadata().getName(),
                    JobWithoutQueueName.DEFAULT_QUEUE);
        } catch (KubernetesClientException e) {
            if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                throw new ApplyFailure(STEP, "label " + KueueWorkload.QUEUE_LABEL + "=" + JobWithoutQueueName.DEFAULT_QUEUE
                        + " (the namespace's default LocalQueue)", e);
            }
        }
        return placement;
    }

    private <J extends HasMetadata> boolean hasDefaultQueue(String namespace, Context<J> context) {
        InformerEventSource<GenericKubernetesResource, ?> informer = informer(context);
        return informer != null && informer.get(new ResourceID(JobWithoutQueueName.DEFAULT_QUEUE, namespace)).isPresent();
    }

    /** The controller's informer; started here when Kueue was installed after the operator (asked at most every 30 s). */
    private <J extends HasMetadata> InformerEventSource<GenericKubernetesResource, ?> informer(Context<J> context) {
        String controller = context.getControllerConfiguration().getName();
        InformerEventSource<GenericKubernetesResource, ?> informer = queues.get(controller);
        if (informer != null || !discovery().installedLately()) {
            return informer;
        }
        synchronized (queues) {
            if (!queues.containsKey(controller)) {
                var retriever = context.eventSourceRetriever();
                EventSourceContext<J> sourceContext = retriever.eventSourceContextForDynamicRegistration();
                InformerEventSource<GenericKubernetesResource, J> started = new InformerEventSource<>(
                        configuration(sourceContext, controller), sourceContext);
                retriever.dynamicallyRegisterEventSource(started);
                queues.put(controller, started);
                LOG.infof("%s: watching Kueue's default LocalQueues", controller);
            }
            return queues.get(controller);
        }
    }

    private static <J extends HasMetadata> InformerEventSourceConfiguration<GenericKubernetesResource> configuration(
            EventSourceContext<J> context, String controller) {
        return InformerEventSourceConfiguration.from(new GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue"),
                        context.getPrimaryResourceClass())
                .withName(controller + "-default-localqueues")
                .withFieldSelector(new FieldSelector(new FieldSelector.Field("metadata.name", JobWithoutQueueName.DEFAULT_QUEUE)))
                .withNamespacesInheritedFromController()
                // Only its making matters (Kueue updates a LocalQueue's status at every admission): the namespace's jobs
                // without a queue label are looked at again, and one held until it names a queue is put in it. A
                // LocalQueue made or deleted stops no job that started.
                .withOnUpdateFilter((now, before) -> false)
                .withOnDeleteFilter((queue, finalStateUnknown) -> false)
                .withSecondaryToPrimaryMapper((GenericKubernetesResource queue) -> context.getPrimaryCache()
                        .list(queue.getMetadata().getNamespace()).filter(job -> KueueWorkload.queueOf(job).isEmpty())
                        .map(ResourceID::fromResource).collect(Collectors.toSet()))
                .build();
    }

    private ApiDiscovery discovery() {
        if (discovery == null) {
            discovery = new ApiDiscovery(client, clock, LOCAL_QUEUES);
        }
        return discovery;
    }
}
