package dev.torchjob.operator.engine;

import java.time.Instant;
import java.util.Comparator;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * The master's name, as its ranks look it up at their rendezvous ({@code MASTER_ADDR=<job>-master-0.<job>}). Each new
 * pod of the master has a new address, and the cluster's DNS may go on answering with the old one for
 * {@link RestartBackoff#dnsCache()}: a rank given it fails its rendezvous at once ({@code No route to host}), and so
 * does the new master, which looks itself up. So while the old address may still be answered, no pod of the job is
 * created — after a pause or a Kueue eviction resumed soon, for a master replaced alone, and for a job created
 * under the name of one deleted moments before (its pods have the same names: the pods kept as gone are the
 * job name's, whichever job owned them). (A group restart decides its own wait when it counts the incident:
 * {@link GroupRestarts}.)
 */
final class MasterAddress {
    /** The event that says a job's new pods wait for the cluster's DNS. */
    static final String WAITING_FOR_DNS = "WaitingForDns";

    private MasterAddress() {
    }

    /**
     * When the cluster's DNS can no longer answer the master's name with the address of its last pod, if that is still
     * to come: only while that pod has ended (failed, being deleted, or gone: as the operator last saw it), and only when
     * some rank started before it ended (a rank looks the name up within a minute of its start). Empty when the master's
     * pod is up, when nothing is known of its last one (an operator restarted since it went), or when nothing is to be
     * waited for.
     */
    static Optional<Instant> oldAddressForgottenAt(PassContext pass, JobTopology topology) {
        String master = topology.master().podName();
        Pod current = pass.pods().get(master);
        Pod last = current != null ? current : pass.gonePods().get(master);
        // A pod its kubelet refused never had an address.
        if (last == null || RefusedPod.is(last)
                || (current != null && !Pods.isTerminating(current) && !Pods.replicaPhase(current).isFinished())) {
            return Optional.empty();
        }
        // Its address is no longer served once its containers ended (the endpoints leave out a finished pod) or its
        // deletion was asked for; one removed with no time known (a forced delete) is taken to have ended now.
        Instant ended = Pods.replicaPhase(last).isFinished() ? ReplicaEnding.ofFailedPod(last).at() : null;
        if (ended == null && Pods.isTerminating(last)) {
            ended = ReplicaEnding.ofDeletedPod(last).at();
        }
        Instant stop = ended != null ? ended : pass.now();
        Instant lastStart = Stream.concat(pass.pods().values().stream(), pass.gonePods().values().stream())
                .map(MasterAddress::lastStart).filter(Objects::nonNull).filter(start -> !start.isAfter(stop))
                .max(Comparator.naturalOrder()).orElse(null);
        if (lastStart == null) {
            return Optional.empty();
        }
        return pass.backoff().oldAddressForgottenAt(lastStart, stop).filter(pass.now()::isBefore);
    }

    /** What a pass says while it waits: {@code new pod(s) at T, once the cluster's DNS no longer answers …}. */
    static String waiting(JobTopology topology, Instant at) {
        return "at " + at + ", once the cluster's DNS no longer answers " + topology.master().podName() + "'s name with its old address";
    }

    /** When the last of the pod's containers started (one the kubelet restarted in place: its new start); null when none did. */
    static Instant lastStart(Pod pod) {
        if (pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null) {
            return null;
        }
        return pod.getStatus().getContainerStatuses().stream().map(MasterAddress::startedAt).filter(Objects::nonNull)
                .max(Comparator.naturalOrder()).orElse(null);
    }

    private static Instant startedAt(ContainerStatus status) {
        var state = status.getState();
        return ReplicaEnding.time(state == null ? null : state.getRunning() != null ? state.getRunning().getStartedAt()
                : state.getTerminated() != null ? state.getTerminated().getStartedAt() : null);
    }
}
