package dev.torchjob.operator.reconciler;

import java.time.Clock;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.engine.Observation.PodGroupState;
import dev.torchjob.operator.t9k.PodTemplates;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * The T9k scheduler's PodGroups. Read with a GET by name, only for jobs that use the T9k scheduler,
 * once API discovery says they are installed ({@link ApiDiscovery}).
 */
@ApplicationScoped
public class PodGroupApi {
    static final ResourceDefinitionContext POD_GROUPS = new ResourceDefinitionContext.Builder()
            .withGroup("scheduler.tensorstack.dev").withVersion("v1beta1").withKind(PodTemplates.POD_GROUP_KIND)
            .withPlural("podgroups").withNamespaced(true).build();

    @Inject
    @PassClient
    KubernetesClient client;

    @Inject
    Clock clock;

    private volatile ApiDiscovery discovery;

    public PodGroupState stateOf(PyTorchTrainingJob job) {
        if (job.getSpec() == null || job.getSpec().scheduler == null || job.getSpec().scheduler.t9kScheduler == null) {
            return PodGroupState.NOT_NEEDED;
        }
        if (!discovery().installed()) {
            return PodGroupState.API_MISSING;
        }
        GenericKubernetesResource podGroup = client.genericKubernetesResources(POD_GROUPS)
                .inNamespace(job.getMetadata().getNamespace()).withName(job.getMetadata().getName()).get();
        return podGroup == null ? PodGroupState.MISSING : PodGroupState.EXISTS;
    }

    public void create(GenericKubernetesResource podGroup) {
        client.genericKubernetesResources(POD_GROUPS).inNamespace(podGroup.getMetadata().getNamespace()).resource(podGroup).create();
    }

    private ApiDiscovery discovery() {
        if (discovery == null) {
            discovery = new ApiDiscovery(client, clock, POD_GROUPS);
        }
        return discovery;
    }
}
