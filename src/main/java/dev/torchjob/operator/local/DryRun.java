package dev.torchjob.operator.local;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.engine.Plan;
import dev.torchjob.operator.engine.RestartBackoff;
import dev.torchjob.operator.engine.TrainingContainer;
import dev.torchjob.operator.kubeflow.KubeflowPlanner;
import dev.torchjob.operator.t9k.T9kPlanner;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.client.CustomResource;

/**
 * {@code run --dry-run}: what the operator would create for the job in a cluster — its Services and
 * pods, each training container's command line and environment — from the operator's own first
 * decision, with nothing started.
 */
final class DryRun {
    private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9_./:=@%+,-]+");

    private DryRun() {
    }

    /** The operator's first decision for the job, as a cluster with none of its objects yet would get it. */
    static Plan<?> firstPlan(CustomResource<?, ?> job, Instant now) {
        return job instanceof PyTorchJob kubeflow
                ? KubeflowPlanner.plan(kubeflow, List.of(), Set.of(), now, Map.of(), RestartBackoff.NONE)
                : T9kPlanner.plan((PyTorchTrainingJob) job, List.of(), false, now);
    }

    static String describe(CustomResource<?, ?> job, Instant now) {
        Plan<?> plan = firstPlan(job, now);
        StringBuilder out = new StringBuilder();
        String name = job.getMetadata().getName();
        out.append(job.getKind()).append(' ').append(name).append(": ").append(plan.podsToCreate().size())
                .append(plan.podsToCreate().size() == 1 ? " pod" : " pods");
        List<String> services = plan.servicesToCreate().stream().map(DryRun::service).toList();
        if (!services.isEmpty()) {
            out.append(", ").append(String.join(", ", services));
        }
        out.append('\n');
        plan.events().forEach(event -> out.append("  ").append(event.type()).append(' ').append(event.reason()).append(": ")
                .append(event.message().lines().collect(Collectors.joining("\n    "))).append('\n'));
        for (Pod pod : plan.podsToCreate()) {
            Container training = TrainingContainer.of(pod);
            out.append("pod ").append(pod.getMetadata().getName()).append(" (container ").append(training.getName())
                    .append(", image ").append(training.getImage()).append(")\n");
            List<String> commandLine = ReplicaProcess.commandLine(training);
            out.append("  command: ").append(commandLine.isEmpty() ? "(the image's entrypoint)"
                    : commandLine.stream().map(DryRun::quoted).collect(Collectors.joining(" "))).append('\n');
            for (EnvVar env : training.getEnv() == null ? List.<EnvVar> of() : training.getEnv()) {
                out.append("  env ").append(env.getName()).append('=')
                        .append(env.getValueFrom() == null ? quoted(String.valueOf(env.getValue())) : "(" + source(env) + ")").append('\n');
            }
        }
        return out.toString();
    }

    /**
     * What each replica's process would get of this machine's GPUs in a local run: nothing to say when the job
     * asks for none and the machine has none.
     */
    static String gpus(List<Pod> pods, GpuAssignment assignment) {
        MachineGpus machine = assignment.machine();
        if (machine.gpus().isEmpty() && pods.stream().allMatch(pod -> GpuAssignment.asked(pod) == 0)) {
            return "";
        }
        StringBuilder out = new StringBuilder("locally, on this machine (").append(machine.said()).append("):\n");
        for (Pod pod : pods) {
            int asked = GpuAssignment.asked(pod);
            String name = pod.getMetadata().getName();
            out.append("  ").append(name).append(": ");
            var given = assignment.take(name, name, asked);
            if (given.isEmpty()) {
                out.append("asks for ").append(asked).append(asked == 1 ? " GPU" : " GPUs").append(", none left for it\n");
                continue;
            }
            out.append(given.get().isEmpty() ? "no GPU" : String.join(", ", given.get().stream().map(MachineGpus.Gpu::toString).toList()));
            Map<String, String> env = assignment.environment(given.get(), null);
            env.forEach((key, value) -> out.append(", ").append(key).append('=').append(quoted(value)));
            out.append('\n');
        }
        return out.toString();
    }

    private static String service(Service service) {
        return "Service " + service.getMetadata().getName()
                + ("None".equals(service.getSpec().getClusterIP()) ? " (headless)" : "");
    }

    private static String source(EnvVar env) {
        var from = env.getValueFrom();
        if (from.getSecretKeyRef() != null) {
            return "key " + from.getSecretKeyRef().getKey() + " of Secret " + from.getSecretKeyRef().getName();
        }
        if (from.getConfigMapKeyRef() != null) {
            return "key " + from.getConfigMapKeyRef().getKey() + " of ConfigMap " + from.getConfigMapKeyRef().getName();
        }
        if (from.getFieldRef() != null) {
            return "field " + from.getFieldRef().getFieldPath();
        }
        if (from.getResourceFieldRef() != null) {
            return "resource " + from.getResourceFieldRef().getResource();
        }
        return "set by the cluster";
    }

    /** As a shell would need it: plain words as they are, others in single quotes. */
    static String quoted(String word) {
        return PLAIN.matcher(word).matches() ? word : "'" + word.replace("'", "'\\''") + "'";
    }
}
