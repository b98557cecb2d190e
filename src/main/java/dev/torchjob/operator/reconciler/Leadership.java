package dev.torchjob.operator.reconciler;

import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.inject.Singleton;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.javaoperatorsdk.operator.api.config.LeaderElectionConfiguration;
import io.javaoperatorsdk.operator.api.config.LeaderElectionConfigurationBuilder;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Quarkus;

/**
 * Leader election as the operator runs it, with several replicas (TORCHJOB_LEADER_ELECTION_ENABLED).
 * JOSDK would end the process with {@code System.exit} whenever leading stops, also when it stops
 * because the process is shutting down: from inside the shutdown hook that deadlocks, so a leader
 * never ended on SIGTERM and the next replica waited out the Lease. Here leading that stops during
 * shutdown is expected (the Lease is then released, so another replica leads within its retry
 * period), and leading lost while running still ends the process, from outside the hook.
 * Whether this process leads is the gauge {@code leader_election_master_status} (the name
 * controller-runtime operators such as Kubeflow's use) and the Lease's holder.
 */
@Singleton
public class Leadership {
    private static final Logger LOG = Logger.getLogger(Leadership.class);

    private final boolean enabled;
    private final String leaseName;
    private final Optional<String> leaseNamespace;
    /** Unique per process: a restarted pod keeps its name but must not look like the old holder. */
    private final String identity = Optional.ofNullable(System.getenv("HOSTNAME")).orElse("torchjob-operator")
            + "_" + UUID.randomUUID();
    private final AtomicBoolean leading = new AtomicBoolean();
    private final AtomicBoolean shuttingDown = new AtomicBoolean();

    Leadership(@ConfigProperty(name = "torchjob.leader-election.enabled", defaultValue = "false") boolean enabled,
            @ConfigProperty(name = "torchjob.leader-election.lease-name", defaultValue = "torchjob-operator-leader") String leaseName,
            @ConfigProperty(name = "torchjob.leader-election.lease-namespace") Optional<String> leaseNamespace,
            MeterRegistry registry) {
        this.enabled = enabled;
        this.leaseName = leaseName;
        this.leaseNamespace = leaseNamespace;
        Gauge.builder("leader_election_master_status", () -> !enabled || leading.get() ? 1 : 0)
                .description("1 while this process leads (holds the Lease, or runs without leader election), else 0")
                .tag("name", leaseName).register(registry);
    }

    /** JOSDK's configuration: no exit of its own, our callbacks; null when leader election is off. */
    LeaderElectionConfiguration configuration() {
        if (!enabled) {
            return null;
        }
        // Without JOSDK's own exit on losing the Lease: it calls System.exit from the shutdown hook too, where
        // the Lease is handed back, and would hang the stop; stopped() exits instead. JOSDK names the builder
        // call that says so "for tests" (its constructor that did is deprecated): this is why it is used here.
        return LeaderElectionConfigurationBuilder.aLeaderElectionConfiguration(leaseName)
                .withLeaseNamespace(leaseNamespace.orElse(null)).withIdentity(identity)
                .withLeaderCallbacks(new LeaderCallbacks(this::started, this::stopped, leader -> LOG.debugf("the Lease is held by %s", leader)))
                .buildForTest(false);
    }

    private void started() {
        leading.set(true);
        LOG.infof("leading: holds the Lease %s as %s", leaseName, identity);
    }

    private void stopped() {
        leading.set(false);
        if (shuttingDown.get()) {
            return;
        }
        // Another replica may lead now: going on would mean two operators writing the same jobs.
        LOG.errorf("lost the Lease %s; exiting so that the replica that holds it works alone", leaseName);
        Quarkus.asyncExit(1);
    }

    /** Whether this process may write: it leads, or runs without leader election. */
    boolean working() {
        return !enabled || leading.get();
    }

    /** Called first on shutdown: leading stops from now on without ending the process a second time. */
    void shuttingDown() {
        shuttingDown.set(true);
    }

    /**
     * After the operator has stopped: hands the Lease back if this process still holds it, as
     * client-go's ReleaseOnCancel does (no holder, a one-second duration), so that another replica
     * takes it at its next try instead of after the lease duration. Optimistic locking: a Lease
     * another replica took meanwhile is left alone.
     */
    void releaseLease(Config clientConfig) {
        leading.set(false);
        if (!enabled) {
            return;
        }
        // Whether this process holds it is the Lease's word: leading has already stopped by now. A
        // client of its own: JOSDK closes the operator's when it stops.
        String namespace = leaseNamespace.orElseGet(clientConfig::getNamespace);
        try (KubernetesClient client = new KubernetesClientBuilder().withConfig(clientConfig).build()) {
            Lease lease = client.leases().inNamespace(namespace).withName(leaseName).get();
            if (lease == null || lease.getSpec() == null || !identity.equals(lease.getSpec().getHolderIdentity())) {
                return;
            }
            ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
            lease.getSpec().setHolderIdentity(null);
            lease.getSpec().setLeaseDurationSeconds(1);
            lease.getSpec().setRenewTime(now);
            client.leases().inNamespace(namespace).resource(lease).update();
            LOG.infof("released the Lease %s at %s", leaseName, DateTimeFormatter.ISO_INSTANT.format(now));
        } catch (KubernetesClientException e) {
            LOG.warnf("could not release the Lease %s (%s): another replica leads once it expires", leaseName, e.getMessage());
        }
    }
}
