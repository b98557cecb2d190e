package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Clock;
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
import dev.torchjob.operator.engine.Pods;
import dev.torchjob.operator.engine.QueueAdmission;
import dev.torchjob.operator.kueue.JobWithoutQueueName;
import dev.torchjob.operator.kueue.KueueAdmission;
import dev.torchjob.operator.kueue.KueueWorkload;
import dev.torchjob.operator.kueue.ManagedJobsNamespaces;
import dev.torchjob.operator.kueue.OwnerAncestry;
import dev.torchjob.operator.kueue.QueueMembership;
import dev.torchjob.operator.kueue.QueueStanding;
import dev.torchjob.operator.kueue.WorkloadSync;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * The jobs' Workloads in the cluster (Kueue's API, read and written here only): whether Kueue is
 * installed, where a job stands with its queue (its Workload as its controller's informer holds it,
 * {@link WorkloadInformers}), and the changes {@link WorkloadSync} decides; the objects an admission and
 * a new Workload name are read by {@link ResourceFlavors} and {@link WorkloadPriorities}.
 */
@ApplicationScoped
public class KueueWorkloads {
    private static final Logger LOG = Logger.getLogger(KueueWorkloads.class);
    static final ResourceDefinitionContext WORKLOADS = api("workloads", "Workload", true);
    private static final KubernetesSerialization JSON = new KubernetesSerialization();

    @Inject
    @PassClient
    KubernetesClient client;

    @Inject
    Clock clock;

    @Inject
    WorkloadInformers informers;

    @Inject
    JobEventRecorder events;

    @Inject
    KueueNamespaces namespaces;

    @Inject
    KueueOwners owners;

    /** Off (TORCHJOB_KUEUE_ENABLED=false, an install without Kueue's RBAC): Kueue is never looked for. */
    @ConfigProperty(name = "torchjob.kueue.enabled", defaultValue = "true")
    boolean enabled;

    /** As Kueue's labelKeysToCopy: the job's labels its Workload gets too, when it is made (set them alike). */
    @ConfigProperty(name = "torchjob.kueue.label-keys-to-copy")
    Optional<Set<String>> labelKeysToCopy;

    /**
     * As Kueue's objectRetentionPolicies.workloads.afterDeactivatedByKueue: a job Kueue deactivated is
     * deleted this long after, unless reactivated meanwhile (set them alike); none: kept.
     */
    @ConfigProperty(name = "torchjob.kueue.object-retention.after-deactivated-by-kueue")
    Optional<java.time.Duration> afterDeactivatedByKueue;

    private volatile ApiDiscovery discovery;
    /** Jobs whose Workload Kueue's own integration made (Kubeflow kind): that integration runs their queue. */
    private final Set<String> foreign = ConcurrentHashMap.newKeySet();
    /** Per job, the queue label edit last said (QueueMembership), so that each pass does not say it again. */
    private final Map<String, String> told = new ConcurrentHashMap<>();
    // Made at first use, as discovery is: the client is injected after construction. A second one made by a
    // race costs one extra read, nothing else.
    private volatile ResourceFlavors flavors;
    private volatile WorkloadPriorities priorities;

    /**
     * Where a job stands with its queue, the Workload behind it, and what the job's labels ask of the
     * queue: its name and its maximum execution time.
     */
    public record Observed(QueueAdmission admission, Optional<GenericKubernetesResource> workload, Optional<KueueAdmission.State> state,
            Optional<String> queue, Optional<Integer> maxExecutionSeconds) {
        static final Observed NOT_QUEUED = new Observed(QueueAdmission.NOT_QUEUED, Optional.empty(), Optional.empty(), Optional.empty(),
                Optional.empty());

        Observed(QueueAdmission admission, Optional<GenericKubernetesResource> workload, Optional<KueueAdmission.State> state,
                Optional<String> queue) {
            this(admission, workload, state, queue, Optional.empty());
        }

        /** Held until it names a queue, as Kueue holds a job where it manages every one. */
        static Observed held(HasMetadata job) {
            return new Observed(new QueueAdmission.NoQueueName(JobWithoutQueueName.heldMessage(job.getMetadata().getNamespace())),
                    Optional.empty(), Optional.empty(), Optional.empty());
        }

        /** Since when the job has waited: its Workload's creation, or its last requeue after an eviction. */
        public Optional<Instant> waitingSince() {
            return workload.flatMap(KueueAdmission::waitingSince);
        }
    }

