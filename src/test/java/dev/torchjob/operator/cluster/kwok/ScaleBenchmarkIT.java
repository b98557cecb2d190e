package dev.torchjob.operator.cluster.kwok;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import dev.torchjob.operator.cluster.BenchmarkedOperator;
import dev.torchjob.operator.cluster.ControlPlane;
import dev.torchjob.operator.cluster.OperatorContainer;
import dev.torchjob.operator.cluster.OperatorInstall;
import dev.torchjob.operator.cluster.OperatorProcess;
import dev.torchjob.operator.cluster.OperatorWrites;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.t9k.JobLabels;
import dev.torchjob.operator.t9k.T9kPlanner;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;

/**
 * The scale benchmark (not part of the test suite): JOBS jobs x 8 replicas submitted at once onto
 * kwok nodes of the real control plane. Measures, in one run on one fresh server: the raw pod-create
 * rate (the operator's own identity creating the same number of pods directly), then the time until
 * every operator pod exists and every job is Running, the operator's writes per job from the API
 * server's audit log, its CPU seconds, its resident memory (peak) and its heap after a full GC.
 *
 * <pre>./mvnw verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=ScaleBenchmarkIT \
 *     -Dtorchjob.benchmark=true [-Dtorchjob.benchmark.jobs=1000] [-Dtorchjob.benchmark.ssa=false]</pre>
 *
 * Results go to target/benchmark.txt. See docs/testing.md.
 */
@EnabledIfSystemProperty(named = "torchjob.benchmark", matches = "true")
class ScaleBenchmarkIT {
    static final int REPLICAS = 8;
    static final int CLIENT_THREADS = 16;

