package dev.torchjob.operator.local;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

import jakarta.inject.Inject;

import org.eclipse.microprofile.config.ConfigProvider;

import dev.torchjob.operator.api.JobPhase;
import dev.torchjob.operator.api.kubeflow.PyTorchJobStatus;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.runtime.QuarkusApplication;

/**
 * The local mode once the operator runs: submits the job to the embedded API server, runs its
 * pods as local processes ({@link LocalNode}), reports what the operator decides, and ends
 * with the job: exit 0 when it Succeeded, 1 when it Failed.
 */
public class LocalRun implements QuarkusApplication {
    static final String JOB_FILE_PROPERTY = "torchjob.local.job-file";
    private static final Duration POLL = Duration.ofMillis(200);

    @Inject
    KubernetesClient client;

    @Override
    public int run(String... args) throws Exception {
        PrintStream out = System.out;
        // Read here, not injected: this bean exists in every mode, the property only in the local one.
        Path file = Path.of(ConfigProvider.getConfig().getValue(JOB_FILE_PROPERTY, String.class));
        CustomResource<?, ?> job = LocalLauncher.read(file);
        job.getMetadata().setNamespace(LocalLauncher.NAMESPACE);
        String name = job.getMetadata().getName();

        LocalNode node = new LocalNode(client, LocalLauncher.NAMESPACE, file.getParent(), out);
        // Ctrl-C or SIGTERM: no training process may outlive us.
        Runtime.getRuntime().addShutdownHook(new Thread(node::stopAll, "local-node-shutdown"));
        node.start();

        out.println("[local] embedded API server " + client.getMasterUrl() + "; metrics http://127.0.0.1:"
                + ConfigProvider.getConfig().getOptionalValue("quarkus.http.port", String.class).orElse("8080") + "/q/metrics");
        @SuppressWarnings("unchecked")
        Class<CustomResource<?, ?>> kind = (Class<CustomResource<?, ?>>) job.getClass();
        client.resources(kind).inNamespace(LocalLauncher.NAMESPACE).resource(job).create();
        out.println("[local] submitted " + job.getKind() + " " + name + " from " + file);

        Set<String> reported = new HashSet<>();
        JobPhase phase = null;
        CustomResource<?, ?> current;
        while (true) {
            current = client.resources(kind).inNamespace(LocalLauncher.NAMESPACE).withName(name).get();
            reportEvents(reported, out);
            JobPhase now = phaseOf(current);
            if (now != null && now != phase) {
                out.println("[operator] job " + name + " is " + now);
                phase = now;
            }
            if (now != null && now.isTerminal()) {
                break;
            }
            Thread.sleep(POLL.toMillis());
        }
        Thread.sleep(POLL.toMillis()); // let the terminal events land
        reportEvents(reported, out);
        node.stopAll();
        out.println("[local] final status of " + name + ":");
        out.print(client.getKubernetesSerialization().asYaml(current.getStatus()).replaceFirst("^---\\n", ""));
        return phase == JobPhase.Succeeded ? LocalLauncher.EXIT_SUCCEEDED : LocalLauncher.EXIT_FAILED;
    }

    /** The phase either kind's status keeps (T9k's own field; this operator's beside Kubeflow's). */
    private static JobPhase phaseOf(CustomResource<?, ?> job) {
        if (job == null || job.getStatus() == null) {
            return null;
        }
        return job.getStatus() instanceof PyTorchJobStatus kubeflow ? kubeflow.phase
                : ((dev.torchjob.operator.api.PyTorchTrainingJobStatus) job.getStatus()).phase;
    }

    private void reportEvents(Set<String> reported, PrintStream out) {
        for (Event event : client.v1().events().inNamespace(LocalLauncher.NAMESPACE).list().getItems()) {
            if (reported.add(event.getMetadata().getName())) {
                out.println("[operator] " + event.getType() + " " + event.getReason() + ": " + event.getMessage());
            }
        }
    }
}