    /** How one job kind's Workloads are found: the labels this operator puts on them, and the one naming the job. */
    public record Labels(Map<String, String> ofJob, String selector, String jobNameLabel) {
    }

    static ResourceDefinitionContext api(String plural, String kind, boolean namespaced) {
        return new ResourceDefinitionContext.Builder().withGroup("kueue.x-k8s.io").withVersion("v1beta2").withKind(kind)
                .withPlural(plural).withNamespaced(namespaced).build();
    }

    /**
     * Whether the job may be in a queue: its label names one in a namespace Kueue manages, or it has a
     * Workload of this operator (its label was removed or changed since, or its namespace left out
     * since: it stays where it was taken in); cheap, for every pass of every job. A job that names a
     * queue where Kueue manages no job runs without one, as Kueue's own jobs there; said once. So does a
     * job Kueue queues through an owner it manages (an AppWrapper's): its owner's Workload covers it.
     */
    public <J extends HasMetadata> boolean mayBeQueued(J job, Context<J> context, Optional<String> podsCleanedUp) {
        String uid = job.getMetadata().getUid();
        if (foreign.contains(uid)) {
            told.remove(uid);
            return false;
        }
        // A job with a Workload first: it was taken in, and its namespace is not looked at again.
        if (informers.of(job, context).isPresent()) {
            return true;
        }
        if (enabled) {
            OwnerAncestry ancestry = owners.of(job);
            if (ancestry.ancestor().isPresent()) {
                // Its owner's Workload covers it: a second one would take the quota twice.
                tell(job, Optional.of(Plan.JobEvent.normal(OwnerAncestry.QUEUED_BY_OWNER, ancestry.queuedByOwnerMessage(podsCleanedUp))));
                return false;
            }
        }
        Optional<String> label = KueueWorkload.queueOf(job);
        if (label.isEmpty()) {
            told.remove(uid); // a job that left its queue: nothing of it is left to say
            return false;
        }
        if (namespaces.manages(job.getMetadata().getNamespace())) {
            return true;
        }
        tell(job, Optional.of(Plan.JobEvent.normal(ManagedJobsNamespaces.IGNORED,
                namespaces.selector().ignoredMessage(job.getMetadata().getNamespace(), label.get()))));
        return false;
    }

    /** The job's queue, once {@link #mayBeQueued} said it may be queued. */
    public <J extends HasMetadata> Observed observe(J job, List<KueueWorkload.PodSet> podSets, Labels labels, Context<J> context) {
        Optional<String> label = KueueWorkload.queueOf(job);
        if (label.isEmpty() && (!enabled || !discovery().installed())) {
            return Observed.NOT_QUEUED;
        }
        if (!enabled) {
            return new Observed(new QueueAdmission.Unavailable(label.get(), "this operator's Kueue integration is switched off "
                    + "(TORCHJOB_KUEUE_ENABLED=false, Helm value kueue.enabled): ask the platform team to switch it on, or remove the label "
                    + KueueWorkload.QUEUE_LABEL + " to run the job without a queue."), Optional.empty(), Optional.empty(), label);
        }
        if (!discovery().installed()) {
            return new Observed(new QueueAdmission.Unavailable(label.get(), "Kueue's Workload API (kueue.x-k8s.io/v1beta2) is not "
                    + "installed in this cluster: install Kueue, or remove the label " + KueueWorkload.QUEUE_LABEL
                    + " to run the job without a queue."), Optional.empty(), Optional.empty(), label);
        }
        informers.watch(context, labels);
        String name = KueueWorkload.nameOf(job);
        Optional<GenericKubernetesResource> workload = informers.of(job, context);
        QueueMembership membership = QueueMembership.of(label, workload.map(KueueWorkloads::membershipOf),
                QueueMembership.runsWithoutQueue(Pods.ownedBy(job.getMetadata().getUid(), context.getSecondaryResources(Pod.class)).values()));
        tell(job, membership.event());
        if (membership.queue().isEmpty()) {
            return Observed.NOT_QUEUED;
        }
        Optional<String> queue = membership.queue();
        if (membership.leaving()) {
            return new Observed(QueueStanding.of(queue.get(), name, true, Optional.empty(), workload, Optional.empty(), podSets,
                    afterDeactivatedByKueue), workload, Optional.empty(), queue);
        }
        Optional<Integer> maxExecutionSeconds = Optional.empty();
        Optional<String> invalid = Optional.empty();
        try {
            KueueWorkload.check(job, podSets);
            maxExecutionSeconds = KueueWorkload.maxExecutionSecondsOf(job);
        } catch (KueueWorkload.Invalid e) {
            invalid = Optional.of(e.getMessage());
        }
        Optional<KueueAdmission.State> state;
        try {
            state = workload.map(w -> KueueAdmission.of(w, flavors().namedIn(w)));
        } catch (KueueAdmission.MissingFlavor e) {
            throw new ApplyFailure("FailedAdmission", "Workload " + name, e);
        }
        QueueAdmission admission = QueueStanding.of(queue.get(), name, false, invalid, workload, state, podSets, afterDeactivatedByKueue);
        return new Observed(admission, workload, state, queue, maxExecutionSeconds);
    }

