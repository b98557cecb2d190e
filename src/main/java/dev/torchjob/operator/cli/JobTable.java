package dev.torchjob.operator.cli;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** The table {@code kubectl torchjob get} prints: both kinds, with restarts against the budget and the queue. */
public final class JobTable {
    static final List<String> HEADER = List.of("NAME", "KIND", "PHASE", "REPLICAS", "RESTARTS", "QUEUE", "AGE");

    private JobTable() {
    }

    public static String render(List<JobView> jobs, Instant now) {
        List<List<String>> rows = new ArrayList<>();
        rows.add(HEADER);
        for (JobView job : jobs) {
            int replicas = job.groups().stream().mapToInt(g -> g.replicas()).sum();
            rows.add(List.of(job.name(), job.kind().kind, job.phase().name(), String.valueOf(replicas), job.restartsOfLimit(),
                    job.queue().orElse("<none>"), job.created().map(c -> age(Duration.between(c, now))).orElse("<unknown>")));
        }
        return Columns.render(rows, "");
    }

    /** As kubectl writes an age: 45s, 12m, 3h, 5d. */
    static String age(Duration age) {
        long seconds = Math.max(0, age.toSeconds());
        if (seconds < 120) {
            return seconds + "s";
        }
        if (seconds < 120 * 60) {
            return seconds / 60 + "m";
        }
        if (seconds < 48 * 3600) {
            return seconds / 3600 + "h";
        }
        return seconds / 86400 + "d";
    }
}
