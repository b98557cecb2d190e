package dev.torchjob.operator.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The command line of {@code kubectl torchjob}, read the way kubectl reads its own: a verb, at most
 * one job, flags as {@code --name value}, {@code --name=value} or their one-letter forms. Reading
 * never touches a cluster: a mistake is one line, before anything is asked of the API server.
 */
public record CliArguments(Verb verb, Optional<JobReference> job, Map<String, String> flags) {

    /** What the user asks for. */
    public enum Verb {
        GET, DESCRIBE, WAIT, LOGS;

        static Optional<Verb> named(String word) {
            for (Verb verb : values()) {
                if (verb.name().toLowerCase(Locale.ROOT).equals(word)) {
                    return Optional.of(verb);
                }
            }
            return Optional.empty();
        }
    }

    /** A job by name, with its kind when the user gave one ({@code pj/NAME}, {@code pytorchjob/NAME}). */
    public record JobReference(Optional<JobKind> kind, String name) {
    }

    /** The two job APIs, with the names kubectl knows them by. */
    public enum JobKind {
        T9K("PyTorchTrainingJob", Set.of("pj", "pytorchtrainingjob", "pytorchtrainingjobs", "pytorchtrainingjob.batch.tensorstack.dev")),
        KUBEFLOW("PyTorchJob", Set.of("pytorchjob", "pytorchjobs", "ptj", "pytorchjob.kubeflow.org"));

        public final String kind;
        private final Set<String> names;

        JobKind(String kind, Set<String> names) {
            this.kind = kind;
            this.names = names;
        }

        static Optional<JobKind> named(String name) {
            for (JobKind kind : values()) {
                if (kind.names.contains(name.toLowerCase(Locale.ROOT))) {
                    return Optional.of(kind);
                }
            }
            return Optional.empty();
        }
    }

    /** A command line that cannot be run: the one line to print. */
    public static final class BadInput extends Exception {
        public BadInput(String message) {
            super(message);
        }
    }

    /** Flags every verb takes: where the cluster is and which namespace. */
    private static final Set<String> CLUSTER_FLAGS = Set.of("namespace", "context", "kubeconfig");
    /** The flags of each verb; a boolean flag takes no value. */
    private static final Map<Verb, Set<String>> VERB_FLAGS = Map.of(
            Verb.GET, Set.of(),
            Verb.DESCRIBE, Set.of(),
            Verb.WAIT, Set.of("for", "timeout"),
            Verb.LOGS, Set.of("follow", "type", "index", "container", "since", "timestamps"));
    private static final Set<String> BOOLEAN_FLAGS = Set.of("follow", "timestamps");
    private static final Map<String, String> SHORT_FLAGS = Map.of("n", "namespace", "f", "follow", "c", "container");
    /** What {@code wait --for} accepts. */
    public static final List<String> WAIT_TARGETS = List.of("Succeeded", "Failed", "Running", "Admitted");

    public static CliArguments parse(List<String> args) throws BadInput {
        if (args.isEmpty()) {
            throw new BadInput("error: say what to do: get, describe, wait or logs (see kubectl torchjob --help)");
        }
        Verb verb = Verb.named(args.get(0)).orElseThrow(() -> new BadInput(
                "error: unknown command \"" + args.get(0) + "\": get, describe, wait or logs (see kubectl torchjob --help)"));
        Map<String, String> flags = new LinkedHashMap<>();
        List<String> positional = new ArrayList<>();
        for (int i = 1; i < args.size(); i++) {
            String arg = args.get(i);
            if (!arg.startsWith("-") || arg.equals("-")) {
                positional.add(arg);
                continue;
            }
            String name = arg.startsWith("--") ? arg.substring(2) : SHORT_FLAGS.getOrDefault(arg.substring(1), arg.substring(1));
            String value = null;
            int equals = name.indexOf('=');
            if (equals >= 0) {
                value = name.substring(equals + 1);
                name = name.substring(0, equals);
            }
            if (!CLUSTER_FLAGS.contains(name) && !VERB_FLAGS.get(verb).contains(name)) {
                throw new BadInput("error: unknown flag " + arg + " for " + verb.name().toLowerCase(Locale.ROOT) + " (see kubectl torchjob --help)");
            }
            if (BOOLEAN_FLAGS.contains(name)) {
                flags.put(name, value == null ? "true" : value);
                continue;
            }
            if (value == null) {
                if (i + 1 >= args.size()) {
                    throw new BadInput("error: flag " + arg + " needs a value");
                }
                value = args.get(++i);
            }
            flags.put(name, value);
        }
        if (positional.size() > 1) {
            throw new BadInput("error: one job at a time; got " + String.join(", ", positional));
        }
        Optional<JobReference> job = positional.isEmpty() ? Optional.empty() : Optional.of(reference(positional.get(0)));
        if (job.isEmpty() && verb != Verb.GET) {
            throw new BadInput("error: name the job: kubectl torchjob " + verb.name().toLowerCase(Locale.ROOT) + " JOB");
        }
        CliArguments parsed = new CliArguments(verb, job, Map.copyOf(flags));
        parsed.check();
        return parsed;
    }

    private static JobReference reference(String word) throws BadInput {
        int slash = word.indexOf('/');
        if (slash < 0) {
            return new JobReference(Optional.empty(), word);
        }
        String kind = word.substring(0, slash);
        JobKind named = JobKind.named(kind).orElseThrow(() -> new BadInput("error: " + kind
                + " is not a training job kind: pj (PyTorchTrainingJob) or pytorchjob (Kubeflow's PyTorchJob)"));
        return new JobReference(Optional.of(named), word.substring(slash + 1));
    }

    /** Values that can be judged without a cluster. */
    private void check() throws BadInput {
        if (flags.containsKey("for") && WAIT_TARGETS.stream().noneMatch(t -> t.equalsIgnoreCase(flags.get("for")))) {
            throw new BadInput("error: --for " + flags.get("for") + ": wait for one of " + String.join(", ", WAIT_TARGETS));
        }
        if (flags.containsKey("timeout")) {
            duration("timeout");
        }
        if (flags.containsKey("since")) {
            duration("since");
        }
        if (flags.containsKey("index")) {
            try {
                if (Integer.parseInt(flags.get("index")) < 0) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new BadInput("error: --index " + flags.get("index") + " is not a replica index (0, 1, ...)");
            }
            if (!flags.containsKey("type")) {
                throw new BadInput("error: --index needs --type (which replica group)");
            }
        }
        for (String bool : BOOLEAN_FLAGS) {
            if (flags.containsKey(bool) && !Set.of("true", "false").contains(flags.get(bool))) {
                throw new BadInput("error: --" + bool + "=" + flags.get(bool) + ": true or false");
            }
        }
    }

    public String flag(String name, String otherwise) {
        return flags.getOrDefault(name, otherwise);
    }

    public boolean on(String name) {
        return "true".equals(flags.get(name));
    }

    /** A duration as kubectl writes them: 90s, 10m, 1h, 1h30m, or a number of seconds. */
    public Duration duration(String name) throws BadInput {
        String text = flags.get(name);
        try {
            return Duration.parse("PT" + (text.matches("\\d+") ? text + "S" : text.toUpperCase(Locale.ROOT)));
        } catch (RuntimeException e) {
            throw new BadInput("error: --" + name + " " + text + " is not a duration (such as 90s, 10m, 1h)");
        }
    }
}