    @Test
    void thousandJobsOfEightReplicas() throws Exception {
        int jobs = Integer.getInteger("torchjob.benchmark.jobs", 1000);
        boolean ssa = Boolean.parseBoolean(System.getProperty("torchjob.benchmark.ssa", "true"));
        boolean image = Boolean.getBoolean("torchjob.benchmark.image");
        OperatorInstall install = OperatorInstall.get();
        KubernetesClient admin = install.cluster.admin();
        List<String> report = new ArrayList<>();
        report.add("jobs=" + jobs + " replicas=" + REPLICAS + " server-side-apply=" + ssa + " kwok nodes=" + ControlPlane.NODES
                + (image ? " operator: its image (" + OperatorContainer.containerfile() + ") as the Deployment runs it" : ""));

        // 1. The raw rate: the same number of pods, created directly with the operator's identity.
        double rawRate;
        try (KubernetesClient asOperator = new KubernetesClientBuilder()
                .withConfig(Config.fromKubeconfig(Files.readString(install.operatorKubeconfig()))).build()) {
            createNamespace(admin, "bench-raw");
            Map<String, Double> cpuBefore = install.cluster.cpuSeconds();
            long start = System.nanoTime();
            runAll(jobs * REPLICAS, i -> asOperator.pods().inNamespace("bench-raw").resource(rawPod(i)).create());
            double seconds = (System.nanoTime() - start) / 1e9;
            rawRate = jobs * REPLICAS / seconds;
            report.add(String.format("raw pod creates: %d in %.1f s = %.0f pods/s (%d client threads)", jobs * REPLICAS, seconds, rawRate, CLIENT_THREADS));
            // The scheduler and kwok digest these pods before the operator starts, so both phases
            // compete with the same downstream work: binding and starting their own pods only.
            awaitRunningPods(admin, "bench-raw", jobs * REPLICAS);
            report.add(String.format("raw pods all Running after %.1f s", (System.nanoTime() - start) / 1e9));
            report.add("control plane CPU for the raw pods (until all Running): " + cpuSince(cpuBefore, install.cluster));
            // Gone before the operator's turn: pods already on the nodes make every scheduling decision
            // dearer, and the operator's pods must not pay for the raw ones.
            deleteWithItsPods(admin, "bench-raw");
        }

        // 1b. The same objects the operator makes (each job's Service and pods, as its first pass plans
        // them, without owner), created directly by 16 threads, a job at a time each: what this server
        // can do with exactly the operator's output, without any operator.
        try (KubernetesClient asOperator = new KubernetesClientBuilder()
                .withConfig(Config.fromKubeconfig(Files.readString(install.operatorKubeconfig()))).build()) {
            createNamespace(admin, "bench-direct");
            Map<String, Double> cpuBefore = install.cluster.cpuSeconds();
            long start = System.nanoTime();
            runAll(jobs, i -> {
                PyTorchTrainingJob job = job(i);
                job.getMetadata().setNamespace("bench-direct");
                job.getMetadata().setUid("uid-" + i);
                var plan = T9kPlanner.plan(job, List.of(), false, Instant.now());
                for (var service : plan.servicesToCreate()) {
                    service.getMetadata().setOwnerReferences(null);
                    asOperator.services().inNamespace("bench-direct").resource(service).create();
                }
                for (Pod pod : plan.podsToCreate()) {
                    pod.getMetadata().setOwnerReferences(null);
                    asOperator.pods().inNamespace("bench-direct").resource(pod).create();
                }
            });
            double seconds = (System.nanoTime() - start) / 1e9;
            report.add(String.format("the operator's objects created directly (%d Services, %d pods): %.1f s = %.0f pods/s = %.2f x the raw rate",
                    jobs, jobs * REPLICAS, seconds, jobs * REPLICAS / seconds, jobs * REPLICAS / seconds / rawRate));
            awaitRunningPods(admin, "bench-direct", jobs * REPLICAS);
            report.add(String.format("their pods all Running after %.1f s", (System.nanoTime() - start) / 1e9));
            report.add("control plane CPU for them (until all Running): " + cpuSince(cpuBefore, install.cluster));
            deleteWithItsPods(admin, "bench-direct");
        }

        // 2. The operator: jobs submitted at once, pods and phases watched with informers.
        Map<String, Long> podSeen = new ConcurrentHashMap<>();
        Map<String, Long> jobRunning = new ConcurrentHashMap<>();
        createNamespace(admin, "bench");
        try (BenchmarkedOperator operator = image ? inItsImage(install, ssa, report)
                : install.newOperator(Map.of("torchjob.server-side-apply", String.valueOf(ssa)), true);
                var pods = admin.pods().inNamespace("bench").withLabel(JobLabels.OWNER_NAME).inform(handler(p -> podSeen.putIfAbsent(p.getMetadata().getName(), System.nanoTime())));
                var phases = admin.resources(PyTorchTrainingJob.class).inNamespace("bench").inform(handler(j -> {
                    if (j.getStatus() != null && j.getStatus().phase == JobPhase.Running) {
                        jobRunning.putIfAbsent(j.getMetadata().getName(), System.nanoTime());
                    }
                }))) {
            double cpuBefore = operator.cpuSeconds();
            Map<String, Double> controlPlaneBefore = install.cluster.cpuSeconds();
            long start = System.nanoTime();
            runAll(jobs, i -> admin.resources(PyTorchTrainingJob.class).inNamespace("bench").resource(job(i)).create());
            double submitted = (System.nanoTime() - start) / 1e9;
            long deadline = System.nanoTime() + Duration.ofMinutes(20).toNanos();
            while ((podSeen.size() < jobs * REPLICAS || jobRunning.size() < jobs) && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            double allPods = (podSeen.values().stream().mapToLong(Long::longValue).max().orElse(start) - start) / 1e9;
            double allRunning = (jobRunning.values().stream().mapToLong(Long::longValue).max().orElse(start) - start) / 1e9;
            double operatorRate = podSeen.size() / allPods;
            report.add(String.format("submitted %d jobs in %.1f s", jobs, submitted));
            report.add(String.format("every pod exists after %.1f s (%d pods) = %.0f pods/s = %.2f x the raw rate",
                    allPods, podSeen.size(), operatorRate, operatorRate / rawRate));
            report.add(String.format("every job Running after %.1f s (%d of %d)", allRunning, jobRunning.size(), jobs));
            report.add("control plane CPU for the jobs (until all Running): " + cpuSince(controlPlaneBefore, install.cluster));

            Thread.sleep(10_000); // idle: nothing changes, so nothing should be written
            OperatorWrites writes = OperatorWrites.read(install.cluster);
            long podCreates = writes.count("bench", "create", "pods", 201);
            long duplicateCreates = writes.count("bench", "create", "pods", 409);
            long services = writes.count(w -> "bench".equals(w.namespace()) && "services".equals(w.resource()) && "create".equals(w.verb()));
            long statusWrites = writes.count(w -> "bench".equals(w.namespace()) && "pytorchtrainingjobs/status".equals(w.resource()));
            long statusConflicts = writes.count(w -> "bench".equals(w.namespace()) && "pytorchtrainingjobs/status".equals(w.resource()) && w.code() == 409);
            long events = writes.count(w -> "bench".equals(w.namespace()) && "events".equals(w.resource()));
            long total = writes.count(w -> "bench".equals(w.namespace()));
            // Minimum to reach Running: 8 pods, 1 Service, 1 PodsCreated event, 2 status writes (Pending with
            // startTime when the pods are created, Running when all run).
            long minimum = (long) jobs * (REPLICAS + 1 + 1 + 2);
            report.add(String.format("operator writes: %d = %.2f x the minimum %d (pods %d, duplicate pod creates %d, services %d, status %d (409: %d), events %d)",
                    total, (double) total / minimum, minimum, podCreates, duplicateCreates, services, statusWrites, statusConflicts, events));
            report.add(String.format("status writes per job: %.2f", (double) statusWrites / jobs));
            report.add(String.format("operator CPU: %.1f s", operator.cpuSeconds() - cpuBefore));
            long totalAfterIdle = OperatorWrites.read(install.cluster).count(w -> "bench".equals(w.namespace()));
            report.add("idle writes (10 s after everything ran): " + (totalAfterIdle - total));
            report.add("operator memory: " + operator.residentMemory() + "; heap after full GC: " + operator.heapAfterGc());
        }
        Path out = Path.of("target", "benchmark.txt");
        Files.write(out, report, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        report.forEach(System.out::println);
    }

    /**
     * The operator in its image, run as the Deployment runs the pod (its memory and CPU limits, the
     * image's own heap settings), as the only operator; ready and leading.
     */
    private static OperatorContainer inItsImage(OperatorInstall install, boolean ssa, List<String> report) throws Exception {
        OperatorContainer.build();
        install.stopSharedOperator();
        OperatorContainer container = OperatorContainer.start("torchjob-operator-benchmark", install.cluster,
                OperatorInstall.token(install.cluster, OperatorInstall.SERVICE_ACCOUNT), Map.of("TORCHJOB_SERVER_SIDE_APPLY", String.valueOf(ssa)));
        Duration ready = container.awaitOk("/q/health/ready", Duration.ofSeconds(60));
        container.awaitLeading(Duration.ofSeconds(30));
        report.add(String.format("image: ready after %d ms, %s", ready.toMillis(), container.residentMemory()));
        return container;
    }

    /**
     * The operator's start, as the install runs it (leader election on) on an idle cluster: from the
     * process's start until its readiness check first passes, and its resident memory then. Five
     * starts, one after another. Run alone with {@code -Dit.test=ScaleBenchmarkIT#startToReady}.
     */
    @Test
    void startToReady() throws Exception {
        OperatorInstall install = OperatorInstall.get();
        install.stopSharedOperator();
        List<String> report = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            try (OperatorProcess operator = install.newOperator(Map.of(), true)) {
                report.add(String.format("start %d: ready after %d ms; %s", i + 1, operator.startToReady().toMillis(), operator.residentMemory()));
            }
        }
        Files.write(Path.of("target", "benchmark.txt"), report, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        report.forEach(System.out::println);
    }

    static void awaitRunningPods(KubernetesClient admin, String namespace, long count) throws InterruptedException {
        long running = 0;
        while (running < count) {
            Thread.sleep(2000);
            running = admin.pods().inNamespace(namespace).withField("status.phase", "Running").list().getItems().size();
        }
    }

    static void deleteWithItsPods(KubernetesClient admin, String namespace) throws InterruptedException {
        admin.namespaces().withName(namespace).delete();
        while (!admin.pods().inNamespace(namespace).list(new ListOptionsBuilder().withLimit(1L).build()).getItems().isEmpty()) {
            Thread.sleep(2000);
        }
    }

    /** Each component's CPU seconds since {@code before}, and their sum. */
    static String cpuSince(Map<String, Double> before, ControlPlane cluster) {
        Map<String, Double> now = cluster.cpuSeconds();
        StringBuilder out = new StringBuilder();
        double total = 0;
        for (var entry : now.entrySet()) {
            double used = entry.getValue() - before.getOrDefault(entry.getKey(), 0.0);
            total += used;
            out.append(String.format("%s %.1f s, ", entry.getKey(), used));
        }
        return out.append(String.format("total %.1f s", total)).toString();
    }

    interface Call {
        void run(int i) throws Exception;
    }

    static void runAll(int count, Call call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(CLIENT_THREADS);
        List<Future<?>> results = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int index = i;
            results.add(pool.submit(() -> {
                call.run(index);
                return null;
            }));
        }
        for (Future<?> result : results) {
            result.get();
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.MINUTES);
    }

    static <T> ResourceEventHandler<T> handler(java.util.function.Consumer<T> seen) {
        return new ResourceEventHandler<>() {
            @Override
            public void onAdd(T obj) {
                seen.accept(obj);
            }

            @Override
            public void onUpdate(T oldObj, T newObj) {
                seen.accept(newObj);
            }

            @Override
            public void onDelete(T obj, boolean deletedFinalStateUnknown) {
            }
        };
    }

    static void createNamespace(KubernetesClient admin, String name) throws InterruptedException {
        admin.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(name).endMetadata().build()).create();
        while (admin.serviceAccounts().inNamespace(name).withName("default").get() == null) {
            Thread.sleep(100);
        }
    }

    static Pod rawPod(int i) {
        return new PodBuilder().withNewMetadata().withName("raw-" + i).addToLabels("bench", "raw").endMetadata()
                .withNewSpec().withRestartPolicy("Never")
                .addNewContainer().withName("pytorch").withImage("torch").withCommand("python", "train.py").endContainer()
                .endSpec().build();
    }

    static PyTorchTrainingJob job(int i) {
        return io.fabric8.kubernetes.client.utils.Serialization.unmarshal("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: job-%d}
                spec:
                  replicaSpecs:
                  - type: master
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                  - type: worker
                    replicas: %d
                    template: {spec: {containers: [{name: pytorch, image: torch, command: [python, train.py]}]}}
                """.formatted(i, REPLICAS - 1), PyTorchTrainingJob.class);
    }
}
