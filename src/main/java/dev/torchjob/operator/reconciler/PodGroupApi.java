package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.engine.Observation.PodGroupState;
import dev.torchjob.operator.t9k.PodTemplates;
import io.fabric8.kubernetes.api.model.APIResourceList;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * The T9k scheduler's PodGroups. Read with a GET by name, only for jobs that use the T9k scheduler.
 * Whether the API is installed is asked of API discovery; a yes is trusted for 30 seconds, a no is
 * asked again at the next pass (jobs waiting for the scheduler are re-checked every minute).
 */
@ApplicationScoped
public class PodGroupApi {
    static final Duration DISCOVERY_TTL = Duration.ofSeconds(30);
    static final ResourceDefinitionContext POD_GROUPS = new ResourceDefinitionContext.Builder()
            .withGroup("scheduler.tensorstack.dev").withVersion("v1beta1").withKind(PodTemplates.POD_GROUP_KIND)
            .withPlural("podgroups").withNamespaced(true).build();

    @Inject
    KubernetesClient client;

    @Inject
    Clock clock;

    private volatile Instant installedSeenAt;

    public PodGroupState stateOf(PyTorchTrainingJob job) {
        if (job.getSpec() == null || job.getSpec().scheduler == null || job.getSpec().scheduler.t9kScheduler == null) {
            return PodGroupState.NOT_NEEDED;
        }
        if (!installed()) {
            return PodGroupState.API_MISSING;
        }
        GenericKubernetesResource podGroup = client.genericKubernetesResources(POD_GROUPS)
                .inNamespace(job.getMetadata().getNamespace()).withName(job.getMetadata().getName()).get();
        return podGroup == null ? PodGroupState.MISSING : PodGroupState.EXISTS;
    }

    public void create(GenericKubernetesResource podGroup) {
        client.genericKubernetesResources(POD_GROUPS).inNamespace(podGroup.getMetadata().getNamespace()).resource(podGroup).create();
    }

    private boolean installed() {
        Instant now = clock.instant();
        if (installedSeenAt == null || installedSeenAt.plus(DISCOVERY_TTL).isBefore(now)) {
            installedSeenAt = discover() ? now : null;
        }
        return installedSeenAt != null;
    }

    private boolean discover() {
        try {
            APIResourceList resources = client.getApiResources(POD_GROUPS.getGroup() + "/" + POD_GROUPS.getVersion());
            return resources != null && resources.getResources().stream().anyMatch(r -> POD_GROUPS.getPlural().equals(r.getName()));
        } catch (KubernetesClientException e) {
            if (e.getCode() == HttpURLConnection.HTTP_NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }
}