    private static QueueMembership.Workload membershipOf(GenericKubernetesResource workload) {
        return new QueueMembership.Workload(workload.getMetadata().getName(), KueueAdmission.queueOf(workload),
                KueueAdmission.quotaReserved(workload), KueueAdmission.finished(workload));
    }

    /** Says a queue label edit once per job and edit (the event's name makes it once across operator restarts too). */
    private void tell(HasMetadata job, Optional<Plan.JobEvent> event) {
        String uid = job.getMetadata().getUid();
        if (event.isEmpty()) {
            told.remove(uid);
            return;
        }
        String identity = "queue label\n" + event.get().reason() + "\n" + event.get().message();
        if (!identity.equals(told.get(uid))) {
            ApplyFailure.reading(PlanExecutor.EVENT_STEP, "event " + event.get().reason(), () -> {
                events.record(job, event.get(), identity);
                return told.put(uid, identity);
            });
        }
    }

    /**
     * Applies what the Workload must now say; false when Kueue changed it meanwhile (a 409): the job
     * is looked at again soon, and the change is decided anew from what Kueue wrote.
     */
    public <J extends HasMetadata> boolean sync(J job, Observed observed, WorkloadSync.Job now, Labels labels, Instant at) {
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
                workload = step("FailedUpdateWorkloadStatus", target, workload, w -> client.genericKubernetesResources(WORKLOADS)
                        .inNamespace(w.getMetadata().getNamespace()).resource(w).updateStatus());
            }
            if (changes.active() != null || changes.spec() != null || changes.removeFinalizer()) {
                applySpecAndMetadata(workload, changes);
                workload = step("FailedUpdateWorkload", target, workload, w -> client.genericKubernetesResources(WORKLOADS)
                        .inNamespace(w.getMetadata().getNamespace()).resource(w).update());
            }
            if (changes.delete()) {
                step("FailedDeleteWorkload", target, workload, w -> {
                    client.genericKubernetesResources(WORKLOADS).inNamespace(w.getMetadata().getNamespace()).resource(w).delete();
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

    private <J extends HasMetadata> boolean create(J job, String queue, List<KueueWorkload.PodSet> podSets, Labels labels) {
        String name = KueueWorkload.nameOf(job);
        String target = "Workload " + name;
        GenericKubernetesResource workload = KueueWorkload.of(job, queue, podSets, priorities().of(job, podSets), labels.ofJob(),
                labelKeysToCopy.orElse(Set.of()));
        try {
            step("FailedCreateWorkload", target, workload, w -> client.genericKubernetesResources(WORKLOADS)
                    .inNamespace(w.getMetadata().getNamespace()).resource(w).create());
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                throw e;
            }
        }
        // One of that name exists: ours, not yet in the cache, or made by Kueue's own integration for this job.
        GenericKubernetesResource existing = client.genericKubernetesResources(WORKLOADS)
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

    /**
     * The Workload informer of a controller, at its start, when Kueue is installed then: it also lets go
     * of Workloads whose job was deleted while no operator ran. Otherwise it is started by the first
     * queued job that needs it.
     */
    public <J extends HasMetadata> List<InformerEventSource<GenericKubernetesResource, J>> atStart(EventSourceContext<J> context,
            String controller, Labels labels) {
        if (!enabled || !discovery().installed()) {
            return List.of();
        }
        return List.of(informers.atStart(context, controller, labels));
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

    private ResourceFlavors flavors() {
        if (flavors == null) {
            flavors = new ResourceFlavors(client, clock);
        }
        return flavors;
    }

    private WorkloadPriorities priorities() {
        if (priorities == null) {
            priorities = new WorkloadPriorities(client);
        }
        return priorities;
    }

    private ApiDiscovery discovery() {
        if (discovery == null) {
            discovery = new ApiDiscovery(client, clock, WORKLOADS);
        }
        return discovery;
    }
}
