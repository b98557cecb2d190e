package dev.torchjob.operator.install;

import static dev.torchjob.operator.install.InstallManifestsTest.load;
import static dev.torchjob.operator.install.InstallManifestsTest.only;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.marcnuri.helm.LintResult;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;

/**
 * The Helm chart, linted and rendered by real Helm: with defaults it installs what the kustomize
 * manifests install (the same RBAC, which the real-cluster tier proves is what the code uses, and the
 * same hardening); every value takes effect; bad values are refused before anything is installed.
 */
class HelmChartTest {
    static final Path EVERYTHING_ON = Path.of("src/test/resources/helm/everything-on.yaml");
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    @Test
    void lintsCleanInStrictMode() {
        LintResult result = HelmChart.lint();
        assertFalse(result.isFailed(), String.join("\n", result.getMessages()));
        assertTrue(result.getMessages().stream().noneMatch(m -> m.contains("[WARNING]") || m.contains("[ERROR]")),
                String.join("\n", result.getMessages()));
    }

    @Test
    void defaultsInstallWhatTheKustomizeManifestsInstall() throws IOException {
        List<HasMetadata> chart = HelmChart.render(null, Map.of());
        List<HasMetadata> rbac = load("base/rbac.yaml");

        assertEquals(grants(only(rbac, ClusterRole.class).getRules()), grants(operatorsRole(chart).getRules()),
                "the chart's ClusterRole grants exactly the install manifests' (kubernetes/base/rbac.yaml)");
        assertEquals(grants(only(rbac, Role.class).getRules()), grants(only(chart, Role.class).getRules()), "leader election");
        ClusterRoleBinding binding = only(chart, ClusterRoleBinding.class);
        assertEquals(HelmChart.RELEASE, binding.getSubjects().get(0).getName());
        assertEquals(HelmChart.NAMESPACE, binding.getSubjects().get(0).getNamespace());
        assertEquals(HelmChart.RELEASE, only(chart, ServiceAccount.class).getMetadata().getName());

        Deployment manifest = only(load("base/deployment.yaml"), Deployment.class);
        Deployment rendered = only(chart, Deployment.class);
        var manifestPod = manifest.getSpec().getTemplate().getSpec();
        var renderedPod = rendered.getSpec().getTemplate().getSpec();
        assertEquals(manifest.getSpec().getReplicas(), rendered.getSpec().getReplicas());
        assertEquals(manifestPod.getSecurityContext(), renderedPod.getSecurityContext(), "same pod hardening");
        assertEquals(manifestPod.getVolumes(), renderedPod.getVolumes());
        Container manifestOperator = manifestPod.getContainers().get(0);
        Container renderedOperator = renderedPod.getContainers().get(0);
        assertEquals(manifestOperator.getSecurityContext(), renderedOperator.getSecurityContext(), "same container hardening");
        assertEquals(manifestOperator.getResources(), renderedOperator.getResources());
        assertEquals(manifestOperator.getLivenessProbe(), renderedOperator.getLivenessProbe());
        assertEquals(manifestOperator.getReadinessProbe(), renderedOperator.getReadinessProbe());
        assertEquals(manifestOperator.getPorts(), renderedOperator.getPorts());
        assertEquals(manifestOperator.getVolumeMounts(), renderedOperator.getVolumeMounts());
        assertEquals("torchjob-operator:0.1.0", renderedOperator.getImage(), "the chart's appVersion");
        assertEquals(HelmChart.RELEASE, renderedPod.getServiceAccountName());
        Map<String, String> env = env(renderedOperator);
        assertEquals("true", env.get("TORCHJOB_LEADER_ELECTION_ENABLED"));
        assertEquals("false", env.get("TORCHJOB_KUBEFLOW_ENABLED"));
        assertEquals("true", env.get("TORCHJOB_KUEUE_ENABLED"));
        assertFalse(env.containsKey("TORCHJOB_KUEUE_MANAGE_JOBS_WITHOUT_QUEUE_NAME"), "jobs without a queue run, as Kueue's default");
        assertFalse(env.containsKey("TORCHJOB_KUEUE_LABEL_KEYS_TO_COPY"), "no label copied, as Kueue's default");
        assertFalse(env.containsKey("TORCHJOB_KUEUE_OBJECT_RETENTION_AFTER_DEACTIVATED_BY_KUEUE"), "kept, as Kueue's default");
        assertFalse(env.containsKey("TORCHJOB_KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR"), "the operator's default is Kueue's");
        assertEquals(dev.torchjob.operator.kueue.KueueIntegrations.KUEUE_DEFAULT, env.get("TORCHJOB_KUEUE_INTEGRATIONS"),
                "Kueue's shipped frameworks, written where a platform team changes them as it changes Kueue's");
        assertEquals("INFO", env.get("QUARKUS_LOG_CATEGORY__DEV_TORCHJOB__LEVEL"));
        assertFalse(env.containsKey("QUARKUS_OPERATOR_SDK_CONTROLLERS_PYTORCHTRAININGJOB_NAMESPACES"), "all namespaces");
        assertFalse(env.containsKey("QUARKUS_PROFILE"), "one build profile");

        CustomResourceDefinition crd = only(chart, CustomResourceDefinition.class);
        assertEquals("pytorchtrainingjobs.batch.tensorstack.dev", crd.getMetadata().getName());
        assertEquals(crdFile("kubernetes/base/crd/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml").getSpec(), crd.getSpec(),
                "the CRD the build generates, unchanged");
        assertEquals("keep", crd.getMetadata().getAnnotations().get("helm.sh/resource-policy"),
                "uninstalling the release must not delete every job");

        assertEquals(1, chart.stream().filter(Service.class::isInstance).count(), "the metrics Service");
        assertEquals(List.of(), chart.stream().filter(o -> o instanceof GenericKubernetesResource || o instanceof ConfigMap).toList(),
                "no Prometheus Operator objects or dashboard unless asked for");
    }

