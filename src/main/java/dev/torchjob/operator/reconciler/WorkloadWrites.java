package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.kueue.WorkloadSync;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * A job's Workload written as {@link WorkloadSync} decides: made (with the priority Kueue would give it),
 * its status, activation and spec updated, released, deleted. Where {@link KueueWorkloads} reads where a
 * job stands with its queue, this is the one place that writes Kueue's API for a job.
 */
@ApplicationScoped
public class WorkloadWrites {
    private static final Logger LOG = Logger.getLogger(WorkloadWrites.class);
    private static final KubernetesSerialization JSON = new KubernetesSerialization();

    @Inject
    @PassClient
    KubernetesClient client;

    @Inject
    JobEventRecorder events;

    /** As Kueue's labelKeysToCopy: the job's labels its Workload gets too, when it is made (set them alike). */
    @ConfigProperty(name = "torchjob.kueue.label-keys-to-copy")
    Optional<Set<String>> labelKeysToCopy;

    /** Jobs whose Workload Kueue's own integration made (Kubeflow kind): that integration runs their queue. */
    private final Set<String> foreign = ConcurrentHashMap.newKeySet();
    // Made at first use: the client is injected after construction. A second one made by a race costs nothing.
    private volatile WorkloadPriorities priorities;

    /** Whether Kueue's own integration made the job's Workload, when this operator came to make it: it runs the job's queue. */
    boolean madeByKueue(HasMetadata job) {
        return foreign.contains(job.getMetadata().getUid());
    }

