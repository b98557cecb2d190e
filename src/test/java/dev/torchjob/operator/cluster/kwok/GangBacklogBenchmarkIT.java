package dev.torchjob.operator.cluster.kwok;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import dev.torchjob.operator.api.kubeflow.KubeflowCondition;
import dev.torchjob.operator.api.kubeflow.PyTorchJob;
import dev.torchjob.operator.cluster.ControlPlane;
import dev.torchjob.operator.cluster.GangSchedulers;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.cluster.OperatorWrites;
import dev.torchjob.operator.kubeflow.KubeflowLabels;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The backlog benchmark for gang scheduling (not part of the test suite): JOBS PyTorchJobs of a master
 * and 7 workers submitted at once onto the kwok nodes of the real control plane, first without a gang
 * scheduler, then under each gang scheduler the operator can hand them to — Volcano (its scheduler and
 * controller manager running, the setting {@code volcano}), scheduler-plugins' coscheduling (its
 * kube-scheduler as a second scheduler) and Kubernetes' own (the control plane's kube-scheduler, the
 * Workload API's PodGroups) — one after the other on the same server. Measures the time until every pod
 * exists, is placed and every job is Running, and the operator's writes per job from the API server's
 * audit log.
 *
 * <pre>./mvnw verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=GangBacklogBenchmarkIT \
 *     -Dtorchjob.benchmark=true [-Dtorchjob.benchmark.jobs=500] [-Dtorchjob.benchmark.gangs=none,volcano,scheduler-plugins,kubernetes]</pre>
 *
 * Results go to target/benchmark.txt. See docs/testing.md.
 */
@EnabledIfSystemProperty(named = "torchjob.benchmark", matches = "true")
class GangBacklogBenchmarkIT {
    static final int REPLICAS = 8;

    /** A gang scheduler under test: its name in the report, the operator's setting (none: no gang), how it is started. */
    record Gang(String what, String setting, java.util.function.Function<ControlPlane, GangSchedulers> start) {
    }

    static final Map<String, Gang> GANGS = Map.of(
            "none", new Gang("no gang scheduler", null, cluster -> null),
            "volcano", new Gang("Volcano", "volcano", GangSchedulers::volcano),
            "scheduler-plugins", new Gang("scheduler-plugins' coscheduling", GangSchedulers.COSCHEDULING, GangSchedulers::coscheduling),
            "kubernetes", new Gang("Kubernetes' own", "kubernetes", GangSchedulers::kubernetes));

