package dev.torchjob.operator.cluster.kwok;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import dev.torchjob.operator.cluster.ControlPlane;
import dev.torchjob.operator.cluster.Kubectl;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.reconciler.OperatorHarness;
import dev.torchjob.operator.reconciler.StatusWritingKubelet;

/**
 * The oldest Kubernetes docs/install.md claims, as its users meet it: its own kube-apiserver and
 * kubectl (OLDEST_KUBERNETES_VERSION) take the install commands, the CRDs' schemas, defaults and CEL
 * rules (transition rules included) answer as on the current version, the Helm chart is accepted, and
 * the operator runs jobs of both kinds against it. No scheduler or kubelet of that version runs here:
 * the test writes pod status as a kubelet would.
 */
class OldestKubernetesIT {
    static ControlPlane cluster;
    static Kubectl kubectl;
    static OperatorInstall install;
    static OperatorProcess operator;

    @BeforeAll
    static void start() {
        cluster = ControlPlane.oldestClaimed();
        kubectl = cluster.kubectl();
        install = OperatorInstall.into(cluster);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (operator != null) {
            operator.close();
        }
        if (cluster != null) {
            cluster.stop();
        }
    }

    @Test
    void theApiServerAndKubectlAreTheOldestVersionTheInstallGuideClaims() throws IOException {
        String oldest = Files.readAllLines(Path.of("tools/versions.env")).stream()
                .filter(l -> l.startsWith("OLDEST_KUBERNETES_VERSION=")).findFirst().orElseThrow().split("=", 2)[1];
        String version = kubectl.run("version", "-o", "json").orFail().out();
        assertEquals(2, version.split("\"gitVersion\": \"v" + java.util.regex.Pattern.quote(oldest) + "\"", -1).length - 1,
                "client and server: " + version);
        String minor = oldest.substring(0, oldest.lastIndexOf('.'));
        String guide = Files.readString(Path.of("docs/install.md"));
        assertTrue(guide.contains("**" + minor + " or newer.**") && guide.contains("Kubernetes " + oldest),
                "docs/install.md claims " + minor + " and names the version tested");
        assertTrue(Files.readString(Path.of("kubernetes/helm/torchjob-operator/Chart.yaml")).contains("kubeVersion: \">=" + minor + ".0-0\""));
    }

    @Test
    void everyInstallCommandOfTheDocsRuns() throws IOException {
        KubectlIT.everyInstallCommandRunsAsWritten(kubectl);
    }

    @ParameterizedTest
    @MethodSource("dev.torchjob.operator.cluster.kwok.ApiServerContractIT#examples")
    void everyExampleIsTaken(Path example) {
        ApiServerContractIT.appliesServerSideWithoutWarning(kubectl, install.namespace("example"), example);
    }

    @ParameterizedTest
    @MethodSource("dev.torchjob.operator.cluster.kwok.ApiServerContractIT#invalidJobs")
    void everyInvalidJobIsRefusedWithOurMessage(Path fixture) throws IOException {
        ApiServerContractIT.refusedWithOurMessage(kubectl, cluster.admin(), install.namespace("invalid"), fixture);
    }

    @Test
    void theTransitionRulesKeepFixedFieldsFixed() {
        ApiServerContractIT.fixedFieldsAreRefused(kubectl, install.namespace("immutable"));
    }

    @Test
    void theSchemaDefaultsArrive() {
        ApiServerContractIT.schemaDefaultsArrive(kubectl, cluster.admin(), install.namespace("defaults"));
    }

    @Test
    void theHelmChartIsAccepted() throws IOException {
        ApiServerContractIT.helmChartWithEveryValueSetIsAccepted(cluster);
    }

    /** The operator's informers, server-side-applied status, pod and Service writes and events on the old API server. */
    @Test
    void theOperatorRunsJobsOfBothKinds() {
        operator = install.newOperator(Map.of(), true);
        String namespace = install.namespace("run");
        OperatorHarness jobs = new OperatorHarness(cluster.admin(), namespace, new StatusWritingKubelet(cluster.admin(), namespace));
        jobs.runJob("OnFailure", "{backoffLimit: 2}");
        String master = jobs.pod("j-master-0").getMetadata().getUid();
        jobs.kubelet.exit("j-worker-1", 1);
        jobs.awaitJob("j", j -> j.getStatus().backoffCount == 1);
        jobs.awaitEvent("JobRestarting", "pod j-worker-1 (container pytorch) exited with code 1");
        jobs.awaitNewPod("j-master-0", master); // the job restarted as a group
        jobs.kubelet.exit("j-master-0", 0);
        assertEquals(JobPhase.Succeeded, jobs.awaitPhase("j", JobPhase.Succeeded).getStatus().phase);

        String kubeflowNamespace = install.namespace("kubeflow");
        OperatorHarness kubeflow = new OperatorHarness(cluster.admin(), kubeflowNamespace,
                new StatusWritingKubelet(cluster.admin(), kubeflowNamespace));
        kubeflow.submitPyTorchJob("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: kf}
                spec:
                  pytorchReplicaSpecs:
                    Master:
                      replicas: 1
                      template: {spec: {containers: [{name: pytorch, image: torch}]}}
                    Worker:
                      replicas: 1
                      template: {spec: {containers: [{name: pytorch, image: torch}]}}
                """);
        kubeflow.awaitPodNames("kf-master-0", "kf-worker-0");
        kubeflow.runAll();
        kubeflow.awaitState("kf", "Running");
        assertTrue(kubeflow.serviceNames().containsAll(java.util.List.of("kf-master-0", "kf-worker-0")), "one Service per replica");
    }
}
