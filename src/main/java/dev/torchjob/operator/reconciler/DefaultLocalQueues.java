package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import dev.torchjob.operator.kueue.DefaultLocalQueue;
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
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * Puts a new job without a queue label in its namespace's default LocalQueue, as Kueue's webhooks do
 * for the kinds they know ({@link DefaultLocalQueue} decides; here the LocalQueues are read and the
 * label written). The LocalQueues named {@value DefaultLocalQueue#NAME} are watched (an informer per
 * controller, only where Kueue is installed), so that no job costs a read.
 */
@ApplicationScoped
public class DefaultLocalQueues {
    private static final Logger LOG = Logger.getLogger(DefaultLocalQueues.class);
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

    /** Namespaces whose jobs are never put in a queue, as Kueue's managedJobsNamespaceSelector leaves them. */
    @ConfigProperty(name = "torchjob.kueue.unmanaged-namespaces", defaultValue = DefaultLocalQueue.UNMANAGED_NAMESPACES)
    Set<String> unmanaged;

    /** Per controller, the informer of the LocalQueues named default. */
    private final Map<String, InformerEventSource<GenericKubernetesResource, ?>> queues = new ConcurrentHashMap<>();
    private volatile ApiDiscovery discovery;

    /** The controller's informer of default LocalQueues, at its start, when Kueue is installed then. */
    public <J extends HasMetadata> List<InformerEventSource<GenericKubernetesResource, J>> atStart(EventSourceContext<J> context,
            String controller) {
        if (!enabled || !discovery().installed()) {
            return List.of();
        }
        InformerEventSource<GenericKubernetesResource, J> informer = new InformerEventSource<>(
                configuration(context.getPrimaryResourceClass(), controller), context);
        queues.put(controller, informer);
        return List.of(informer);
    }

    /**
     * Labels the job with the default LocalQueue when it is sought and exists; true when the job was
     * labelled, or changed since it was read: its next pass (the label's own event) queues it, or decides
     * again.
     *
     * @param started whether the operator wrote the job's status or made a pod of it
     */
    public <J extends HasMetadata> boolean label(J job, BooleanSupplier started, Context<J> context) {
        String namespace = job.getMetadata().getNamespace();
        if (!enabled || !DefaultLocalQueue.sought(KueueWorkload.queueOf(job), started, namespace, unmanaged)) {
            return false;
        }
        InformerEventSource<GenericKubernetesResource, ?> informer = informer(context);
        if (informer == null || informer.get(new ResourceID(DefaultLocalQueue.NAME, namespace)).isEmpty()) {
            return false;
        }
        try {
            client.resource(job).patch(PatchContext.of(PatchType.JSON_MERGE),
                    DefaultLocalQueue.labelPatch(job.getMetadata().getResourceVersion()));
            LOG.debugf("%s %s/%s: put in LocalQueue %s", job.getKind(), namespace, job.getMetadata().getName(), DefaultLocalQueue.NAME);
        } catch (KubernetesClientException e) {
            if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                throw new ApplyFailure(STEP, "label " + KueueWorkload.QUEUE_LABEL + "=" + DefaultLocalQueue.NAME + " (the namespace's "
                        + "default LocalQueue)", e);
            }
        }
        return true;
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
                @SuppressWarnings("unchecked")
                Class<J> jobKind = (Class<J>) context.getControllerConfiguration().getResourceClass();
                var retriever = context.eventSourceRetriever();
                InformerEventSource<GenericKubernetesResource, J> started = new InformerEventSource<>(configuration(jobKind, controller),
                        retriever.eventSourceContextForDynamicRegistration());
                retriever.dynamicallyRegisterEventSource(started);
                queues.put(controller, started);
                LOG.infof("%s: watching Kueue's default LocalQueues", controller);
            }
            return queues.get(controller);
        }
    }

    private static <J extends HasMetadata> InformerEventSourceConfiguration<GenericKubernetesResource> configuration(Class<J> jobKind,
            String controller) {
        return InformerEventSourceConfiguration.from(new GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue"), jobKind)
                .withName(controller + "-default-localqueues")
                .withFieldSelector(new FieldSelector(new FieldSelector.Field("metadata.name", DefaultLocalQueue.NAME)))
                .withNamespacesInheritedFromController()
                // A LocalQueue made or deleted changes no job: only jobs created later are put in it.
                .withSecondaryToPrimaryMapper((GenericKubernetesResource queue) -> Set.of())
                .build();
    }

    private ApiDiscovery discovery() {
        if (discovery == null) {
            discovery = new ApiDiscovery(client, clock, LOCAL_QUEUES);
        }
        return discovery;
    }
}