    @Test
    void everyValueTakesEffect() throws IOException {
        List<HasMetadata> chart = HelmChart.render(EVERYTHING_ON, Map.of());

        Deployment deployment = only(chart, Deployment.class);
        var pod = deployment.getSpec().getTemplate().getSpec();
        Container operator = pod.getContainers().get(0);
        assertEquals(3, deployment.getSpec().getReplicas());
        assertEquals("registry.example.com/ml/torchjob-operator:9.9.9", operator.getImage());
        assertEquals("Always", operator.getImagePullPolicy());
        assertEquals("registry-credentials", pod.getImagePullSecrets().get(0).getName());
        assertEquals("1Gi", operator.getResources().getLimits().get("memory").toString());
        assertEquals("ml-platform", deployment.getSpec().getTemplate().getMetadata().getAnnotations().get("example.com/team"));
        assertEquals("42", deployment.getSpec().getTemplate().getMetadata().getLabels().get("example.com/cost-center"));
        assertEquals("", pod.getNodeSelector().get("node-role.kubernetes.io/control-plane"));
        assertEquals("NoSchedule", pod.getTolerations().get(0).getEffect());
        assertEquals("system-cluster-critical", pod.getPriorityClassName());
        Map<String, String> env = env(operator);
        assertEquals("training-operator-lease", env.get("TORCHJOB_LEADER_ELECTION_LEASE_NAME"));
        assertEquals("team-a,team-b", env.get("QUARKUS_OPERATOR_SDK_CONTROLLERS_PYTORCHTRAININGJOB_NAMESPACES"));
        assertEquals("team-a,team-b", env.get("QUARKUS_OPERATOR_SDK_CONTROLLERS_PYTORCHJOB_NAMESPACES"));
        assertEquals("true", env.get("TORCHJOB_KUBEFLOW_ENABLED"));
        assertEquals("volcano", env.get("TORCHJOB_GANG_SCHEDULER_NAME"));
        assertEquals("DEBUG", env.get("QUARKUS_LOG_CATEGORY__DEV_TORCHJOB__LEVEL"));
        assertEquals("25", env.get("QUARKUS_OPERATOR_SDK_CONCURRENT_RECONCILIATION_THREADS"));
        assertEquals("10m", env.get("TORCHJOB_RESTART_BACKOFF_MAX"));
        assertEquals("true", env.get("TORCHJOB_KUEUE_MANAGE_JOBS_WITHOUT_QUEUE_NAME"));
        assertEquals("example.com/cost-center,example.com/project", env.get("TORCHJOB_KUEUE_LABEL_KEYS_TO_COPY"));
        assertEquals("1h", env.get("TORCHJOB_KUEUE_OBJECT_RETENTION_AFTER_DEACTIVATED_BY_KUEUE"));
        var integrations = dev.torchjob.operator.kueue.KueueIntegrations.parse(List.of(env.get("TORCHJOB_KUEUE_INTEGRATIONS").split(",")));
        assertTrue(integrations.manages("example.com/v1", "MyWrapper") && integrations.manages("workload.codeflare.dev/v1beta2", "AppWrapper")
                && !integrations.manages("ray.io/v1", "RayJob"), "Kueue's frameworks and external frameworks, as given");
        // Kueue's selector, as its configuration writes it, read by the operator as it is.
        var selector = dev.torchjob.operator.kueue.ManagedJobsNamespaces.parse(env.get("TORCHJOB_KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR"),
                Set.of());
        assertEquals("kueue-managed=true,kubernetes.io/metadata.name notin (kube-system)", selector.describe());
        Path everyNamespace = Files.createTempFile("every-namespace", ".yaml");
        Files.writeString(everyNamespace, "kueue: {managedJobsNamespaceSelector: {}}\n");
        assertEquals("{}", env(only(HelmChart.render(everyNamespace, Map.of()), Deployment.class).getSpec().getTemplate().getSpec()
                .getContainers().get(0)).get("TORCHJOB_KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR"), "{} is every namespace, as in Kueue");
        Files.delete(everyNamespace);

        // Namespace-scoped: a Role per watched namespace with everything the operator does to jobs
        // there; cluster-wide only the reads Kueue needs. Together: the manifests' grants, Kubeflow's included.
        List<Role> roles = chart.stream().filter(Role.class::isInstance).map(Role.class::cast)
                .filter(r -> !r.getMetadata().getName().endsWith("-leader-election")).toList();
        assertEquals(List.of("team-a", "team-b"), roles.stream().map(r -> r.getMetadata().getNamespace()).toList());
        assertEquals(List.of("team-a", "team-b"), chart.stream().filter(RoleBinding.class::isInstance)
                .map(b -> b.getMetadata().getNamespace()).filter(n -> !n.equals(HelmChart.NAMESPACE)).toList());
        assertTrue(chart.stream().noneMatch(o -> !userRoles(List.of(o)).isEmpty()), "userRoles.aggregate: false, none aggregated");
        ClusterRole clusterReads = operatorsRole(chart);
        Set<String> granted = new HashSet<>(grants(roles.get(0).getRules()));
        granted.addAll(grants(clusterReads.getRules()));
        Set<String> manifests = new HashSet<>(grants(only(load("base/rbac.yaml"), ClusterRole.class).getRules()));
        manifests.addAll(grants(only(load("kubeflow/rbac.yaml"), ClusterRole.class).getRules()));
        manifests.addAll(grants(only(load("gang-scheduling/volcano/rbac.yaml"), ClusterRole.class).getRules()));
        assertEquals(manifests, granted, "kubernetes/base/rbac.yaml, kubernetes/kubeflow/rbac.yaml and kubernetes/gang-scheduling/volcano/rbac.yaml, split by scope");
        assertTrue(grants(clusterReads.getRules()).stream().allMatch(g -> g.endsWith(":get") || g.endsWith(":list") || g.endsWith(":watch")),
                "nothing but reads cluster-wide");

        List<CustomResourceDefinition> crds = chart.stream().filter(CustomResourceDefinition.class::isInstance)
                .map(CustomResourceDefinition.class::cast).toList();
        assertEquals(List.of("pytorchtrainingjobs.batch.tensorstack.dev", "pytorchjobs.kubeflow.org"),
                crds.stream().map(c -> c.getMetadata().getName()).toList());
        assertEquals(crdFile("kubernetes/kubeflow/crd/pytorchjobs.kubeflow.org-v1.yml").getSpec(), crds.get(1).getSpec());
        assertTrue(crds.stream().allMatch(c -> c.getMetadata().getAnnotations() == null
                || !c.getMetadata().getAnnotations().containsKey("helm.sh/resource-policy")), "crds.keep=false");

        GenericKubernetesResource monitor = kind(chart, "ServiceMonitor");
        assertEquals("kube-prometheus-stack", monitor.getMetadata().getLabels().get("release"));
        JsonNode monitorSpec = YAML.valueToTree(monitor.getAdditionalProperties().get("spec"));
        assertEquals("15s", monitorSpec.at("/endpoints/0/interval").asText());
        assertEquals("/q/metrics", monitorSpec.at("/endpoints/0/path").asText());
        GenericKubernetesResource rule = kind(chart, "PrometheusRule");
        assertEquals(YAML.readTree(Path.of("kubernetes/monitoring/alert-rules.yaml").toFile()).get("groups"),
                YAML.valueToTree(rule.getAdditionalProperties().get("spec")).get("groups"), "the promtool-tested rules");
        ConfigMap dashboard = only(chart, ConfigMap.class);
        assertEquals("monitoring", dashboard.getMetadata().getNamespace());
        assertEquals("1", dashboard.getMetadata().getLabels().get("grafana_dashboard"));
        assertEquals(YAML.readTree(Path.of("kubernetes/monitoring/grafana-dashboard.json").toFile()),
                YAML.readTree(dashboard.getData().get("torchjob-operator.json")));
    }

