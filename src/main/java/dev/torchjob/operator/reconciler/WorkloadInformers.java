package dev.torchjob.operator.reconciler;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import dev.torchjob.operator.kueue.KueueWorkload;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.processing.GroupVersionKind;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.IndexerResourceCache;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * Each controller's informer on Kueue Workloads: only this operator's Workloads, each mapped to its job by the
 * label naming it. It starts with the controller where Kueue is installed then, else with the first queued job
 * that needs it, so a cluster without Kueue is never watched for it; and it tells {@link HeldWorkloads} of every
 * Workload being deleted that Kueue's finalizer still holds, so that one whose job is gone is let go.
 */
@ApplicationScoped
public class WorkloadInformers {
    private static final Logger LOG = Logger.getLogger(WorkloadInformers.class);

    @Inject
    HeldWorkloads held;

    /** Controllers whose Workload informer is running. */
    private final Set<String> watching = ConcurrentHashMap.newKeySet();

    /** The controller's informer, to register at its start (Kueue is installed). */
    <J extends HasMetadata> InformerEventSource<GenericKubernetesResource, J> atStart(EventSourceContext<J> context, String controller,
            KueueWorkloads.Labels labels) {
        watching.add(controller);
        LOG.infof("%s: watching Kueue Workloads", controller);
        return new WorkloadInformer<>(configuration(context.getPrimaryResourceClass(), controller, labels), context);
    }

    /** Starts the informer of the job's controller, once. */
    <J extends HasMetadata> void watch(Context<J> context, KueueWorkloads.Labels labels) {
        String controller = context.getControllerConfiguration().getName();
        if (watching.contains(controller)) {
            return;
        }
        synchronized (watching) {
            if (watching.contains(controller)) {
                return;
            }
            @SuppressWarnings("unchecked")
            Class<J> jobKind = (Class<J>) context.getControllerConfiguration().getResourceClass();
            var retriever = context.eventSourceRetriever();
            retriever.dynamicallyRegisterEventSource(new WorkloadInformer<>(configuration(jobKind, controller, labels),
                    retriever.eventSourceContextForDynamicRegistration()));
            watching.add(controller);
            LOG.infof("%s: watching Kueue Workloads", controller);
        }
    }

    /** The job's Workload as its controller's informer holds it; empty where none is, or no informer runs yet. */
    <J extends HasMetadata> Optional<GenericKubernetesResource> of(J job, Context<J> context) {
        if (!watching.contains(context.getControllerConfiguration().getName())) {
            return Optional.empty();
        }
        String name = KueueWorkload.nameOf(job);
        return context.getSecondaryResources(GenericKubernetesResource.class).stream()
                .filter(w -> name.equals(w.getMetadata().getName())).findFirst();
    }

    private static <J extends HasMetadata> InformerEventSourceConfiguration<GenericKubernetesResource> configuration(Class<J> jobKind,
            String controller, KueueWorkloads.Labels labels) {
        return InformerEventSourceConfiguration.from(new GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload"), jobKind)
                .withName(controller + "-workloads")
                .withLabelSelector(labels.selector())
                .withNamespacesInheritedFromController()
                .withSecondaryToPrimaryMapper((GenericKubernetesResource workload) -> {
                    String job = workload.getMetadata().getLabels() == null ? null
                            : workload.getMetadata().getLabels().get(labels.jobNameLabel());
                    return job == null ? Set.of() : Set.of(new ResourceID(job, workload.getMetadata().getNamespace()));
                })
                .build();
    }

    private final class WorkloadInformer<J extends HasMetadata> extends InformerEventSource<GenericKubernetesResource, J> {
        private final IndexerResourceCache<J> jobs;
        private final Class<J> jobKind;

        WorkloadInformer(InformerEventSourceConfiguration<GenericKubernetesResource> configuration, EventSourceContext<J> context) {
            super(configuration, context);
            this.jobs = context.getPrimaryCache();
            this.jobKind = context.getPrimaryResourceClass();
        }

        @Override
        public void onAdd(GenericKubernetesResource workload) {
            super.onAdd(workload);
            held.observed(workload, id -> jobs.get(id).orElse(null), jobKind);
        }

        @Override
        public void onUpdate(GenericKubernetesResource before, GenericKubernetesResource workload) {
            super.onUpdate(before, workload);
            held.observed(workload, id -> jobs.get(id).orElse(null), jobKind);
        }

        @Override
        public void onDelete(GenericKubernetesResource workload, boolean finalStateUnknown) {
            super.onDelete(workload, finalStateUnknown);
            held.gone(workload);
        }
    }
}
