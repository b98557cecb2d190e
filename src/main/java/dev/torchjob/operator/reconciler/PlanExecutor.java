package dev.torchjob.operator.reconciler;

import java.net.HttpURLConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import dev.torchjob.operator.metrics.JobMetrics;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.Pods;
import dev.torchjob.operator.engine.Plan.JobEvent;
import dev.torchjob.operator.engine.Plan.PodDeletion;
import io.fabric8.kubernetes.client.dsl.Resource;
import io.fabric8.kubernetes.api.model.DeletionPropagation;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.dependent.RecentOperationCacheFiller;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.infrastructure.Infrastructure;

/**
 * Applies a plan, for any job kind, to the API server in the order that keeps restarts counted and said exactly once:
 * the events (named by what they report, so a repeat is refused), then the status (it records which pod
 * UIDs were counted), then the deletes, then creates (the PodGroup, then the first pod, then the Services
 * with the other pods).
 */
@ApplicationScoped
public class PlanExecutor {
    private static final Logger LOG = Logger.getLogger(PlanExecutor.class);
    private static final Duration API_TIMEOUT = Duration.ofSeconds(60);
    /** The reason of a failed status write: the first step, so nothing of the plan was applied. */
    static final String STATUS_STEP = "FailedStatusUpdate";
    /** The reason of a failed event: it comes before the status, so nothing of the plan was applied either. */
    static final String EVENT_STEP = "FailedCreateEvent";
    /** The most API calls one job has in flight: creates, or deletes with the events. */
    static final int MAX_CALLS_AT_ONCE = 32;

    @Inject
    @PassClient
    KubernetesClient client;

    @Inject
    JobEventRecorder events;

    @Inject
    PodGroupApi podGroups;

    @Inject
    JobMetrics metrics;

    @Inject
    CreatedPods createdPods;

    @Inject
    JobStatusWrites statusWrites;

    /** Whether the API server does server-side apply (the status's setting, {@link JobStatusWrites}): PodGroups are applied too. */
    @ConfigProperty(name = "torchjob.server-side-apply", defaultValue = "true")
    boolean serverSideApply;

    /**
     * Applies the plan, in this order: its events, the status that records them, the deletes and applies, then
     * (unless the job itself goes) the creates, and last the sidecars to stop.
     */
    public <S, J extends CustomResource<?, S>> void apply(J job, Plan<S> plan, Context<J> context) {
        say(job, plan);
        if (plan.statusChanged()) {
            writeStatus(job, plan.status(), context);
            metrics.statusWritten(job, plan); // counted once: when the transition is written
        } else {
            metrics.observe(job, plan.after());
        }
        deleteAndApply(job, plan, context);
        if (plan.deleteJob()) {
            // Its time to live is over: the garbage collector takes its pods and Services with it.
            step("FailedDeleteJob", job.getKind() + " " + job.getMetadata().getName(),
                    () -> client.resource(job).withPropagationPolicy(DeletionPropagation.BACKGROUND).delete());
            return;
        }
        create(job, plan, context);
        // Last: a refused stop (said like any refused step) holds nothing else of the pass back.
        String namespace = job.getMetadata().getNamespace();
        inParallel(plan.sidecarsToStop().stream().map(stop -> call(
                () -> step("FailedStopSidecars", "pod " + stop.name(), () -> stopSidecars(namespace, stop)))).toList());
    }

    /**
     * The events first, one after another in the plan's order (the cause before the outcome: readers that order by
     * creation show them as decided), then the status that records what they report. A pass cut in between (a
     * refused call, an operator killed) leaves the status as it was: the next pass decides the same again, names
     * each event the same, and the API server keeps the first.
     */
    private <J extends HasMetadata> void say(J job, Plan<?> plan) {
        Map<String, Integer> saidOfReason = new HashMap<>();
        for (JobEvent event : plan.events()) {
            String identity = event.subject() != null ? event.subject() : "#" + saidOfReason.merge(event.reason(), 1, Integer::sum);
            step(EVENT_STEP, "event " + event.reason(), () -> events.record(job, event,
                    transition(plan) + "\n" + event.reason() + "\n" + identity));
        }
    }