    @Test
    void kueueOffGrantsNothingOfKueueAndTellsTheOperator() {
        List<HasMetadata> chart = HelmChart.render(null, Map.of("kueue.enabled", false));
        assertTrue(grants(operatorsRole(chart).getRules()).stream()
                .noneMatch(g -> g.startsWith("kueue.x-k8s.io/") || g.startsWith("scheduling.k8s.io/")));
        assertEquals("false", env(only(chart, Deployment.class).getSpec().getTemplate().getSpec().getContainers().get(0))
                .get("TORCHJOB_KUEUE_ENABLED"));
        List<HasMetadata> holding = HelmChart.render(null, Map.of("kueue.enabled", false, "kueue.manageJobsWithoutQueueName", true));
        assertFalse(env(only(holding, Deployment.class).getSpec().getTemplate().getSpec().getContainers().get(0))
                .containsKey("TORCHJOB_KUEUE_MANAGE_JOBS_WITHOUT_QUEUE_NAME"), "nothing is held where the operator leaves Kueue alone");
    }

    /**
     * Kubernetes' admin and edit get the job kinds served to submit and manage, view to read them: the rights of the
     * manifests' users' roles, Kubeflow's kind only where it is served.
     */
    @Test
    void theUsersRolesAreTheManifestsForTheKindsServed() throws IOException {
        assertEquals(userRoles(load("base/user-roles.yaml")), userRoles(HelmChart.render(null, Map.of())));
        List<HasMetadata> both = new java.util.ArrayList<>(load("base/user-roles.yaml"));
        both.addAll(load("kubeflow/user-roles.yaml"));
        assertEquals(userRoles(both), userRoles(HelmChart.render(null, Map.of("kubeflow.enabled", true))));
        assertRefused(Map.of("userRoles.aggregate", "yes"), "userRoles");
    }

