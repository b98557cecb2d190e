package dev.torchjob.operator.kueue;

import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Whether Kueue queues a job through one of its owners, as Kueue decides it for its own jobs: the
 * controller owners are walked up while Kueue knows their kind, and the topmost one Kueue manages
 * (a kind enabled in its integrations, with a queue label, or any where it manages every job) is the
 * job's managing ancestor. Such a job has no Workload of its own: its ancestor's admission covers it
 * (an AppWrapper wrapping a PyTorchJob, say). Kueue also leaves the default LocalQueue off a job whose
 * direct owner is of a kind it manages. Pure: the owners are read through the function given.
 *
 * @param ownerKindManaged the job's controller owner is of a kind Kueue manages
 * @param ancestor the topmost owner Kueue manages, when there is one
 */
public record OwnerAncestry(boolean ownerKindManaged, Optional<Owner> ancestor) {
    /** Kueue's limit on the chain walked. */
    static final int CHAIN_LIMIT = 10;
    public static final OwnerAncestry NONE = new OwnerAncestry(false, Optional.empty());

    /** A controller owner reference: enough to read the owner and to check it is the one referenced. */
    public record Reference(String apiVersion, String kind, String name, String uid) {
        @Override
        public String toString() {
            return kind + " " + name;
        }
    }

    /** An owner as read: its labels and annotations, and its own controller owner. */
    public record Owner(Reference reference, String uid, Map<String, String> labels, Map<String, String> annotations,
            Optional<Reference> controller) {
    }

    /** The walk cannot be finished: the job waits, as Kueue's reconcile of such a job fails and is retried. */
    public static final class Unresolved extends RuntimeException {
        Unresolved(String message) {
            super(message);
        }
    }

    /**
     * @param controller the job's controller owner reference, if any
     * @param read reads an owner (its namespace is the job's); empty when it is not found
     * @param everyJobQueued Kueue's manageJobsWithoutQueueName: an owner of a managed kind needs no queue label
     * @throws Unresolved when an owner is not found, the chain is cyclic or longer than Kueue walks
     */
    public static OwnerAncestry of(Optional<Reference> controller, Function<Reference, Optional<Owner>> read,
            KueueIntegrations integrations, boolean everyJobQueued) {
        if (controller.isEmpty() || !integrations.knows(controller.get().apiVersion(), controller.get().kind())) {
            return NONE; // no read for the common job: no owner, or one Kueue does not know
        }
        boolean ownerKindManaged = integrations.manages(controller.get().apiVersion(), controller.get().kind());
        Optional<Owner> topmost = Optional.empty();
        Set<String> seen = new HashSet<>();
        Optional<Reference> next = controller;
        while (next.isPresent() && integrations.knows(next.get().apiVersion(), next.get().kind())) {
            Reference reference = next.get();
            if (!seen.add(reference.uid())) {
                throw new Unresolved("its owners form a cycle at " + reference);
            }
            if (seen.size() > CHAIN_LIMIT) {
                throw new Unresolved("its chain of owners is longer than Kueue walks (" + CHAIN_LIMIT + ")");
            }
            Owner owner = read.apply(reference).orElseThrow(() -> new Unresolved("its owner " + reference + " is not found"));
            if (!owner.uid().equals(reference.uid())) {
                break; // another object of that name: Kueue stops there
            }
            if (integrations.manages(reference.apiVersion(), reference.kind())
                    && (everyJobQueued || !owner.labels().getOrDefault(KueueWorkload.QUEUE_LABEL, "").isEmpty())) {
                topmost = Optional.of(owner);
            }
            next = owner.controller();
        }
        return new OwnerAncestry(ownerKindManaged, topmost);
    }

    /** The event said, once, of a job Kueue queues through its owner. */
    public static final String QUEUED_BY_OWNER = "QueuedByOwner";

    /**
     * What that event says.
     *
     * @param podsCleanedUp the job's clean-up in its API's words, when it deletes pods once the job ends
     */
    public String queuedByOwnerMessage(Optional<String> podsCleanedUp) {
        Owner owner = ancestor.orElseThrow();
        return "Kueue queues this job through its owner " + owner.reference() + " (" + owner.reference().apiVersion()
                + "): the job has no Workload of its own, its owner's admission covers it, and its own "
                + KueueWorkload.QUEUE_LABEL + " label, if any, is not used"
                + AppWrapperResets.cautions(owner, podsCleanedUp).stream().map(c -> ". " + c).collect(Collectors.joining());
    }
}
