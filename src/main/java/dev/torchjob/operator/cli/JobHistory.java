package dev.torchjob.operator.cli;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * What {@code kubectl torchjob describe} prints: the job's history in time order (created, its
 * conditions as they changed, the operator's events: queued, admitted, pods created, each counted
 * restart, suspensions, the outcome), then each replica's pod now. Events expire (an hour by
 * default in Kubernetes), the conditions stay: an old job's history is its conditions.
 */
public final class JobHistory {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);

    private JobHistory() {
    }

    record Entry(Instant at, String what, String detail) {
    }

    public static String render(JobView job, List<Pod> pods, List<Event> events) {
        StringBuilder out = new StringBuilder();
        out.append(field("Name", job.name()));
        out.append(field("Namespace", job.namespace()));
        out.append(field("Kind", job.kind().kind));
        out.append(field("Phase", job.phase().name()));
        out.append(field("Replicas", job.groups().isEmpty() ? "<none: the spec is invalid, see Conditions>"
                : job.groups().stream().map(g -> g.type() + " " + g.replicas()).collect(Collectors.joining(", "))));
        out.append(field("Restarts", job.restartsOfLimit() + " (counted / runPolicy.backoffLimit)"));
        out.append(field("Queue", job.queue().map(q -> q + (job.admitted() ? " (admitted)" : " (waiting for admission)"))
                .orElse(job.admitted() ? "<none>" : "<none> (waiting: " + job.condition("Queued").map(JobView.Condition::reason).orElse("") + ")")));
        job.outcome().ifPresent(outcome -> out.append(field("Outcome", outcome)));

        out.append("\nHistory:\n");
        List<Entry> entries = history(job, events);
        if (entries.isEmpty()) {
            out.append("  <nothing recorded>\n");
        }
        for (Entry entry : entries) {
            out.append("  ").append(entry.at() == null ? "                    " : TIME.format(entry.at())).append("  ")
                    .append(entry.what()).append(entry.detail().isEmpty() ? "" : "  " + entry.detail()).append('\n');
        }

        out.append("\nPods:\n");
        if (pods.isEmpty()) {
            out.append("  <none>\n");
        } else {
            List<List<String>> rows = new ArrayList<>();
            rows.add(List.of("REPLICA", "POD", "NODE", "PHASE", "RESTARTS", "LAST TERMINATION"));
            pods.stream().sorted(Comparator.comparing(p -> p.getMetadata().getName())).forEach(pod -> rows.add(List.of(
                    job.replicaOf(pod.getMetadata().getName()), pod.getMetadata().getName(),
                    Optional.ofNullable(pod.getSpec() == null ? null : pod.getSpec().getNodeName()).orElse("<none>"),
                    pod.getStatus() == null || pod.getStatus().getPhase() == null ? "Pending" : pod.getStatus().getPhase(),
                    String.valueOf(containerStatuses(pod).stream().mapToInt(c -> c.getRestartCount() == null ? 0 : c.getRestartCount()).sum()),
                    lastTermination(pod))));
            out.append(Columns.render(rows, "  "));
        }
        long unfinished = pods.stream().filter(pod -> pod.getMetadata().getDeletionTimestamp() == null
                && !"Succeeded".equals(phase(pod)) && !"Failed".equals(phase(pod))).count();
        if (job.ended() && unfinished > 0) {
            // Nothing of the operator's runs for an ended job: only the clean-up policy leaves pods running.
            out.append("  ").append(unfinished).append(unfinished == 1 ? " pod is" : " pods are")
                    .append(" still running after the job ended: its clean-up policy keeps them (")
                    .append(job.kind() == CliArguments.JobKind.T9K ? "runPolicy.cleanUpPolicy" : "runPolicy.cleanPodPolicy").append(")\n");
        }
        return out.toString();
    }

    private static String phase(Pod pod) {
        return pod.getStatus() == null ? null : pod.getStatus().getPhase();
    }

    /** Created, then every condition change and event, oldest first; a restart event says which restart it was. */
    static List<Entry> history(JobView job, List<Event> events) {
        List<Entry> entries = new ArrayList<>();
        job.created().ifPresent(at -> entries.add(new Entry(at, "Created", "")));
        for (JobView.Condition condition : job.conditions()) {
            if (condition.at().isEmpty()) {
                continue;
            }
            String state = condition.status() ? condition.type() : "not " + condition.type();
            entries.add(new Entry(condition.at().get(), state, join(condition.reason(), condition.message())));
        }
        for (Event event : events) {
            String message = firstLine(event.getMessage());
            int count = event.getCount() == null ? 1 : event.getCount();
            entries.add(new Entry(eventTime(event), event.getReason(), message + (count > 1 ? " (x" + count + ")" : "")));
        }
        entries.sort(Comparator.comparing(Entry::at, Comparator.nullsFirst(Comparator.naturalOrder())));
        return entries;
    }

    static Instant eventTime(Event event) {
        for (String time : new String[] {event.getLastTimestamp(), event.getEventTime() == null ? null : event.getEventTime().getTime(),
                event.getFirstTimestamp(), event.getMetadata() == null ? null : event.getMetadata().getCreationTimestamp()}) {
            Optional<Instant> at = JobView.instant(time);
            if (at.isPresent()) {
                return at.get();
            }
        }
        return null;
    }

    /** An event's first line: a restart event adds the replica's last output below it. */
    static String firstLine(String message) {
        return message == null ? "" : message.strip().lines().findFirst().orElse("").replaceFirst(";? ?last output:$", "");
    }

    private static String join(String reason, String message) {
        return (reason == null ? "" : reason) + (message == null || message.isBlank() ? "" : (reason == null ? "" : ": ") + firstLine(message));
    }

    private static List<ContainerStatus> containerStatuses(Pod pod) {
        return pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null ? List.of() : pod.getStatus().getContainerStatuses();
    }

    /** The newest termination of the pod's containers: exit code and reason. */
    static String lastTermination(Pod pod) {
        for (ContainerStatus status : containerStatuses(pod)) {
            var terminated = status.getState() != null && status.getState().getTerminated() != null ? status.getState().getTerminated()
                    : status.getLastState() != null ? status.getLastState().getTerminated() : null;
            if (terminated != null) {
                return status.getName() + " exited " + terminated.getExitCode() + (terminated.getReason() == null ? "" : " (" + terminated.getReason() + ")")
                        + (terminated.getFinishedAt() == null ? "" : " at " + terminated.getFinishedAt());
            }
        }
        return "";
    }

    private static String field(String name, String value) {
        return String.format("%-11s%s%n", name + ":", value);
    }
}
