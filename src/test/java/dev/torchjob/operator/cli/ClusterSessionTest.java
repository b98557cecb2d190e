package dev.torchjob.operator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.cli.CliArguments.JobKind;
import dev.torchjob.operator.cli.CliArguments.JobReference;
import dev.torchjob.operator.cli.ClusterSession.Failure;
import dev.torchjob.operator.testing.Kubeconfigs;
import dev.torchjob.operator.testing.ScriptedApiServer;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;

/** What the command line says when the cluster refuses it, lacks a kind, or has no such job: one line naming what. */
@EnableKubernetesMockClient(https = false)
class ClusterSessionTest {
    static final String T9K_JOBS = "/apis/batch.tensorstack.dev/v1beta1/namespaces/team-a/pytorchtrainingjobs";
    static final String KUBEFLOW_JOBS = "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs";

    KubernetesMockServer server;
    KubernetesClient client;

    ClusterSession session() {
        return new ClusterSession(client, "team-a", "https://cluster.example:6443");
    }

    static io.fabric8.kubernetes.api.model.Status status(int code, String reason) {
        return new StatusBuilder().withCode(code).withReason(reason).withMessage(reason).build();
    }

    @Test
    void aRefusedListNamesTheVerbTheResourceAndTheNamespace() {
        server.expect().get().withPath(T9K_JOBS).andReturn(403, status(403, "Forbidden")).always();
        Failure failure = assertThrows(Failure.class, () -> session().jobs());
        assertEquals("error: not allowed to list pytorchtrainingjobs.batch.tensorstack.dev in namespace team-a (RBAC: your user needs "
                + "the verb \"list\" on \"pytorchtrainingjobs.batch.tensorstack.dev\")", failure.getMessage());
    }

    @Test
    void refusedCredentialsSayToLogInAgain() {
        server.expect().get().withPath(T9K_JOBS).andReturn(401, status(401, "Unauthorized")).always();
        Failure failure = assertThrows(Failure.class, () -> session().jobs());
        assertEquals("error: the cluster at https://cluster.example:6443 refused your credentials (401): log in again or check your "
                + "kubeconfig's user", failure.getMessage());
    }

    @Test
    void aKindWhoseCrdIsNotInstalledHasNoJobs() throws Failure {
        server.expect().get().withPath(T9K_JOBS).andReturn(404, status(404, "NotFound")).always();
        server.expect().get().withPath(KUBEFLOW_JOBS).andReturn(200, """
                {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJobList", "items": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                  "metadata": {"name": "mnist", "namespace": "team-a"},
                  "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "torch"}]}}}}}}]}
                """).always();
        List<JobView> jobs = session().jobs();
        assertEquals(List.of("mnist"), jobs.stream().map(JobView::name).toList());
        assertEquals(JobKind.KUBEFLOW, jobs.get(0).kind());
    }

    @Test
    void noJobOfThatNameSaysWhereItLooked() {
        Failure failure = assertThrows(Failure.class, () -> session().job(new JobReference(Optional.empty(), "mnist")));
        assertEquals("error: no PyTorchTrainingJob or PyTorchJob named mnist in namespace team-a", failure.getMessage());
        Failure ofOneKind = assertThrows(Failure.class, () -> session().job(new JobReference(Optional.of(JobKind.KUBEFLOW), "mnist")));
        assertEquals("error: no PyTorchJob named mnist in namespace team-a", ofOneKind.getMessage());
    }

