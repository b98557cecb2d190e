package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.time.Duration;

import jakarta.enterprise.context.Dependent;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

import org.eclipse.microprofile.config.inject.ConfigProperty;

import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.metrics.ActingReplica;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.RequestConfigBuilder;
import io.javaoperatorsdk.operator.api.config.LeaderElectionConfiguration;
import io.quarkus.arc.DefaultBean;

/** Beans the operator runs with; tests replace the clock. */
public class OperatorBeans {

    @Produces
    @Singleton
    @DefaultBean
    Clock clock() {
        return Clock.systemUTC();
    }

    /**
     * The wait before a failed replica's new pod, kubelet-like by default (10 s doubling to 5 min, reset after a 10 min run);
     * a group restarting soon after its start also waits out the cluster's DNS cache (30 s, kubeadm's Corefile).
     */
    @Produces
    @Singleton
    RestartBackoff restartBackoff(
            @ConfigProperty(name = "torchjob.restart-backoff.initial", defaultValue = "10s") Duration initial,
            @ConfigProperty(name = "torchjob.restart-backoff.max", defaultValue = "5m") Duration max,
            @ConfigProperty(name = "torchjob.restart-backoff.reset-after", defaultValue = "10m") Duration resetAfter,
            @ConfigProperty(name = "torchjob.restart-backoff.dns-cache", defaultValue = "30s") Duration dnsCache) {
        return new RestartBackoff(initial, max, resetAfter, dnsCache);
    }

    /** The same client (its connections, its settings) with the one retry of {@link PassClient}. */
    @Produces
    @Singleton
    @PassClient
    KubernetesClient passClient(KubernetesClient client) {
        return client.newClient(new RequestConfigBuilder(client.getConfiguration().getRequestConfig())
                .withRequestRetryBackoffLimit(PassClient.RETRIES).build()).adapt(KubernetesClient.class);
    }

    /** The Lease of leader election, or none (null: JOSDK then runs without); see {@link Leadership}. */
    @Produces
    @Dependent
    LeaderElectionConfiguration leaderElection(Leadership leadership) {
        return leadership.configuration();
    }

    @Produces
    @Singleton
    ActingReplica actingReplica(Leadership leadership) {
        return leadership::working;
    }
}
