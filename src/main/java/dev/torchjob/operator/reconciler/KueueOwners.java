package dev.torchjob.operator.reconciler;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;

import dev.torchjob.operator.kueue.KueueIntegrations;
import dev.torchjob.operator.kueue.OwnerAncestry;
import io.fabric8.kubernetes.api.Pluralize;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;

/**
 * Whether Kueue queues a job through one of its owners ({@link OwnerAncestry} decides; here the owners
 * are read). Only a job with a controller owner of a kind Kueue knows costs reads (an AppWrapper's
 * PyTorchJob, say), once: what its owners make of it is kept for the job's life.
 */
@ApplicationScoped
public class KueueOwners {
    /** The step a refused or unfinished read of the owners is said as. */
    static final String STEP = "FailedReadOwner";
    /** Jobs whose owners were walked, at most so many kept (the oldest forgotten, then read again if looked at). */
    private static final int KEPT = 10_000;

    @Inject
    @PassClient
    KubernetesClient client;

    /** As Kueue's integrations.frameworks and externalFrameworks (set them alike): the kinds it manages. */
    @ConfigProperty(name = "torchjob.kueue.integrations", defaultValue = KueueIntegrations.KUEUE_DEFAULT)
    List<String> frameworks;

    @ConfigProperty(name = "torchjob.kueue.manage-jobs-without-queue-name", defaultValue = "false")
    boolean everyJobQueued;

    private volatile KueueIntegrations integrations;
    private final Map<String, OwnerAncestry> walked = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, OwnerAncestry> eldest) {
            return size() > KEPT;
        }
    });

    /**
     * What Kueue makes of the job's owners.
     *
     * @throws ApplyFailure when an owner cannot be read (the job says so and waits), or the setting is bad
     */
    public OwnerAncestry of(HasMetadata job) {
        Optional<OwnerAncestry.Reference> controller = job.getMetadata().getOwnerReferences() == null ? Optional.empty()
                : job.getMetadata().getOwnerReferences().stream().filter(r -> Boolean.TRUE.equals(r.getController())).findFirst()
                        .map(KueueOwners::reference);
        if (controller.isEmpty()) {
            return OwnerAncestry.NONE;
        }
        String uid = job.getMetadata().getUid();
        OwnerAncestry known = walked.get(uid);
        if (known != null) {
            return known;
        }
        String namespace = job.getMetadata().getNamespace();
        try {
            OwnerAncestry ancestry = OwnerAncestry.of(controller, reference -> read(namespace, reference), integrations(), everyJobQueued);
            walked.put(uid, ancestry);
            return ancestry;
        } catch (OwnerAncestry.Unresolved e) {
            throw new ApplyFailure(STEP, "the job's owners (Kueue queues a job through an owner it manages)", e);
        }
    }

    private Optional<OwnerAncestry.Owner> read(String namespace, OwnerAncestry.Reference reference) {
        GenericKubernetesResource owner = ApplyFailure.reading(STEP, reference + " (" + reference.apiVersion() + "), the job's owner",
                () -> client.genericKubernetesResources(api(reference)).inNamespace(namespace).withName(reference.name()).get());
        if (owner == null) {
            return Optional.empty();
        }
        Map<String, String> labels = owner.getMetadata().getLabels() == null ? Map.of() : owner.getMetadata().getLabels();
        Map<String, String> annotations = owner.getMetadata().getAnnotations() == null ? Map.of() : owner.getMetadata().getAnnotations();
        Optional<OwnerAncestry.Reference> controller = owner.getMetadata().getOwnerReferences() == null ? Optional.empty()
                : owner.getMetadata().getOwnerReferences().stream().filter(r -> Boolean.TRUE.equals(r.getController())).findFirst()
                        .map(KueueOwners::reference);
        return Optional.of(new OwnerAncestry.Owner(reference, owner.getMetadata().getUid(), labels, annotations, controller));
    }

    /** The owner's resource, its plural as Kubernetes forms it (no discovery call: an owner's kind is read once). */
    private static ResourceDefinitionContext api(OwnerAncestry.Reference reference) {
        int slash = reference.apiVersion().indexOf('/');
        return new ResourceDefinitionContext.Builder().withGroup(slash < 0 ? "" : reference.apiVersion().substring(0, slash))
                .withVersion(reference.apiVersion().substring(slash + 1)).withKind(reference.kind())
                .withPlural(Pluralize.toPlural(reference.kind().toLowerCase(Locale.ROOT))).withNamespaced(true).build();
    }

    private static OwnerAncestry.Reference reference(OwnerReference owner) {
        return new OwnerAncestry.Reference(owner.getApiVersion(), owner.getKind(), owner.getName(), owner.getUid());
    }

    private KueueIntegrations integrations() {
        if (integrations == null) {
            try {
                integrations = KueueIntegrations.parse(frameworks);
            } catch (KueueIntegrations.Invalid e) {
                throw new ApplyFailure(KueueNamespaces.INVALID, "the operator's setting", e);
            }
        }
        return integrations;
    }
}
