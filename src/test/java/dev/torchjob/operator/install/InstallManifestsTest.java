package dev.torchjob.operator.install;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesList;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/** The install manifests a platform team applies: least privilege and a hardened Deployment. */
class InstallManifestsTest {
    static final KubernetesSerialization YAML = new KubernetesSerialization();

    static List<HasMetadata> load(String file) throws IOException {
        try (InputStream in = Files.newInputStream(Path.of("kubernetes", file))) {
            Object parsed = YAML.unmarshal(in);
            if (parsed instanceof KubernetesList list) {
                return list.getItems();
            }
            if (parsed instanceof List<?> list) {
                return list.stream().map(HasMetadata.class::cast).toList();
            }
            return List.of((HasMetadata) parsed);
        }
    }

    static <T> T only(List<HasMetadata> objects, Class<T> kind) {
        return objects.stream().filter(kind::isInstance).map(kind::cast).findFirst().orElseThrow();
    }

    /** resource -> verbs, for the rules of one API group. */
    static Map<String, Set<String>> verbs(List<PolicyRule> rules) {
        return rules.stream().flatMap(r -> r.getResources().stream().map(res -> Map.entry(res, r.getVerbs())))
                .collect(Collectors.toMap(Map.Entry::getKey, e -> Set.copyOf(e.getValue()), (a, b) -> {
                    var all = new java.util.HashSet<>(a);
                    all.addAll(b);
                    return Set.copyOf(all);
                }));
    }

    @Test
    void clusterRoleGrantsExactlyWhatTheOperatorUses() throws IOException {
        ClusterRole role = only(load("base/rbac.yaml"), ClusterRole.class);
        Map<String, Set<String>> verbs = verbs(role.getRules());
        assertEquals(Set.of("get", "list", "watch", "patch"), verbs.get("pytorchtrainingjobs"), "patch: Kueue's default LocalQueue label");
        assertEquals(Set.of("get", "update", "patch"), verbs.get("pytorchtrainingjobs/status"));
        assertEquals(Set.of("update"), verbs.get("pytorchtrainingjobs/finalizers"));
        assertEquals(Set.of("get", "list", "watch", "create", "delete", "patch"), verbs.get("pods"), "patch: a finished replica's sidecars");
        assertEquals(Set.of("get", "list", "watch", "create"), verbs.get("services"));
        assertEquals(Set.of("create", "list"), verbs.get("events"));
        assertEquals(Set.of("get", "create"), verbs.get("podgroups"));
        assertEquals(Set.of("get", "list", "watch", "create", "update", "patch", "delete"), verbs.get("workloads"));
        assertEquals(Set.of("get", "update", "patch"), verbs.get("workloads/status"));
        assertEquals(Set.of("update"), verbs.get("workloads/finalizers"));
        assertEquals(Set.of("get", "list", "watch"), verbs.get("resourceflavors"));
        assertEquals(Set.of("get", "list", "watch"), verbs.get("workloadpriorityclasses"));
        assertEquals(Set.of("get", "list", "watch"), verbs.get("priorityclasses"));
        assertEquals(Set.of("get", "list", "watch"), verbs.get("localqueues"));
        assertEquals(Set.of("get", "list", "watch"), verbs.get("namespaces"), "their labels: Kueue's managedJobsNamespaceSelector");
        assertEquals(Set.of("get"), verbs.get("appwrappers"), "a job's owner, once: Kueue queues an AppWrapper's jobs through it");
        assertEquals(Set.of("get"), verbs.get("jobsets"));
        role.getRules().forEach(rule -> {
            assertFalse(rule.getVerbs().contains("*"), "no wildcard verbs");
            assertFalse(rule.getResources().contains("*"), "no wildcard resources");
        });
    }

