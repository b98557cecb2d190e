package dev.torchjob.operator.local;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.torchjob.operator.engine.TrainingContainer;
import dev.torchjob.operator.kubeflow.KubeflowLabels;
import dev.torchjob.operator.t9k.JobLabels;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarSource;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * What a pod's training container is as a process on this machine: its command line and environment as the
 * kubelet would give them ({@code $(VAR)} expanded by Kubernetes' rules), the names of the job's pods mapped to
 * 127.0.0.1, a torchrun told whether it hosts the rendezvous, and the folder it runs in. Pure: the local node
 * starts what this says.
 *
 * @param argv the command line; empty when the container names none (the image's entrypoint, which is not run here)
 * @param leftOut what of the container's environment this machine cannot give, one sentence each, in the order the
 *     kubelet reads it: an {@code envFrom} source (a ConfigMap's or Secret's keys), a {@code valueFrom} that is not
 *     the downward API's ({@link DownwardApi})
 */
record ReplicaProcess(List<String> argv, Map<String, String> environment, Path workingDirectory, List<String> leftOut) {
    private static final Pattern VARIABLE_REFERENCE = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_.-]*)\\)|\\$\\$");

    static ReplicaProcess of(Pod pod, Path defaultWorkingDirectory, DownwardApi.Node node) {
        String podName = pod.getMetadata().getName();
        Container container = TrainingContainer.of(pod);
        List<EnvVar> vars = container.getEnv() == null ? List.of() : container.getEnv();
        List<String> leftOut = new ArrayList<>();
        for (EnvFromSource source : container.getEnvFrom() == null ? List.<EnvFromSource> of() : container.getEnvFrom()) {
            String object = source.getSecretRef() != null ? "Secret " + source.getSecretRef().getName()
                    : source.getConfigMapRef() != null ? "ConfigMap " + source.getConfigMapRef().getName() : "source";
            leftOut.add("envFrom: its " + object + " is not on this machine; its variables are left out");
        }
        Function<EnvVarSource, DownwardApi.Resolved> valueFrom = source -> DownwardApi.of(source, pod, container, node);
        Map<String, String> env = environment(vars, jobOf(pod), valueFrom, leftOut);
        List<String> argv = commandLine(container).stream().map(word -> expand(word, env)).toList();
        if (TorchrunOnOneHost.launches(argv)) {
            // torchrun's rendezvous is decided on the names as the cluster has them; what is left out is said above.
            Map<String, String> clusterEnv = environment(vars, null, valueFrom, new ArrayList<>());
            List<String> clusterArgv = commandLine(container).stream().map(word -> expand(word, clusterEnv)).toList();
            argv = TorchrunOnOneHost.adapted(argv, clusterArgv, clusterEnv, podName);
        }
        Path workingDirectory = container.getWorkingDir() != null
                ? defaultWorkingDirectory.resolve(container.getWorkingDir())
                : defaultWorkingDirectory;
        return new ReplicaProcess(argv, env, workingDirectory, List.copyOf(leftOut));
    }

    /** What a container runs: its command, then its args, as written (before $(VAR) expansion). */
    static List<String> commandLine(Container container) {
        List<String> words = new ArrayList<>();
        if (container.getCommand() != null) {
            words.addAll(container.getCommand());
        }
        if (container.getArgs() != null) {
            words.addAll(container.getArgs());
        }
        return words;
    }

    /** The job a pod belongs to: T9k pods name it as their subdomain, Kubeflow's in a label. */
    private static String jobOf(Pod pod) {
        if (pod.getSpec().getSubdomain() != null) {
            return pod.getSpec().getSubdomain();
        }
        Map<String, String> labels = pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
        return labels.getOrDefault(KubeflowLabels.JOB_NAME, labels.get(JobLabels.OWNER_NAME));
    }

    /**
     * The container's env in order, each value expanded against the ones before it (Kubernetes rules), each
     * valueFrom as the kubelet resolves it here, or left out and said in {@code leftOut}; with a job's name, the
     * names of its pods mapped to 127.0.0.1; without, as the cluster has them.
     */
    private static Map<String, String> environment(List<EnvVar> vars, String jobName,
            Function<EnvVarSource, DownwardApi.Resolved> valueFrom, List<String> leftOut) {
        Map<String, String> env = new LinkedHashMap<>();
        for (EnvVar var : vars) {
            if (var.getValueFrom() == null) {
                String value = expand(var.getValue() == null ? "" : var.getValue(), env);
                env.put(var.getName(), jobName == null ? value : local(value, jobName));
            } else {
                DownwardApi.Resolved resolved = valueFrom.apply(var.getValueFrom());
                if (resolved instanceof DownwardApi.Resolved.Value value) {
                    env.put(var.getName(), value.value());
                } else if (resolved instanceof DownwardApi.Resolved.Unresolved why) {
                    leftOut.add(var.getName() + " uses valueFrom, and " + why.why() + "; skipped");
                }
            }
        }
        return env;
    }

    /**
     * A name of one of the job's pods (T9k: {@code <pod>.<job>}; Kubeflow: the pod's Service,
     * {@code <job>-master-0}), alone or as {@code host:port}, also qualified by a namespace as a cluster's DNS
     * resolves it ({@code <pod>.<job>.<namespace>.svc.cluster.local}), becomes 127.0.0.1.
     */
    static String local(String value, String jobName) {
        String label = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
        String pod = Pattern.quote(jobName) + "-" + label + "-[0-9]+";
        String namespace = "(\\." + label + "(\\.svc(\\.cluster\\.local)?)?)?";
        Matcher matcher = Pattern.compile("^" + pod + "(\\." + Pattern.quote(jobName) + ")?" + namespace + "(?<port>:[0-9]+)?$")
                .matcher(value);
        return matcher.matches() ? "127.0.0.1" + (matcher.group("port") == null ? "" : matcher.group("port")) : value;
    }

    /** $(VAR) becomes VAR's value when defined, stays as written otherwise; $$ is a literal $. */
    static String expand(String text, Map<String, String> env) {
        Matcher matcher = VARIABLE_REFERENCE.matcher(text);
        StringBuilder result = new StringBuilder();
        while (matcher.find()) {
            String replacement = matcher.group(1) == null ? "\\$" : env.containsKey(matcher.group(1))
                    ? Matcher.quoteReplacement(env.get(matcher.group(1)))
                    : Matcher.quoteReplacement(matcher.group());
            matcher.appendReplacement(result, replacement);
        }
        matcher.appendTail(result);
        return result.toString();
    }
}
