package dev.torchjob.operator.reconciler;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import dev.torchjob.operator.kueue.ManagedJobsNamespaces;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

/**
 * Whether Kueue manages the jobs of a namespace, as its {@code managedJobsNamespaceSelector} says
 * (set alike here; {@link ManagedJobsNamespaces} decides). A selector of namespace names alone (Kueue's
 * default) reads nothing; one of other labels reads them from an informer on the cluster's namespaces,
 * started when a job first needs it (so an operator that never meets such a selector never watches
 * namespaces). A namespace relabelled into or out of the selector is told to those who asked
 * ({@link #whenRelabelled}): it changes what becomes of jobs not yet started, never of running ones.
 */
@ApplicationScoped
public class KueueNamespaces {
    private static final Logger LOG = Logger.getLogger(KueueNamespaces.class);
    /** The step a bad setting is said as, on each job that needs it. */
    static final String INVALID = "InvalidKueueSetting";
    /** The step a refused watch of the namespaces is said as (the ClusterRole lacks them). */
    static final String WATCH = "FailedWatchNamespaces";
    /** How long a pass waits for the namespaces' first list. */
    static final Duration FIRST_LIST = Duration.ofSeconds(20);

    /** The informer's client: its own retries, nothing waits on them but the first list. */
    @Inject
    KubernetesClient client;

    @Inject
    @PassClient
    KubernetesClient passClient;

    /** As Kueue's managedJobsNamespaceSelector (set them alike): the namespaces whose jobs Kueue manages. */
    @ConfigProperty(name = "torchjob.kueue.managed-jobs-namespace-selector", defaultValue = ManagedJobsNamespaces.KUEUE_DEFAULT)
    String selector;

    /** Namespaces never managed, whatever the selector says (the setting that came first; kept for those who set it). */
    @ConfigProperty(name = "torchjob.kueue.unmanaged-namespaces")
    Optional<Set<String>> leftOut;

    private volatile ManagedJobsNamespaces namespaces;
    private volatile SharedIndexInformer<GenericKubernetesResource> informer;
    private final List<Consumer<String>> relabelled = new CopyOnWriteArrayList<>();

    /** Tells {@code listener} the name of each namespace a relabel took into, or out of, those Kueue manages. */
    public void whenRelabelled(Consumer<String> listener) {
        relabelled.add(listener);
    }

    /**
     * The namespaces Kueue manages, as set.
     *
     * @throws ApplyFailure when the setting is not a label selector: the job says so and waits
     */
    public ManagedJobsNamespaces selector() {
        if (namespaces == null) {
            try {
                namespaces = ManagedJobsNamespaces.parse(selector, leftOut.orElse(Set.of()));
            } catch (ManagedJobsNamespaces.Invalid e) {
                throw new ApplyFailure(INVALID, "the operator's setting", e);
            }
        }
        return namespaces;
    }

    /** Whether Kueue manages the jobs of this namespace. */
    public boolean manages(String namespace) {
        ManagedJobsNamespaces managed = selector();
        if (!managed.needsLabels()) {
            return managed.manages(namespace, Map.of());
        }
        GenericKubernetesResource read = informer().getStore().getByKey(namespace);
        if (read == null) {
            // Made a moment ago, its event not here yet (a namespace and its first job applied together): read it.
            read = ApplyFailure.reading(WATCH, "namespace " + namespace, () -> passClient.genericKubernetesResources("v1", "Namespace")
                    .withName(namespace).get());
        }
        return managed.manages(namespace, labels(read));
    }

    private SharedIndexInformer<GenericKubernetesResource> informer() {
        if (informer != null) {
            return informer;
        }
        synchronized (this) {
            if (informer == null) {
                SharedIndexInformer<GenericKubernetesResource> started = client.genericKubernetesResources("v1", "Namespace")
                        .runnableInformer(0);
                started.addEventHandler(new Relabels());
                String target = "namespaces (their labels decide which Kueue manages; the operator's ClusterRole needs get, list "
                        + "and watch on them)";
                try {
                    // The first list: the job's namespace is in it. Bounded, as a pass's call is.
                    started.start().toCompletableFuture().get(FIRST_LIST.toSeconds(), TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    started.stop();
                    Thread.currentThread().interrupt();
                    throw new ApplyFailure(WATCH, target, new RuntimeException("interrupted", e));
                } catch (TimeoutException e) {
                    started.stop();
                    throw new ApplyFailure(WATCH, target, new RuntimeException("no answer within " + FIRST_LIST.toSeconds() + " s", e));
                } catch (ExecutionException e) {
                    started.stop();
                    throw new ApplyFailure(WATCH, target, e.getCause() instanceof RuntimeException r ? r : new RuntimeException(e.getCause()));
                }
                LOG.infof("watching namespaces: Kueue manages the jobs of those that match %s", selector().describe());
                informer = started;
            }
            return informer;
        }
    }

    /** Namespaces relabelled: those whose jobs Kueue now manages, or no longer does, are told on. */
    private final class Relabels implements ResourceEventHandler<GenericKubernetesResource> {
        @Override
        public void onAdd(GenericKubernetesResource namespace) {
            // Its jobs are not looked at before it is here (a job's pass reads a namespace not yet in the store).
        }

        @Override
        public void onUpdate(GenericKubernetesResource before, GenericKubernetesResource now) {
            String name = now.getMetadata().getName();
            if (selector().relabelMatters(name, labels(before), labels(now))) {
                LOG.infof("namespace %s relabelled: Kueue %s its jobs", name,
                        selector().manages(name, labels(now)) ? "now manages" : "no longer manages");
                relabelled.forEach(listener -> listener.accept(name));
            }
        }

        @Override
        public void onDelete(GenericKubernetesResource namespace, boolean finalStateUnknown) {
            // Its jobs go with it.
        }
    }

    private static Map<String, String> labels(GenericKubernetesResource namespace) {
        return namespace == null || namespace.getMetadata().getLabels() == null ? Map.of() : namespace.getMetadata().getLabels();
    }

    @PreDestroy
    void stop() {
        if (informer != null) {
            informer.stop();
        }
    }
}