    @Test
    void kubeflowJobsWithoutAndWithEachGangScheduler() throws Exception {
        int jobs = Integer.getInteger("torchjob.benchmark.jobs", 500);
        OperatorInstall install = OperatorInstall.get();
        install.stopSharedOperator();
        List<String> report = new ArrayList<>();
        report.add("PyTorchJobs=" + jobs + " replicas=" + REPLICAS + " (master + " + (REPLICAS - 1) + " workers) kwok nodes=" + ControlPlane.NODES);
        for (String name : System.getProperty("torchjob.benchmark.gangs", "none,volcano,scheduler-plugins,kubernetes").split(",")) {
            Gang gang = java.util.Objects.requireNonNull(GANGS.get(name), "no gang scheduler " + name + " (" + GANGS.keySet() + ")");
            String namespace = "bench-" + name;
            try (GangSchedulers schedulers = gang.start().apply(install.cluster);
                    OperatorProcess operator = install.newOperator(gang.setting() == null ? Map.of()
                            : Map.of("torchjob.gang-scheduler-name", gang.setting()), true)) {
                report.addAll(backlog(install, namespace, jobs, gang.what()));
            }
            ScaleBenchmarkIT.deleteWithItsPods(install.cluster.admin(), namespace);
        }
        Files.write(Path.of("target", "benchmark.txt"), report, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        report.forEach(System.out::println);
    }

    /** Submits the jobs into a new namespace and reports when every pod exists and every job runs, and the writes. */
    static List<String> backlog(OperatorInstall install, String namespace, int jobs, String what) throws Exception {
        KubernetesClient admin = install.cluster.admin();
        ScaleBenchmarkIT.createNamespace(admin, namespace);
        Map<String, Long> podSeen = new ConcurrentHashMap<>();
        Map<String, Long> podPlaced = new ConcurrentHashMap<>();
        Map<String, Long> jobRunning = new ConcurrentHashMap<>();
        List<String> report = new ArrayList<>();
        try (var pods = admin.pods().inNamespace(namespace).withLabel(KubeflowLabels.JOB_NAME).inform(ScaleBenchmarkIT.handler(p -> {
                    podSeen.putIfAbsent(p.getMetadata().getName(), System.nanoTime());
                    if (p.getSpec().getNodeName() != null) {
                        podPlaced.putIfAbsent(p.getMetadata().getName(), System.nanoTime());
                    }
                }));
                var states = admin.resources(PyTorchJob.class).inNamespace(namespace).inform(ScaleBenchmarkIT.handler(j -> {
                    if (running(j)) {
                        jobRunning.putIfAbsent(j.getMetadata().getName(), System.nanoTime());
                    }
                }))) {
            Map<String, Double> controlPlaneBefore = install.cluster.cpuSeconds();
            long start = System.nanoTime();
            ScaleBenchmarkIT.runAll(jobs, i -> admin.resources(PyTorchJob.class).inNamespace(namespace).resource(job(admin, i)).create());
            double submitted = (System.nanoTime() - start) / 1e9;
            long deadline = System.nanoTime() + Duration.ofMinutes(20).toNanos();
            while ((podSeen.size() < jobs * REPLICAS || podPlaced.size() < jobs * REPLICAS || jobRunning.size() < jobs)
                    && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            report.add(String.format("%s: submitted in %.1f s; every pod exists after %s, every pod placed after %s, every job Running after %s",
                    what, submitted, last(podSeen, jobs * REPLICAS, start), last(podPlaced, jobs * REPLICAS, start), last(jobRunning, jobs, start)));
            report.add(what + ": control plane CPU (until all Running): " + ScaleBenchmarkIT.cpuSince(controlPlaneBefore, install.cluster));
            Thread.sleep(10_000); // idle: nothing should be written
            OperatorWrites writes = OperatorWrites.read(install.cluster);
            long total = writes.count(w -> namespace.equals(w.namespace()));
            report.add(String.format("%s: operator writes per job %.2f (pods %.2f, Services %.2f, PodGroups %.2f, status %.2f, events %.2f; duplicate pod creates %d)",
                    what, (double) total / jobs, perJob(writes, namespace, "pods", jobs), perJob(writes, namespace, "services", jobs),
                    perJob(writes, namespace, "podgroups", jobs), perJob(writes, namespace, "pytorchjobs/status", jobs),
                    perJob(writes, namespace, "events", jobs), writes.count(namespace, "create", "pods", 409)));
            List<String> waits = admin.v1().events().inNamespace(namespace).list().getItems().stream()
                    .filter(e -> "ReplicaCannotStart".equals(e.getReason())).map(e -> e.getMessage()).toList();
            report.add(String.format("%s: jobs told they wait (ReplicaCannotStart events): %d%s", what, waits.size(),
                    waits.isEmpty() ? "" : ", e.g. \"" + waits.get(0) + "\""));
        }
        return report;
    }

    static boolean running(PyTorchJob job) {
        List<KubeflowCondition> conditions = job.getStatus() == null ? null : job.getStatus().conditions;
        return conditions != null && !conditions.isEmpty() && "Running".equals(conditions.get(conditions.size() - 1).type);
    }

    static String last(Map<String, Long> seen, int expected, long start) {
        String time = String.format("%.1f s", (seen.values().stream().mapToLong(Long::longValue).max().orElse(start) - start) / 1e9);
        return seen.size() == expected ? time : time + " (only " + seen.size() + " of " + expected + " within 20 min)";
    }

    static double perJob(OperatorWrites writes, String namespace, String resource, int jobs) {
        return (double) writes.count(w -> namespace.equals(w.namespace()) && resource.equals(w.resource())) / jobs;
    }

    static PyTorchJob job(KubernetesClient client, int i) {
        return client.getKubernetesSerialization().unmarshal("""
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: job-%d}
                spec:
                  pytorchReplicaSpecs:
                    Master:
                      template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                    Worker:
                      replicas: %d
                      template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                """.formatted(i, REPLICAS - 1), PyTorchJob.class);
    }
}
