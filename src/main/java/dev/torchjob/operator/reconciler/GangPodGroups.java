package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.util.Optional;
import java.util.Set;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.kubeflow.GangObservation;
import dev.torchjob.operator.kubeflow.GangScheduler;
import dev.torchjob.operator.kubeflow.KubeflowLabels;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.processing.GroupVersionKind;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * The PodGroups of the gang scheduler {@code torchjob.gang-scheduler-name} names (Kubeflow's
 * {@code --gang-scheduler-name}): watched, filtered by the operator's label, when their API is installed
 * at start, as Kubeflow registers its PodGroup watches; when it is not, one line says so at start and
 * the jobs wait, each saying why.
 */
@ApplicationScoped
public class GangPodGroups {
    private static final Logger LOG = Logger.getLogger(GangPodGroups.class);
    static final String EVENT_SOURCE = PyTorchJobReconciler.NAME + "-podgroups";

    @Inject
    @PassClient
    KubernetesClient client;

    @Inject
    Clock clock;

    @ConfigProperty(name = "torchjob.gang-scheduler-name")
    Optional<String> setting;

    private volatile boolean watched;

    Optional<GangScheduler> scheduler() {
        return GangScheduler.named(setting);
    }

    /** The PodGroup informer, when a gang scheduler is set and its PodGroup API is installed. */
    Optional<InformerEventSource<GenericKubernetesResource, PyTorchJob>> atStart(EventSourceContext<PyTorchJob> context) {
        Optional<GangScheduler> scheduler = scheduler();
        if (scheduler.isEmpty()) {
            return Optional.empty();
        }
        ResourceDefinitionContext kind = scheduler.get().podGroups();
        if (!new ApiDiscovery(client, clock, kind).installed()) {
            LOG.errorf("torchjob.gang-scheduler-name=%s: its PodGroup API (%s/%s) is not installed in this cluster; PyTorchJobs wait,"
                    + " creating no pods, until it is installed and the operator restarted (or the setting removed)",
                    scheduler.get().setting(), kind.getGroup(), kind.getVersion());
            return Optional.empty();
        }
        Optional<String> denied = deniedWatching(kind, context.getControllerConfiguration().getInformerConfig().getNamespaces());
        if (denied.isPresent()) {
            LOG.errorf("torchjob.gang-scheduler-name=%s: the operator may not %s; PyTorchJobs wait, creating no pods, until its RBAC"
                    + " grants it (kubernetes/gang-scheduling/%s/rbac.yaml, or the Helm value kubeflow.gangSchedulerName) and the operator is"
                    + " restarted", scheduler.get().setting(), denied.get(), scheduler.get().overlay());
            return Optional.empty();
        }
        var configuration = InformerEventSourceConfiguration.from(new GroupVersionKind(kind.getGroup(), kind.getVersion(), kind.getKind()),
                PyTorchJob.class)
                .withName(EVENT_SOURCE)
                .withLabelSelector(KubeflowLabels.OPERATOR_SELECTOR)
                .withNamespacesInheritedFromController()
                .withSecondaryToPrimaryMapper((GenericKubernetesResource podGroup) -> {
                    String job = podGroup.getMetadata().getLabels() == null ? null
                            : podGroup.getMetadata().getLabels().get(KubeflowLabels.JOB_NAME);
                    return job == null ? Set.of() : Set.of(new ResourceID(job, podGroup.getMetadata().getNamespace()));
                })
                .build();
        watched = true;
        LOG.infof("gang scheduler %s: watching %s PodGroups", scheduler.get().setting(), kind.getGroup());
        return Optional.of(new InformerEventSource<>(configuration, context));
    }

    /**
     * What the operator may not do with the PodGroups in the namespaces it watches ("list podgroups.scheduling.x-k8s.io
     * in team-a"), or empty: an informer refused its list would fail the operator's start.
     */
    private Optional<String> deniedWatching(ResourceDefinitionContext kind, Set<String> namespaces) {
        boolean all = namespaces.isEmpty() || namespaces.contains(io.javaoperatorsdk.operator.api.reconciler.Constants.WATCH_ALL_NAMESPACES);
        for (String namespace : all ? Set.of("") : namespaces) {
            for (String verb : new String[] {"list", "watch", "create", "patch", "delete"}) {
                var review = new io.fabric8.kubernetes.api.model.authorization.v1.SelfSubjectAccessReviewBuilder().withNewSpec()
                        .withNewResourceAttributes().withGroup(kind.getGroup()).withResource(kind.getPlural()).withVerb(verb)
                        .withNamespace(namespace.isEmpty() ? null : namespace).endResourceAttributes().endSpec().build();
                var answer = client.authorization().v1().selfSubjectAccessReview().create(review);
                if (answer.getStatus() == null || !Boolean.TRUE.equals(answer.getStatus().getAllowed())) {
                    return Optional.of(verb + " " + kind.getPlural() + "." + kind.getGroup() + (namespace.isEmpty() ? " in all namespaces" : " in " + namespace));
                }
            }
        }
        return Optional.empty();
    }

    /** The gang scheduler, whether its PodGroups are watched, and the job's PodGroup as the informer has it. */
    GangObservation observe(PyTorchJob job, Context<PyTorchJob> context) {
        Optional<GangScheduler> scheduler = scheduler();
        if (scheduler.isEmpty()) {
            return GangObservation.NONE;
        }
        if (!watched) {
            return new GangObservation(scheduler, false, Optional.empty());
        }
        String apiVersion = scheduler.get().podGroups().getGroup() + "/" + scheduler.get().podGroups().getVersion();
        Optional<GenericKubernetesResource> podGroup = context.getSecondaryResources(GenericKubernetesResource.class).stream()
                .filter(r -> apiVersion.equals(r.getApiVersion()) && scheduler.get().podGroups().getKind().equals(r.getKind())
                        && job.getMetadata().getName().equals(r.getMetadata().getName()))
                .findFirst();
        return new GangObservation(scheduler, true, podGroup);
    }
}