    /** The grants of ClusterRoles aggregated into Kubernetes' own, by the roles they are aggregated into. */
    static Map<Set<String>, Set<String>> userRoles(List<HasMetadata> objects) {
        Map<Set<String>, Set<String>> grants = new java.util.HashMap<>();
        objects.stream().filter(ClusterRole.class::isInstance).map(ClusterRole.class::cast).forEach(role -> {
            Set<String> into = role.getMetadata().getLabels().keySet().stream().filter(k -> k.startsWith("rbac.authorization.k8s.io/aggregate-to-"))
                    .collect(Collectors.toSet());
            if (!into.isEmpty()) {
                grants.computeIfAbsent(into, k -> new HashSet<>()).addAll(grants(role.getRules()));
            }
        });
        return grants;
    }

    /** The operator's own ClusterRole: the one not aggregated into Kubernetes' user-facing roles. */
    static ClusterRole operatorsRole(List<HasMetadata> chart) {
        return chart.stream().filter(ClusterRole.class::isInstance).map(ClusterRole.class::cast)
                .filter(r -> userRoles(List.of(r)).isEmpty()).findFirst().orElseThrow();
    }

    /** Each gang scheduler's value grants, cluster-wide as the overlay does, what that overlay's rbac.yaml grants, and sets what it sets. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"volcano, volcano", "kubernetes, kubernetes", "scheduler-plugins-scheduler, scheduler-plugins"})
    void eachGangSchedulerGetsWhatItsOverlayGrants(String setting, String overlay) throws IOException {
        List<HasMetadata> chart = HelmChart.render(null, Map.of("kubeflow.enabled", true, "kubeflow.gangSchedulerName", setting));
        assertEquals(setting, env(only(chart, Deployment.class).getSpec().getTemplate().getSpec().getContainers().get(0))
                .get("TORCHJOB_GANG_SCHEDULER_NAME"));
        Set<String> overlays = grants(only(load("gang-scheduling/" + overlay + "/rbac.yaml"), ClusterRole.class).getRules());
        assertTrue(grants(operatorsRole(chart).getRules()).containsAll(overlays), overlays.toString());
        assertTrue(Files.readString(Path.of("kubernetes/gang-scheduling", overlay, "kustomization.yaml"))
                .contains("name: TORCHJOB_GANG_SCHEDULER_NAME\n          value: " + setting + "\n"), "the overlay sets the same");
    }

    @Test
    void oneReplicaWithoutLeaderElectionNeedsNoLease() {
        List<HasMetadata> chart = HelmChart.render(null, Map.of("replicas", 1, "leaderElection.enabled", false));
        assertTrue(chart.stream().noneMatch(Role.class::isInstance), "no Lease, no Role for one");
        assertEquals("false", env(only(chart, Deployment.class).getSpec().getTemplate().getSpec().getContainers().get(0))
                .get("TORCHJOB_LEADER_ELECTION_ENABLED"));
    }

    @Test
    void badValuesAreRefusedWithWhatIsWrong() {
        assertRefused(Map.of("logLevel", "VERBOSE"), "logLevel", "INFO");
        assertRefused(Map.of("replica", 3), "replica");
        assertRefused(Map.of("watchNamespaces", "team-a"), "watchNamespaces");
        assertRefused(Map.of("replicas", 2, "leaderElection.enabled", false), "leaderElection.enabled=true");
        assertRefused(Map.of("metrics.serviceMonitor.enabled", true, "metrics.service.enabled", false), "metrics.service.enabled");
        assertRefused(Map.of("kueue.objectRetentionPolicies.workloads.afterDeactivatedByKueue", "1h30m"), "afterDeactivatedByKueue");
        assertRefused(Map.of("kueue.managedJobsNamespaceSelector.matchExpressions[0].key", "a",
                "kueue.managedJobsNamespaceSelector.matchExpressions[0].operator", "in"), "operator");
        assertRefused(Map.of("kueue.managedJobsNamespaceSelector.matchLabel.a", "b"), "matchLabel");
    }

    @Test
    void extraEnvThatOnlyTheJvmWouldHonourIsRefused() {
        assertRefused(Map.of("extraEnv[0].name", "QUARKUS_KUBERNETES_CLIENT_API_SERVER_URL", "extraEnv[0].value", "https://10.0.0.1"),
                "extraEnv: QUARKUS_KUBERNETES_CLIENT_API_SERVER_URL sets quarkus.kubernetes-client.api-server-url, which Quarkus fixes "
                        + "when the operator is built: the native executable ignores it");
        assertRefused(Map.of("extraEnv[0].name", "QUARKUS_LOG_CATEGORY__IO_FABRIC8__MIN_LEVEL", "extraEnv[0].value", "TRACE"),
                "quarkus.log.category.\"categories\".min-level");
        assertRefused(Map.of("extraEnv[0].name", "QUARKUS_PROFILE", "extraEnv[0].value", "prod,cluster"),
                "QUARKUS_PROFILE sets quarkus.profile");
        assertRefused(Map.of("extraEnv[0].value", "x"), "name");
        // Run-time settings and the client's own keys pass, after the chart's own.
        Container operator = only(HelmChart.render(null, Map.of("extraEnv[0].name", "QUARKUS_LOG_LEVEL", "extraEnv[0].value", "DEBUG",
                "extraEnv[1].name", "KUBERNETES_NAMESPACE", "extraEnv[1].value", "team-a")), Deployment.class)
                .getSpec().getTemplate().getSpec().getContainers().get(0);
        assertEquals("DEBUG", env(operator).get("QUARKUS_LOG_LEVEL"));
        assertEquals("team-a", env(operator).get("KUBERNETES_NAMESPACE"));
    }

    @Test
    void chartFilesAreTheOnesTheRestOfTheRepositoryTests() throws IOException {
        // Helm reads only files inside the chart: these are copies, kept equal here.
        for (String file : List.of("base/crd/pytorchtrainingjobs.batch.tensorstack.dev-v1.yml", "kubeflow/crd/pytorchjobs.kubeflow.org-v1.yml",
                "monitoring/grafana-dashboard.json", "monitoring/alert-rules.yaml")) {
            Path copy = HelmChart.DIRECTORY.resolve("files").resolve(Path.of(file).getFileName());
            assertEquals(Files.readString(Path.of("kubernetes", file)), Files.readString(copy),
                    copy + " differs from kubernetes/" + file + ": copy it again");
        }
    }

    @Test
    void everythingRenderedIsAcceptedByTheMockApiServer() {
        // The same CRUD mock server the mock test tier and the local mode use.
        KubernetesMockServer server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
                new KubernetesCrudDispatcher(List.of()), false);
        server.init();
        try (KubernetesClient client = server.createClient()) {
            List<HasMetadata> chart = HelmChart.render(EVERYTHING_ON, Map.of());
            for (HasMetadata object : chart) {
                if (object.getMetadata().getNamespace() == null && !clusterScoped(object)) {
                    object.getMetadata().setNamespace(HelmChart.NAMESPACE);
                }
                if (object instanceof GenericKubernetesResource generic) {
                    client.genericKubernetesResources(new ResourceDefinitionContext.Builder()
                            .withGroup(generic.getApiVersion().split("/")[0]).withVersion(generic.getApiVersion().split("/")[1])
                            .withKind(generic.getKind()).withPlural(generic.getKind().toLowerCase() + "s").withNamespaced(true).build())
                            .inNamespace(generic.getMetadata().getNamespace()).resource(generic).create();
                } else {
                    client.resource(object).create();
                }
            }
            assertEquals(3, client.apps().deployments().inNamespace(HelmChart.NAMESPACE).withName(HelmChart.RELEASE).get()
                    .getSpec().getReplicas());
            assertEquals(2, client.rbac().roles().inAnyNamespace().list().getItems().stream()
                    .filter(r -> r.getMetadata().getName().equals(HelmChart.RELEASE)).count());
        } finally {
            server.destroy();
        }
    }

    private static boolean clusterScoped(HasMetadata object) {
        return object instanceof ClusterRole || object instanceof ClusterRoleBinding || object instanceof CustomResourceDefinition;
    }

    private static void assertRefused(Map<String, Object> values, String... mentions) {
        Exception refused = assertThrows(Exception.class, () -> HelmChart.renderText(null, values), values.toString());
        for (String mention : mentions) {
            assertTrue(refused.getMessage().contains(mention), values + " → " + refused.getMessage());
        }
    }

    /** Each grant as "group/resource:verb": rules compared by what they allow, not how they are grouped. */
    static Set<String> grants(List<PolicyRule> rules) {
        return rules.stream().flatMap(rule -> rule.getApiGroups().stream().flatMap(group -> rule.getResources().stream()
                .flatMap(resource -> rule.getVerbs().stream().map(verb -> group + "/" + resource + ":" + verb))))
                .collect(Collectors.toSet());
    }

    private static Map<String, String> env(Container container) {
        return container.getEnv().stream().filter(e -> e.getValue() != null).collect(Collectors.toMap(EnvVar::getName, EnvVar::getValue));
    }

    private static GenericKubernetesResource kind(List<HasMetadata> objects, String kind) {
        return objects.stream().filter(o -> o instanceof GenericKubernetesResource && o.getKind().equals(kind))
                .map(GenericKubernetesResource.class::cast).findFirst().orElseThrow(() -> new AssertionError("no " + kind));
    }

    private static CustomResourceDefinition crdFile(String file) throws IOException {
        return InstallManifestsTest.YAML.unmarshal(Files.readString(Path.of(file)), CustomResourceDefinition.class);
    }
}
