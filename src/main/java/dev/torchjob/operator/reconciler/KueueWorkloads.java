package dev.torchjob.operator.reconciler;

import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;

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
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;

/**
 * The jobs' Workloads in the cluster, read (Kueue's API): whether Kueue is installed, and where a job
 * stands with its queue (its Workload as its controller's informer holds it, {@link WorkloadInformers});
 * the flavors an admission names are read by {@link ResourceFlavors}. The changes {@link WorkloadSync}
 * decides are written by {@link WorkloadWrites}.
 */
@ApplicationScoped
public class KueueWorkloads {
    static final ResourceDefinitionContext WORKLOADS = api("workloads", "Workload", true);

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

    @Inject
    WorkloadWrites writes;

    /** Off (TORCHJOB_KUEUE_ENABLED=false, an install without Kueue's RBAC): Kueue is never looked for. */
    @ConfigProperty(name = "torchjob.kueue.enabled", defaultValue = "true")
    boolean enabled;

    /**
     * As Kueue's objectRetentionPolicies.workloads.afterDeactivatedByKueue: a job Kueue deactivated is
     * deleted this long after, unless reactivated meanwhile (set them alike); none: kept.
     */
    @ConfigProperty(name = "torchjob.kueue.object-retention.after-deactivated-by-kueue")
    Optional<java.time.Duration> afterDeactivatedByKueue;

    private volatile ApiDiscovery discovery;
    /** Per job, the queue label edit last said (QueueMembership), so that each pass does not say it again. */
    private final Map<String, String> told = new ConcurrentHashMap<>();
    // Made at first use, as discovery is: the client is injected after construction. A second one made by a
    // race costs one extra read, nothing else.
    private volatile ResourceFlavors flavors;

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
        if (writes.madeByKueue(job)) {
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

    private ResourceFlavors flavors() {
        if (flavors == null) {
            flavors = new ResourceFlavors(client, clock);
        }
        return flavors;
    }

    private ApiDiscovery discovery() {
        if (discovery == null) {
            discovery = new ApiDiscovery(client, clock, WORKLOADS);
        }
        return discovery;
    }
}
