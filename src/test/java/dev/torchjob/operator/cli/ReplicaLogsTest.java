package dev.torchjob.operator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cli.CliArguments.BadInput;
import dev.torchjob.operator.cli.ClusterSession.Failure;
import dev.torchjob.operator.testing.Kubeconfigs;
import dev.torchjob.operator.testing.PodFates;
import dev.torchjob.operator.testing.ScriptedApiServer;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodListBuilder;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;

/**
 * {@code kubectl torchjob logs} without following: each replica's lines after its name, what has no log
 * yet said on stderr, a selection that names nothing refused before any request, a refusal in one line;
 * following, a stream whose connection closed before its first line read again. (Following across
 * restarts is on the real node: KubectlTorchjobIT, RealNodeIT.)
 */
@EnableKubernetesMockClient(https = false)
class ReplicaLogsTest {
    static final String PODS = "/api/v1/namespaces/team-a/pods?labelSelector=training.kubeflow.org%2Fjob-name%3Dmnist";

    KubernetesMockServer server;
    KubernetesClient client;
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();

    static JobView job() {
        return JobView.of(Serialization.unmarshal("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: mnist, namespace: team-a}
                spec:
                  pytorchReplicaSpecs:
                    Master: {template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """, PyTorchJob.class));
    }

    static Pod pod(String name, String type, boolean started) {
        Pod pod = new PodBuilder().withNewMetadata().withName(name).withNamespace("team-a")
                .addToLabels("training.kubeflow.org/job-name", "mnist").addToLabels("training.kubeflow.org/replica-type", type)
                .endMetadata().withNewSpec().addNewContainer().withName("pytorch").withImage("torch").endContainer().endSpec().build();
        if (started) {
            PodFates.running(pod);
        }
        return pod;
    }

    int logs(String arguments) throws Failure, BadInput {
        ReplicaLogs logs = new ReplicaLogs(new ClusterSession(client, "team-a", "http://cluster"), CliArguments.parse(List.of(arguments.split(" "))),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return logs.run(job());
    }

    void podsAre(Pod... pods) {
        server.expect().get().withPath(PODS).andReturn(200, new PodListBuilder().withItems(pods).build()).always();
    }

    void logOf(String pod, String text) {
        server.expect().get().withPath("/api/v1/namespaces/team-a/pods/" + pod + "/log?pretty=false&container=pytorch").andReturn(200, text).always();
    }

    @Test
    void eachReplicasLinesComeAfterItsNameAndWhatHasNotStartedIsSaidApart() throws Exception {
        podsAre(pod("mnist-worker-0", "worker", true), pod("mnist-master-0", "master", true), pod("mnist-worker-1", "worker", false));
        logOf("mnist-master-0", "epoch 1\nepoch 2\n");
        logOf("mnist-worker-0", "epoch 1\n");
        assertEquals(0, logs("logs mnist"));
        assertEquals("[master-0] epoch 1\n[master-0] epoch 2\n[worker-0] epoch 1\n", out.toString(StandardCharsets.UTF_8));
        assertEquals("[worker-1] container pytorch has not started\n", err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void oneReplicaOfOneType() throws Exception {
        podsAre(pod("mnist-master-0", "master", true), pod("mnist-worker-0", "worker", true), pod("mnist-worker-1", "worker", true));
        logOf("mnist-worker-1", "rank 2\n");
        assertEquals(0, logs("logs mnist --type Worker --index 1"));
        assertEquals("[worker-1] rank 2\n", out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aSelectionThatNamesNoReplicaIsRefusedNamingWhatThereIs() {
        BadInput type = assertThrows(BadInput.class, () -> logs("logs mnist --type Chief"));
        assertEquals("error: job mnist has no replica type Chief: it has Master, Worker", type.getMessage());
        BadInput index = assertThrows(BadInput.class, () -> logs("logs mnist --type worker --index 2"));
        assertEquals("error: job mnist has 2 Worker replica(s): --index 2 is not one of them (0-1)", index.getMessage());
        assertEquals(0, server.getRequestCount(), "refused before asking the cluster");
    }

    @Test
    void aLogTheUserMayNotReadIsOneLine() {
        podsAre(pod("mnist-master-0", "master", true));
        server.expect().get().withPath("/api/v1/namespaces/team-a/pods/mnist-master-0/log?pretty=false&container=pytorch")
                .andReturn(403, new StatusBuilder().withCode(403).withReason("Forbidden").withMessage("forbidden").build()).always();
        Failure failure = assertThrows(Failure.class, () -> logs("logs mnist"));
        assertEquals("error: not allowed to get pods/log in namespace team-a (RBAC: your user needs the verb \"get\" on \"pods/log\")",
                failure.getMessage());
    }

    /**
     * A log stream opened on a kept-alive connection the server had just closed ends before its first
     * line: the next look opens it again, so the replica's lines are all there, each once.
     */
    @Test
    void aStreamWhoseConnectionClosedBeforeItsFirstLineIsReadAgain(@org.junit.jupiter.api.io.TempDir java.nio.file.Path folder)
            throws Exception {
        String log = "/api/v1/namespaces/team-a/pods/mnist-master-0/log";
        try (ScriptedApiServer apiServer = new ScriptedApiServer()) {
            apiServer.dropNext(log, 1).answer(log, 200, "epoch 1\nepoch 2\n")
                    .answer("/api/v1/namespaces/team-a/pods?", 200, Serialization.asJson(new PodListBuilder()
                            .withItems(pod("mnist-master-0", "master", true)).build()))
                    .answer("/api/v1/namespaces/team-a/events", 200, "{\"apiVersion\": \"v1\", \"kind\": \"EventList\", \"items\": []}")
                    // Running until the log has been read (or five looks have passed without it), then Succeeded.
                    .answer("/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs/mnist", 200, () -> """
                            {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "mnist", "namespace": "team-a"},
                             "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "torch"}]}}}}},
                             "status": {"phase": "%s"}}""".formatted(apiServer.answered().stream().anyMatch(p -> p.startsWith(log))
                                    || apiServer.requested().stream().filter(p -> p.contains("/pytorchjobs/")).count() > 5 ? "Succeeded" : "Running"));
            CliArguments args = CliArguments.parse(List.of("logs", "mnist", "-f", "--kubeconfig", apiServer.kubeconfig(folder).toString()));
            int exit = Kubeconfigs.readAsAUserWould(() -> {
                try (ClusterSession session = ClusterSession.open(args)) {
                    return new ReplicaLogs(session, args, new PrintStream(out, true, StandardCharsets.UTF_8),
                            new PrintStream(err, true, StandardCharsets.UTF_8)).run(session.job(new CliArguments.JobReference(
                                    java.util.Optional.of(CliArguments.JobKind.KUBEFLOW), "mnist")));
                }
            });
            assertEquals(0, exit, out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8));
            assertEquals("[master-0] epoch 1\n[master-0] epoch 2\n[torchjob] job mnist Succeeded\n", out.toString(StandardCharsets.UTF_8));
            assertEquals(2, apiServer.requested().stream().filter(p -> p.startsWith(log)).count(), "dropped once, then read");
        }
    }
}