    /**
     * Pods, Services and other objects deleted, and objects applied (a PodGroup), in parallel: every call is awaited
     * before any failure is rethrown.
     */
    private <J extends HasMetadata> void deleteAndApply(J job, Plan<?> plan, Context<?> context) {
        String namespace = job.getMetadata().getNamespace();
        List<Uni<Void>> deletesAndApplies = new ArrayList<>();
        plan.podsToDelete().forEach(deletion -> deletesAndApplies.add(call(
                () -> step("FailedDeletePod", "pod " + deletion.name(), () -> delete(namespace, deletion)))));
        plan.servicesToDelete().forEach(service -> deletesAndApplies.add(call(
                () -> step("FailedDeleteService", "Service " + service, () -> deleteService(namespace, service)))));
        plan.objectsToDelete().forEach(object -> deletesAndApplies.add(call(() -> step("FailedDelete" + object.getKind(),
                object.getKind() + " " + object.getMetadata().getName(), () -> client.resource(object).delete()))));
        String fieldManager = context.getControllerConfiguration().fieldManager();
        plan.objectsToApply().forEach(object -> deletesAndApplies.add(call(() -> step("FailedApply" + object.getKind(),
                object.getKind() + " " + object.getMetadata().getName(), () -> {
                    if (serverSideApply && object instanceof GenericKubernetesResource) {
                        // A gang scheduler's PodGroup: Volcano's has no status subresource, so only the fields set here
                        // are applied, never a whole object that would wipe the status the scheduler wrote.
                        client.resource(object).fieldManager(fieldManager).forceConflicts().serverSideApply();
                    } else {
                        client.resource(object).createOr(NonDeletingOperation::update);
                    }
                }))));
        inParallel(deletesAndApplies);
    }

    /**
     * The PodGroup first (the gang scheduler needs it before it sees a pod), then the first pod alone, then the Services
     * (they only name the pods) with the other pods; only the pods this pass did create are reported.
     */
    private <S, J extends CustomResource<?, S>> void create(J job, Plan<S> plan, Context<J> context) {
        String namespace = job.getMetadata().getNamespace();
        plan.podGroupToCreate().ifPresent(podGroup -> step("FailedCreatePodGroup", "PodGroup " + podGroup.getMetadata().getName(),
                () -> createIgnoringExisting(() -> podGroups.create(podGroup))));
        List<Uni<Void>> serviceCreates = plan.servicesToCreate().stream().map(service -> call(() -> step("FailedCreateService",
                "Service " + service.getMetadata().getName(), () -> createIgnoringExisting(
                        () -> seenByNextPass(job, context, Service.class, client.services().resource(service).create()))))).toList();
        Set<String> created = ConcurrentHashMap.newKeySet();
        List<Uni<Void>> podCreates = plan.podsToCreate().stream().map(pod -> call(() -> step("FailedCreatePod",
                "pod " + pod.getMetadata().getName(), () -> {
                    if (createIgnoringExisting(() -> {
                        Pod made = client.pods().resource(pod).create();
                        createdPods.created(ResourceID.fromResource(job), made);
                        seenByNextPass(job, context, Pod.class, made);
                    })) {
                        created.add(pod.getMetadata().getName());
                    } else {
                        refuseIfSomeoneElses(job, pod);
                    }
                }))).toList();
        try {
            // The first pod alone, then the Services (they name the pods) with the other pods: a job whose
            // pods the API server refuses costs one call and leaves nothing behind; a valid job's Services
            // exist milliseconds after its first pod, long before any of its pods can run.
            List<Uni<Void>> creates = new ArrayList<>(podCreates.stream().limit(1).toList());
            creates.addAll(serviceCreates);
            creates.addAll(podCreates.stream().skip(1).toList());
            inSlowStartBatches(creates);
        } finally {
            // Only the pods this pass did create are reported: not those refused, nor those that existed.
            // Said by the pass that created them, or by none: a pass after it finds the pods there.
            List<String> names = plan.podsToCreate().stream().map(p -> p.getMetadata().getName()).filter(created::contains).toList();
            plan.podsCreated().filter(report -> !names.isEmpty()).ifPresent(report -> {
                try {
                    events.record(job, report.event(names), transition(plan) + "\ncreated " + names);
                } catch (KubernetesClientException e) {
                    LOG.warnf("could not record event PodsCreated on %s %s/%s: %s", job.getKind(), namespace,
                            job.getMetadata().getName(), ApplyFailure.serverMessage(e));
                }
            });
        }
    }