    /**
     * Kubernetes' admin and edit get the job kind to submit, change, scale and delete jobs, view to read them: by
     * aggregation, and nothing but the kind (a job's pods are the operator's to make).
     */
    @ParameterizedTest
    @CsvSource({"base/user-roles.yaml, batch.tensorstack.dev, pytorchtrainingjobs", "kubeflow/user-roles.yaml, kubeflow.org, pytorchjobs"})
    void theUsersRolesAddTheJobKindToKubernetesOwnRolesAndNothingElse(String file, String group, String kind) throws IOException {
        List<ClusterRole> roles = load(file).stream().map(ClusterRole.class::cast).toList();
        assertEquals(2, roles.size());
        ClusterRole edit = roles.get(0);
        ClusterRole view = roles.get(1);
        assertEquals(Set.of("rbac.authorization.k8s.io/aggregate-to-admin", "rbac.authorization.k8s.io/aggregate-to-edit"), aggregatedInto(edit));
        assertEquals(Set.of("rbac.authorization.k8s.io/aggregate-to-admin", "rbac.authorization.k8s.io/aggregate-to-edit",
                "rbac.authorization.k8s.io/aggregate-to-view"), aggregatedInto(view));
        assertEquals(Map.of(kind, Set.of("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
                kind + "/scale", Set.of("get", "patch", "update")), verbs(edit.getRules()));
        assertEquals(Map.of(kind, Set.of("get", "list", "watch"), kind + "/status", Set.of("get", "list", "watch"),
                kind + "/scale", Set.of("get", "list", "watch")), verbs(view.getRules()));
        for (ClusterRole role : roles) {
            assertTrue(role.getRules().stream().allMatch(r -> r.getApiGroups().equals(List.of(group))), role.getMetadata().getName());
        }
        String kustomization = Files.readString(Path.of("kubernetes", file).resolveSibling("kustomization.yaml"));
        assertTrue(kustomization.contains("- user-roles.yaml\n"), "installed with the rest");
    }

    static Set<String> aggregatedInto(ClusterRole role) {
        return role.getMetadata().getLabels().keySet().stream().filter(k -> k.startsWith("rbac.authorization.k8s.io/")).collect(Collectors.toSet());
    }

    @Test
    void leaderElectionLeaseIsDeclared() throws IOException {
        Role role = only(load("base/rbac.yaml"), Role.class);
        assertEquals("torchjob-system", role.getMetadata().getNamespace());
        assertEquals(Set.of("get", "create", "update", "patch"), verbs(role.getRules()).get("leases"));
        assertEquals(List.of("coordination.k8s.io"), role.getRules().get(0).getApiGroups());
    }

    @Test
    void deploymentRunsHardenedWithProbesLimitsAndLeaderElection() throws IOException {
        Deployment deployment = only(load("base/deployment.yaml"), Deployment.class);
        var pod = deployment.getSpec().getTemplate().getSpec();
        assertEquals("torchjob-operator", pod.getServiceAccountName());
        assertTrue(pod.getSecurityContext().getRunAsNonRoot());
        Container operator = pod.getContainers().get(0);
        assertFalse(operator.getSecurityContext().getAllowPrivilegeEscalation());
        assertTrue(operator.getSecurityContext().getReadOnlyRootFilesystem());
        assertEquals(List.of("ALL"), operator.getSecurityContext().getCapabilities().getDrop());
        assertEquals("/q/health/live", operator.getLivenessProbe().getHttpGet().getPath());
        assertEquals("/q/health/ready", operator.getReadinessProbe().getHttpGet().getPath());
        assertNotNull(operator.getResources().getRequests().get("memory"));
        assertNotNull(operator.getResources().getLimits().get("memory"));
        assertEquals("true", operator.getEnv().stream().filter(e -> e.getName().equals("TORCHJOB_LEADER_ELECTION_ENABLED"))
                .findFirst().orElseThrow().getValue(), "the Deployment's replicas elect a leader");
        assertTrue(operator.getEnv().stream().noneMatch(e -> e.getName().equals("QUARKUS_PROFILE")),
                "one build profile: a run-time profile would differ from the native executable's build profile");
    }

    @Test
    void leaderElectionIsAskedForInTheProfileEveryPackagedBuildRunsWith() throws IOException {
        // JOSDK consults the leader election bean only in these profiles; the bean reads the run-time switch.
        String properties = Files.readString(Path.of("src/main/resources/application.properties"));
        assertTrue(properties.contains("quarkus.operator-sdk.activate-leader-election-for-profiles=prod\n"));
    }

    @Test
    void kustomizationListsEveryManifest() throws IOException {
        String kustomization = Files.readString(Path.of("kubernetes/base/kustomization.yaml"));
        for (String file : List.of("crd/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml", "namespace.yaml", "rbac.yaml", "user-roles.yaml",
                "deployment.yaml")) {
            assertTrue(kustomization.contains(file), file);
            assertTrue(Files.exists(Path.of("kubernetes/base", file)), file);
        }
        assertTrue(Files.readString(Path.of("kubernetes/kustomization.yaml")).contains("- base\n"), "kubectl apply -k kubernetes/");
    }

    @Test
    void theKubeflowOverlayAddsExactlyWhatPyTorchJobsNeedAndTurnsTheControllerOn() throws IOException {
        ClusterRole role = only(load("kubeflow/rbac.yaml"), ClusterRole.class);
        Map<String, Set<String>> verbs = verbs(role.getRules());
        assertEquals(Set.of("get", "list", "watch", "patch", "delete"), verbs.get("pytorchjobs"),
                "delete: ttlSecondsAfterFinished; patch: Kueue's default LocalQueue label");
        assertEquals(Set.of("get", "update", "patch"), verbs.get("pytorchjobs/status"));
        assertEquals(Set.of("update"), verbs.get("pytorchjobs/finalizers"));
        assertEquals(Set.of("delete"), verbs.get("services"), "a replica's Service goes with its pod (clean-up, suspend)");
        assertEquals(Set.of("get", "list", "watch", "create", "update", "delete"), verbs.get("horizontalpodautoscalers"),
                "the elastic job's autoscaler");
        assertEquals(5, verbs.size());
        String kustomization = Files.readString(Path.of("kubernetes/kubeflow/kustomization.yaml"));
        for (String file : List.of("../base", "crd/pytorchjobs.kubeflow.org-v1.yml", "rbac.yaml")) {
            assertTrue(kustomization.contains("  - " + file), file);
        }
        assertTrue(kustomization.contains("name: TORCHJOB_KUBEFLOW_ENABLED") && kustomization.contains("value: \"true\""));
        String properties = Files.readString(Path.of("src/main/resources/application.properties"));
        assertTrue(properties.contains("\ntorchjob.kubeflow.enabled=false"), "off unless the overlay turns it on");
    }
}
