package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.processing.event.ResourceID;

/**
 * How a job's status reaches the API server: by server-side apply of the status alone, or whole by
 * update, and the written job handed to JOSDK's cache so the next pass never plans from an older status.
 * Only this operator writes the status (leader election), so neither takes a version lock of its own.
 */
@ApplicationScoped
public class JobStatusWrites {
    private static final Logger LOG = Logger.getLogger(JobStatusWrites.class);
    /** A status update that meets 409 is tried again this many times on the server's own version of the job. */
    static final int CONFLICT_RETRIES = 3;

    @Inject
    @PassClient
    KubernetesClient client;

    /**
     * Status written by server-side apply (as JOSDK operators do by default), or by update with
     * optimistic locking where the API server has no SSA (the mock server of the tests and the local mode).
     */
    @ConfigProperty(name = "torchjob.server-side-apply", defaultValue = "true")
    boolean serverSideApply;

    /** Writes the job's status and caches the written job. */
    public <S, J extends CustomResource<?, S>> void write(J job, S status, Context<J> context) {
        if (serverSideApply && !statusWrittenByOthers(job, context.getControllerConfiguration().fieldManager())) {
            // Only the status, under our field manager: a user's apply of the spec never conflicts with it.
            J applied = emptyLike(job);
            applied.setMetadata(new ObjectMetaBuilder().withName(job.getMetadata().getName())
                    .withNamespace(job.getMetadata().getNamespace()).build());
            applied.setSpec(null);
            applied.setStatus(status);
            // Not PrimaryUpdateAndCacheUtils.ssaPatchStatusAndCacheResource: it pins the apply to the job's
            // resourceVersion and, on 409 or 422, polls the cache for a newer job for 10 s and tries again, so a
            // status the API server refuses for good (a policy's 422) cost 10 s a try and was reported as
            // "Timeout of resource polling from cache" instead of the server's words. Only this operator writes
            // the status (leader election), so the apply needs no version lock; the written job is cached the
            // same way, so the next pass never plans from an older status.
            J written;
            try {
                written = client.resource(applied).subresource("status").patch(new PatchContext.Builder()
                        .withPatchType(PatchType.SERVER_SIDE_APPLY).withForce(true)
                        .withFieldManager(context.getControllerConfiguration().fieldManager()).build());
            } catch (KubernetesClientException e) {
                if (e.getCode() != HttpURLConnection.HTTP_INTERNAL_ERROR) {
                    throw e;
                }
                // An apply needs the stored job typed by the CRD's schema: one stored under a looser CRD (a
                // string where the schema now says integer) cannot be, and every apply to it fails with 500.
                // An update never needs that (its field tracking starts over), so such a job's status is still
                // written: the InvalidSpec that says what is wrong with it.
                LOG.debugf("%s %s/%s: status apply refused (%s); written by update", job.getKind(), job.getMetadata().getNamespace(),
                        job.getMetadata().getName(), ApplyFailure.serverMessage(e));
                update(job, status, context);
                return;
            }
            context.eventSourceRetriever().getControllerEventSource()
                    .handleRecentResourceUpdate(ResourceID.fromResource(job), written, job);
        } else {
            update(job, status, context);
        }
    }

    private <S, J extends CustomResource<?, S>> void update(J job, S status, Context<J> context) {
        // A whole status, by update. As with the apply, the status is this operator's alone: the lock is only
        // what the API server demands of an update, so the newest version the cache holds is named (this
        // pass's own earlier write too: a pass that clears an error writes twice). Written from a copy: neither
        // the cached job nor the pass's may carry a status that was never written (an error reported on it
        // would count a restart whose event was never sent).
        J newest = context.getPrimaryCache().get(ResourceID.fromResource(job)).orElse(job);
        J written = null;
        for (int attempt = 0; written == null; attempt++) {
            J replaced = copyOf(newest, context);
            replaced.setStatus(status);
            try {
                written = client.resource(replaced).updateStatus();
            } catch (KubernetesClientException e) {
                // A 409: someone else changed the job (its labels, its spec) since the cache saw it. Someone who
                // edits it without pause keeps the cache behind for good, so the server's own version is named
                // next, read just before; past a few, the pass runs again later (JobReconciler).
                if (e.getCode() != HttpURLConnection.HTTP_CONFLICT || attempt == CONFLICT_RETRIES) {
                    throw e;
                }
                newest = client.resource(job).get();
                if (newest == null) {
                    throw e;
                }
            }
        }
        context.eventSourceRetriever().getControllerEventSource()
                .handleRecentResourceUpdate(ResourceID.fromResource(job), written, newest);
    }

    /**
     * Whether another field manager wrote the job's status (a controller that ran it before, such as
     * Kubeflow's training-operator before a take-over): an apply of ours never removes fields another
     * manager owns, so such a job's status is written whole (replaced by an update) and
     * carries only what this operator computes.
     */
    static boolean statusWrittenByOthers(HasMetadata job, String fieldManager) {
        return job.getMetadata().getManagedFields() != null && job.getMetadata().getManagedFields().stream()
                .anyMatch(f -> "status".equals(f.getSubresource()) && !fieldManager.equals(f.getManager()));
    }

    /** A deep copy of the job, made the way JOSDK copies resources. */
    static <J extends CustomResource<?, ?>> J copyOf(J job, Context<J> context) {
        return context.getControllerConfiguration().getConfigurationService().getResourceCloner().clone(job);
    }

    /** A new object of the job's kind with nothing set: what a server-side apply of the status sends. */
    @SuppressWarnings("unchecked")
    private static <J extends CustomResource<?, ?>> J emptyLike(J job) {
        try {
            return (J) job.getClass().getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("job kind " + job.getClass() + " has no public no-argument constructor", e);
        }
    }
}