    /**
     * Applies what the Workload must now say; false when Kueue changed it meanwhile (a 409): the job
     * is looked at again soon, and the change is decided anew from what Kueue wrote.
     */
    public <J extends HasMetadata> boolean sync(J job, KueueWorkloads.Observed observed, WorkloadSync.Job now, KueueWorkloads.Labels labels,
            Instant at) {
        if (observed.queue().isEmpty() || observed.admission() instanceof QueueAdmission.Unavailable
                || observed.admission() instanceof QueueAdmission.Invalid) {
            return true;
        }
        WorkloadSync.Changes changes = WorkloadSync.of(now, observed.workload(), observed.state(), at);
        if (!changes.any()) {
            return true;
        }
        String target = "Workload " + KueueWorkload.nameOf(job);
        try {
            if (changes.create()) {
                return create(job, observed.queue().get(), now.podSets(), labels);
            }
            GenericKubernetesResource workload = JSON.clone(observed.workload().orElseThrow());
            if (changes.status() != null) {
                workload.setAdditionalProperty("status", changes.status());
                workload = step("FailedUpdateWorkloadStatus", target, workload, w -> client.genericKubernetesResources(KueueWorkloads.WORKLOADS)
                        .inNamespace(w.getMetadata().getNamespace()).resource(w).updateStatus());
            }
            if (changes.active() != null || changes.spec() != null || changes.removeFinalizer()) {
                applySpecAndMetadata(workload, changes);
                workload = step("FailedUpdateWorkload", target, workload, w -> client.genericKubernetesResources(KueueWorkloads.WORKLOADS)
                        .inNamespace(w.getMetadata().getNamespace()).resource(w).update());
            }
            if (changes.delete()) {
                step("FailedDeleteWorkload", target, workload, w -> {
                    client.genericKubernetesResources(KueueWorkloads.WORKLOADS).inNamespace(w.getMetadata().getNamespace()).resource(w).delete();
                    return w;
                });
            }
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() == HttpURLConnection.HTTP_CONFLICT) {
                LOG.debugf("%s changed meanwhile; looking again", target);
                return false;
            }
            throw e;
        }
    }

    private static void applySpecAndMetadata(GenericKubernetesResource workload, WorkloadSync.Changes changes) {
        @SuppressWarnings("unchecked")
        Map<String, Object> spec = (Map<String, Object>) workload.getAdditionalProperties().get("spec");
        if (changes.active() != null) {
            spec.put("active", changes.active());
            Map<String, String> annotations = new LinkedHashMap<>(
                    workload.getMetadata().getAnnotations() == null ? Map.of() : workload.getMetadata().getAnnotations());
            if (changes.active()) {
                annotations.remove(WorkloadSync.PAUSED_ANNOTATION);
            } else {
                annotations.put(WorkloadSync.PAUSED_ANNOTATION, "true");
            }
            workload.getMetadata().setAnnotations(annotations);
        }
        if (changes.spec() != null) {
            changes.spec().forEach((field, value) -> {
                if (value == null) {
                    spec.remove(field);
                } else {
                    spec.put(field, value);
                }
            });
        }
        if (changes.removeFinalizer()) {
            workload.getMetadata().getFinalizers().remove(KueueWorkload.FINALIZER);
        }
    }

    private <J extends HasMetadata> boolean create(J job, String queue, List<KueueWorkload.PodSet> podSets,
            KueueWorkloads.Labels labels) {
        String name = KueueWorkload.nameOf(job);
        String target = "Workload " + name;
        GenericKubernetesResource workload = KueueWorkload.of(job, queue, podSets, priorities().of(job, podSets), labels.ofJob(),
                labelKeysToCopy.orElse(Set.of()));
        try {
            step("FailedCreateWorkload", target, workload, w -> client.genericKubernetesResources(KueueWorkloads.WORKLOADS)
                    .inNamespace(w.getMetadata().getNamespace()).resource(w).create());
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                throw e;
            }
        }
        // One of that name exists: ours, not yet in the cache, or made by Kueue's own integration for this job.
        GenericKubernetesResource existing = client.genericKubernetesResources(KueueWorkloads.WORKLOADS)
                .inNamespace(job.getMetadata().getNamespace()).withName(name).get();
        boolean ours = existing != null && existing.getMetadata().getLabels() != null
                && existing.getMetadata().getLabels().keySet().containsAll(labels.ofJob().keySet());
        boolean forThisJob = existing != null && existing.getMetadata().getOwnerReferences() != null && existing.getMetadata()
                .getOwnerReferences().stream().anyMatch(o -> job.getMetadata().getUid().equals(o.getUid()));
        if (existing != null && !ours && forThisJob) {
            LOG.infof("%s %s/%s: its Workload %s was made by Kueue's own integration, which runs its queue", job.getKind(),
                    job.getMetadata().getNamespace(), job.getMetadata().getName(), name);
            if (!foreign.contains(job.getMetadata().getUid())) {
                ApplyFailure.reading(PlanExecutor.EVENT_STEP, "event WorkloadNotOurs", () -> {
                    events.record(job, Plan.JobEvent.warning("WorkloadNotOurs", "Workload " + name + " was made by Kueue's own "
                            + "integration for this kind, not by this operator: Kueue queues the job through its suspend field. With that "
                            + "integration on, leave the kind out of Kueue's externalFrameworks (docs/kueue.md)."), "not ours\n" + name);
                    return foreign.add(job.getMetadata().getUid());
                });
            }
        }
        return false;
    }

    private interface Call {
        GenericKubernetesResource run(GenericKubernetesResource workload);
    }

    /** A call to Kueue's API; a conflict is returned to the caller (Kueue wrote first), anything else says which step failed. */
    private static GenericKubernetesResource step(String reason, String target, GenericKubernetesResource workload, Call call) {
        try {
            return call.run(workload);
        } catch (KubernetesClientException e) {
            if (e.getCode() == HttpURLConnection.HTTP_CONFLICT) {
                throw e;
            }
            throw new ApplyFailure(reason, target, e);
        } catch (RuntimeException e) {
            throw new ApplyFailure(reason, target, e);
        }
    }

    private WorkloadPriorities priorities() {
        if (priorities == null) {
            priorities = new WorkloadPriorities(client);
        }
        return priorities;
    }
}