    /**
     * The state a plan starts from, as it is stored: the same until the plan's status is written, so a
     * pass that repeats an interrupted one gives its events the same identities, and a later pass that
     * says the same words of another state (a second pause) gives new ones.
     */
    private static String transition(Plan<?> plan) {
        return "from " + plan.before();
    }

    /**
     * Creates in batches of 1, 2, 4, … up to {@link #MAX_CALLS_AT_ONCE}; a batch with a refusal ends
     * the pass. So a job whose pods the API server refuses costs one refused call per pass, not one per
     * replica, and no job holds more than a bounded share of the client while others wait (the
     * Kubernetes Job controller creates pods the same way).
     */
    private static void inSlowStartBatches(List<Uni<Void>> creates) {
        int next = 0;
        int batch = 1;
        while (next < creates.size()) {
            int end = Math.min(creates.size(), next + batch);
            inParallel(creates.subList(next, end));
            next = end;
            batch = Math.min(batch * 2, MAX_CALLS_AT_ONCE);
        }
    }

    /** Runs one step; a refusal by the API server says which step and on what. */
    private static void step(String reason, String target, Runnable apiCall) {
        try {
            apiCall.run();
        } catch (ApplyFailure e) {
            throw e;
        } catch (RuntimeException e) {
            throw new ApplyFailure(reason, target, e);
        }
    }

    private static Uni<Void> call(Runnable apiCall) {
        return Uni.createFrom().item(() -> {
            apiCall.run();
            return null;
        });
    }

    /** Whether the plan's status was written before the step that failed (it comes after the events). */
    static boolean statusWrittenBefore(ApplyFailure failure) {
        return !STATUS_STEP.equals(failure.reason()) && !EVENT_STEP.equals(failure.reason());
    }

    /** Writes the status and caches the written resource, so the next pass never plans from an older status. */
    public <S, J extends CustomResource<?, S>> void writeStatus(J job, S status, Context<J> context) {
        step(STATUS_STEP, "status of " + job.getKind() + " " + job.getMetadata().getName(), () -> statusWrites.write(job, status, context));
    }

    /**
     * Puts what was just created into the informer's cache at once: the next pass, which may start
     * before the informer's watch delivers it, must not plan a second create of the same name.
     */
    private static <R extends HasMetadata, J extends CustomResource<?, ?>> void seenByNextPass(J job, Context<J> context,
            Class<R> kind, R created) {
        if (context.eventSourceRetriever().getEventSourceFor(kind) instanceof RecentOperationCacheFiller<?> informer) {
            @SuppressWarnings("unchecked")
            RecentOperationCacheFiller<R> cache = (RecentOperationCacheFiller<R>) informer;
            cache.handleRecentResourceCreate(ResourceID.fromResource(job), created);
        }
    }

    private void delete(String namespace, PodDeletion deletion) {
        try {
            Resource<Pod> pod = client.pods().inNamespace(namespace).withName(deletion.name());
            if (deletion.gracePeriodSeconds() != null) {
                // The client's fluent types do not chain a grace period and a resourceVersion lock; its operation does both.
                @SuppressWarnings("unchecked")
                Resource<Pod> shortened = (Resource<Pod>) pod.withGracePeriod(deletion.gracePeriodSeconds());
                pod = shortened;
            }
            pod.lockResourceVersion(deletion.resourceVersion()).delete();
            LOG.debugf("deleted pod %s/%s (%s)", namespace, deletion.name(), deletion.reason());
        } catch (KubernetesClientException e) {
            // Gone already, or replaced by a newer pod our cache had not seen: nothing to delete.
            if (e.getCode() != HttpURLConnection.HTTP_NOT_FOUND && e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                throw e;
            }
        }
    }

