package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

import io.fabric8.kubernetes.api.model.APIResourceList;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * Whether an optional API (a scheduler's, Kueue's) is installed, asked of API discovery: a yes is
 * trusted for 30 seconds, a no is asked again at the next look (waiting jobs are re-checked every minute),
 * or also trusted for 30 seconds where every new job would ask ({@link #installedLately}).
 */
final class ApiDiscovery {
    static final Duration TTL = Duration.ofSeconds(30);

    private final KubernetesClient client;
    private final Clock clock;
    private final ResourceDefinitionContext api;
    private volatile Instant installedSeenAt;
    private volatile Instant absentSeenAt;

    ApiDiscovery(KubernetesClient client, Clock clock, ResourceDefinitionContext api) {
        this.client = client;
        this.clock = clock;
        this.api = api;
    }

    boolean installed() {
        Instant now = clock.instant();
        if (installedSeenAt == null || installedSeenAt.plus(TTL).isBefore(now)) {
            installedSeenAt = discover() ? now : null;
        }
        return installedSeenAt != null;
    }

    /** As {@link #installed}, but a no is trusted for as long as a yes: for a question every new job asks. */
    boolean installedLately() {
        Instant now = clock.instant();
        if (absentSeenAt != null && !absentSeenAt.plus(TTL).isBefore(now)) {
            return false;
        }
        boolean installed = installed();
        absentSeenAt = installed ? null : now;
        return installed;
    }

    private boolean discover() {
        try {
            APIResourceList resources = client.getApiResources(api.getGroup() + "/" + api.getVersion());
            return resources != null && resources.getResources().stream().anyMatch(r -> api.getPlural().equals(r.getName()));
        } catch (KubernetesClientException e) {
            if (e.getCode() == HttpURLConnection.HTTP_NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }
}
