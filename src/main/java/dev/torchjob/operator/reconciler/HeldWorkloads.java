package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.jboss.logging.Logger;

import dev.torchjob.operator.kueue.KueueWorkload;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.javaoperatorsdk.operator.processing.event.ResourceID;

/**
 * Workloads being deleted that still carry Kueue's finalizer, each let go once its job is gone.
 *
 * <p>While the job lives, its own pass lets its Workload go once its pods are gone. A job that is
 * deleted has no pass left to do it, whatever the order: its Workload deleted first (a namespace
 * deletion, or a user) and the job a moment later, or a removal that met a conflict just as the job
 * went. So every such Workload is tracked from the informer's events and looked at every
 * {@value #CHECK_SECONDS} seconds until it is gone: when its job is gone or being deleted, the
 * finalizer is removed from the Workload read fresh, retried on conflict. Only the leader writes.
 */
@ApplicationScoped
public class HeldWorkloads {
    private static final Logger LOG = Logger.getLogger(HeldWorkloads.class);
    static final int CHECK_SECONDS = 2;

    @Inject
    KubernetesClient client;

    @Inject
    Leadership leadership;

    /** A tracked Workload: its owners, and how its job kind is found (the controller's cache, then the API). */
    private record Held(String namespace, String name, List<OwnerReference> owners, Function<ResourceID, HasMetadata> cached,
            Class<? extends HasMetadata> jobKind) {
    }

    private final Map<String, Held> held = new ConcurrentHashMap<>();
    /** The last error said per Workload: a lasting one is logged once, not at every check. */
    private final Map<String, String> reported = new ConcurrentHashMap<>();
    private volatile ScheduledExecutorService checks;

    /** From a Workload informer's add and update events; a Workload not being deleted or not held is forgotten. */
    <J extends HasMetadata> void observed(GenericKubernetesResource workload, Function<ResourceID, HasMetadata> cached, Class<J> jobKind) {
        String key = workload.getMetadata().getNamespace() + "/" + workload.getMetadata().getName();
        if (workload.getMetadata().getDeletionTimestamp() == null || !holds(workload)) {
            forget(key);
            return;
        }
        Held entry = new Held(workload.getMetadata().getNamespace(), workload.getMetadata().getName(),
                workload.getMetadata().getOwnerReferences() == null ? List.of() : List.copyOf(workload.getMetadata().getOwnerReferences()),
                cached, jobKind);
        held.put(key, entry);
        // This one at once (off the informer's thread); the others at the next periodic check, not again per event.
        startChecks().execute(() -> check(key, entry));
    }

    /** From a Workload informer's delete event. */
    void gone(GenericKubernetesResource workload) {
        forget(workload.getMetadata().getNamespace() + "/" + workload.getMetadata().getName());
    }

    private void forget(String key) {
        held.remove(key);
        reported.remove(key);
    }

    private ScheduledExecutorService startChecks() {
        if (checks == null) {
            synchronized (this) {
                if (checks == null) {
                    ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(r -> {
                        Thread thread = new Thread(r, "held-workloads");
                        thread.setDaemon(true);
                        return thread;
                    });
                    executor.scheduleWithFixedDelay(this::checkAll, CHECK_SECONDS, CHECK_SECONDS, TimeUnit.SECONDS);
                    checks = executor;
                }
            }
        }
        return checks;
    }

    private void checkAll() {
        held.forEach(this::check);
    }

    private void check(String key, Held workload) {
        if (!leadership.working()) {
            return;
        }
        try {
            if (!jobLives(workload) && release(workload)) {
                held.remove(key, workload);
                reported.remove(key);
            }
        } catch (RuntimeException e) {
            // Looked at again at the next check.
            if (!String.valueOf(e.getMessage()).equals(reported.put(key, String.valueOf(e.getMessage())))) {
                LOG.warnf("could not let go of Workload %s yet (tried again every %d s): %s", key, CHECK_SECONDS, e.getMessage());
            }
        }
    }

    /** The cache first (no request while the job is there), then the API: at start the cache may not be filled yet. */
    private boolean jobLives(Held workload) {
        for (OwnerReference owner : workload.owners()) {
            ResourceID id = new ResourceID(owner.getName(), workload.namespace());
            if (lives(workload.cached().apply(id), owner.getUid())
                    || lives(client.resources(workload.jobKind()).inNamespace(workload.namespace()).withName(owner.getName()).get(), owner.getUid())) {
                return true;
            }
        }
        return false;
    }

    private static boolean lives(HasMetadata job, String uid) {
        return job != null && uid.equals(job.getMetadata().getUid()) && job.getMetadata().getDeletionTimestamp() == null;
    }

    /** Removes Kueue's finalizer from the Workload as it is now; true once it no longer holds it (or is gone). */
    private boolean release(Held workload) {
        for (int attempt = 0; attempt < 3; attempt++) {
            GenericKubernetesResource current = client.genericKubernetesResources(KueueWorkloads.WORKLOADS)
                    .inNamespace(workload.namespace()).withName(workload.name()).get();
            if (current == null || !holds(current)) {
                return true;
            }
            current.getMetadata().getFinalizers().remove(KueueWorkload.FINALIZER);
            try {
                client.genericKubernetesResources(KueueWorkloads.WORKLOADS).inNamespace(workload.namespace()).resource(current).update();
                LOG.debugf("let go of Workload %s/%s: its job is gone", workload.namespace(), workload.name());
                return true;
            } catch (KubernetesClientException e) {
                if (e.getCode() == HttpURLConnection.HTTP_NOT_FOUND) {
                    return true;
                }
                if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                    throw e;
                }
            }
        }
        return false;
    }

    private static boolean holds(GenericKubernetesResource workload) {
        return workload.getMetadata().getFinalizers() != null && workload.getMetadata().getFinalizers().contains(KueueWorkload.FINALIZER);
    }

    @PreDestroy
    void stop() {
        if (checks != null) {
            checks.shutdownNow();
        }
    }
}