    @Test
    void anUnreachableClusterSaysWhereAndWhatToCheck() throws Exception {
        int closed;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
            closed = socket.getLocalPort();
        }
        String url = "https://127.0.0.1:" + closed;
        try (KubernetesClient unreachable = new KubernetesClientBuilder().withConfig(new ConfigBuilder().withMasterUrl(url)
                .withRequestRetryBackoffLimit(0).withConnectionTimeout(2_000).build()).build();
                ClusterSession session = new ClusterSession(unreachable, "team-a", url)) {
            Failure failure = assertThrows(Failure.class, session::jobs);
            assertTrue(failure.getMessage().startsWith("error: cannot reach the cluster at " + url + " ("), failure.getMessage());
            assertTrue(failure.getMessage().endsWith("): check KUBECONFIG, --context and that the cluster is up"), failure.getMessage());
        }
    }

    /**
     * A JVM leaving with event loops blocked in epoll waits 300 ms for them: the session's own loops
     * are stopped when it closes, not left to the exit.
     */
    @Test
    void aClosedSessionLeavesNoEventLoopRunning(@org.junit.jupiter.api.io.TempDir java.nio.file.Path folder) throws Exception {
        server.expect().get().withPath(T9K_JOBS).andReturn(404, status(404, "NotFound")).always();
        server.expect().get().withPath(KUBEFLOW_JOBS).andReturn(404, status(404, "NotFound")).always();
        java.nio.file.Path kubeconfig = Kubeconfigs.write(folder.resolve("config"), server.url("/"), "team-a");
        java.util.Set<Thread> before = Thread.getAllStackTraces().keySet();
        int asked = server.getRequestCount();
        Kubeconfigs.readAsAUserWould(() -> {
            try (ClusterSession session = ClusterSession.open(CliArguments.parse(List.of("get", "--kubeconfig", kubeconfig.toString())))) {
                assertEquals(List.of(), session.jobs());
                assertTrue(Thread.getAllStackTraces().keySet().stream().anyMatch(t -> !before.contains(t) && t.getName().startsWith("vert.x-")),
                        "the session's requests run on event loops of its own");
            }
            return null;
        });
        assertEquals(asked + 2, server.getRequestCount(), "both kinds were asked of the kubeconfig's server");
        // Netty completes the loops' termination just before their threads return: a moment to finish.
        List<Thread> loops = Thread.getAllStackTraces().keySet().stream().filter(t -> !before.contains(t) && t.getName().startsWith("vert.x-"))
                .toList();
        for (Thread loop : loops) {
            loop.join(1_000);
        }
        List<String> left = loops.stream().filter(Thread::isAlive).map(Thread::getName).toList();
        assertEquals(List.of(), left);
    }

    /**
     * The HTTP client may send a request on a kept-alive connection the API server has just closed; a
     * follow that asks every second met that in CI and ended with "cannot reach the cluster". A read
     * whose connection closes under it is asked again on a new one, as kubectl does.
     */
    @Test
    void aReadWhoseConnectionClosesUnderItIsAskedAgain(@org.junit.jupiter.api.io.TempDir java.nio.file.Path folder) throws Exception {
        try (ScriptedApiServer apiServer = new ScriptedApiServer()) {
            apiServer.dropNext(T9K_JOBS, 1).answer(T9K_JOBS, 200, """
                    {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "PyTorchTrainingJobList",
                     "items": [{"metadata": {"name": "mnist", "namespace": "team-a"}}]}""");
            CliArguments args = CliArguments.parse(List.of("get", "--kubeconfig", apiServer.kubeconfig(folder).toString()));
            List<JobView> jobs = Kubeconfigs.readAsAUserWould(() -> {
                try (ClusterSession session = ClusterSession.open(args)) {
                    return session.jobs();
                }
            });
            assertEquals(List.of("mnist"), jobs.stream().map(JobView::name).toList());
            assertEquals(List.of(T9K_JOBS, T9K_JOBS, KUBEFLOW_JOBS), apiServer.requested(), "the dropped list, the same again, the other kind's");
        }
    }

    /** What the launcher's first call adds to fill its class-data archive asks nothing of the cluster. */
    @Test
    void readingWhatEveryVerbReadsForTheClassArchiveAsksNothing() {
        int before = server.getRequestCount();
        session().readOnceWhatEveryVerbReads();
        assertEquals(before, server.getRequestCount());
    }

    /** While a log is followed, only a refusal is the user's to hear; a pod that went away is found again on the next look. */
    @Test
    void aRefusalWhileFollowingIsOnlyA401OrA403() {
        ClusterSession session = session();
        assertEquals(Optional.of("error: not allowed to get pods/log in namespace team-a (RBAC: your user needs the verb \"get\" on "
                + "\"pods/log\")"), session.refusal("get", "pods/log", new KubernetesClientException(status(403, "Forbidden")))
                .map(Failure::getMessage));
        assertTrue(session.refusal("get", "pods/log", new KubernetesClientException(status(401, "Unauthorized"))).isPresent());
        assertEquals(Optional.empty(), session.refusal("get", "pods/log", new KubernetesClientException(status(404, "NotFound"))));
        assertEquals(Optional.empty(), session.refusal("get", "pods/log", new KubernetesClientException(status(500, "InternalError"))));
    }
}
