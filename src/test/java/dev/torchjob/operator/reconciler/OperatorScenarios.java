package dev.torchjob.operator.reconciler;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.engine.JobPhase;
import io.fabric8.kubernetes.client.KubernetesClient;

/** Whole job stories, for tests in other packages (metrics) that need jobs to go through them. */
public final class OperatorScenarios {
    private final OperatorHarness cluster;

    public OperatorScenarios(KubernetesClient client, String namespace) {
        this.cluster = new OperatorHarness(client, namespace);
    }

    public PyTorchTrainingJob job(String name) {
        return cluster.job(name);
    }

    /** A worker is OOM-killed once under ExitCode, restarted, and the master then succeeds. */
    public void restartOnceThenSucceed(String name) {
        cluster.submit(OperatorHarness.job(name, "ExitCode", "{backoffLimit: 3}"));
        cluster.awaitPodNames(name + "-master-0", name + "-worker-0", name + "-worker-1");
        runPodsOf(name);
        cluster.awaitPhase(name, JobPhase.Running);
        String uid = cluster.pod(name + "-worker-0").getMetadata().getUid();
        cluster.kubelet.oomKill(name + "-worker-0");
        cluster.awaitNewPod(name + "-worker-0", uid);
        cluster.kubelet.run(name + "-worker-0");
        cluster.kubelet.exit(name + "-master-0", 0);
        cluster.awaitPhase(name, JobPhase.Succeeded);
    }

    /** A worker exits 1 under Never: the job fails at once. */
    public void failOnce(String name) {
        cluster.submit(OperatorHarness.job(name, "Never", "{backoffLimit: 3}"));
        cluster.awaitJob(name, j -> j.getStatus() != null && j.getStatus().startTime != null);
        runPodsOf(name);
        cluster.awaitPhase(name, JobPhase.Running);
        cluster.kubelet.exit(name + "-worker-1", 1);
        cluster.awaitPhase(name, JobPhase.Failed);
    }

    /** Pods are created but never run: the job stays Pending. */
    public void submitAndLeavePending(String name) {
        cluster.submit(OperatorHarness.job(name, "OnFailure", "{backoffLimit: 3}"));
        cluster.awaitJob(name, j -> j.getStatus() != null && j.getStatus().phase == JobPhase.Pending);
    }

    private void runPodsOf(String name) {
        for (String pod : new String[] {name + "-master-0", name + "-worker-0", name + "-worker-1"}) {
            cluster.awaitJob(name, j -> cluster.pod(pod) != null);
            cluster.kubelet.run(pod);
        }
    }
}