    /**
     * An activeDeadlineSeconds already past (the one pod spec field that may be lowered on a running pod): its
     * kubelet stops the containers still running and keeps the pod. The annotation says the end was ours.
     */
    private void stopSidecars(String namespace, Plan.SidecarStop stop) {
        Map<String, Object> metadata = new HashMap<>();
        if (stop.resourceVersion() != null) {
            metadata.put("resourceVersion", stop.resourceVersion()); // the precondition: the pod as the pass saw it
        }
        metadata.put("annotations", Map.of(Pods.SIDECARS_STOPPED, java.time.Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
                .toString()));
        String patch = client.getKubernetesSerialization().asJson(Map.of("metadata", metadata, "spec", Map.of("activeDeadlineSeconds", 1)));
        try {
            client.pods().inNamespace(namespace).withName(stop.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch);
            LOG.debugf("stopped the sidecars of pod %s/%s", namespace, stop.name());
        } catch (KubernetesClientException e) {
            // Gone, or changed since the cache saw it: the next pass looks again.
            if (e.getCode() != HttpURLConnection.HTTP_NOT_FOUND && e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                throw e;
            }
        }
    }

    private void deleteService(String namespace, String name) {
        try {
            client.services().inNamespace(namespace).withName(name).delete();
        } catch (KubernetesClientException e) {
            if (e.getCode() != HttpURLConnection.HTTP_NOT_FOUND) {
                throw e;
            }
        }
    }

    /**
     * A pod of that name exists already: fine if it is this job's (created by an earlier pass the
     * cache had not shown yet), an error the user must see if it belongs to someone else (another
     * job of the same name, of the other kind): it would never become this job's.
     */
    private void refuseIfSomeoneElses(HasMetadata job, Pod pod) {
        Pod existing = client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).get();
        var owner = existing == null || existing.getMetadata().getOwnerReferences() == null ? null
                : existing.getMetadata().getOwnerReferences().stream().filter(o -> Boolean.TRUE.equals(o.getController())).findFirst().orElse(null);
        if (existing != null && (owner == null || !job.getMetadata().getUid().equals(owner.getUid()))) {
            throw new IllegalStateException("a pod named " + pod.getMetadata().getName() + " exists and belongs to "
                    + (owner == null ? "no job" : owner.getKind() + " " + owner.getName())
                    + "; rename this job or delete the other one");
        }
    }

    /** True when this call created it; false when it existed already (created by an earlier pass the cache had not shown). */
    private static boolean createIgnoringExisting(Runnable create) {
        try {
            create.run();
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
                throw e;
            }
            return false;
        }
    }

    /**
     * Runs the calls concurrently on Mutiny's worker pool, a bounded number at a time, and waits for all. The first failure in the
     * order of the calls (the plan's order) is rethrown with the others suppressed in it: the same
     * refusals give the same report, pass after pass.
     */
    private static void inParallel(List<Uni<Void>> calls) {
        if (calls.isEmpty()) {
            return;
        }
        Throwable[] failures = new Throwable[calls.size()];
        List<Uni<Void>> onWorkers = new ArrayList<>();
        for (int i = 0; i < calls.size(); i++) {
            int index = i;
            onWorkers.add(calls.get(i).onFailure().recoverWithItem(failure -> {
                failures[index] = failure;
                return null;
            }).runSubscriptionOn(Infrastructure.getDefaultWorkerPool()));
        }
        Uni.join().all(onWorkers).usingConcurrencyOf(MAX_CALLS_AT_ONCE).andFailFast().await().atMost(API_TIMEOUT);
        RuntimeException first = null;
        for (Throwable failure : failures) {
            if (failure == null) {
                continue;
            }
            if (first == null) {
                first = failure instanceof RuntimeException r ? r : new IllegalStateException(failure);
            } else {
                first.addSuppressed(failure);
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
