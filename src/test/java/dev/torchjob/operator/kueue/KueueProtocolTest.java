package dev.torchjob.operator.kueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.api.PyTorchTrainingJob;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpecBuilder;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.TolerationBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/** Kueue's Workload protocol, the parts that are pure: the Workload a job asks with, and what an admission asks of its pods. */
class KueueProtocolTest {
    static final KubernetesSerialization YAML = new KubernetesSerialization();

    static PyTorchTrainingJob job(String name) {
        PyTorchTrainingJob job = YAML.unmarshal("""
                apiVersion: batch.tensorstack.dev/v1beta1
                kind: PyTorchTrainingJob
                metadata: {name: %s, namespace: team-a, uid: 0c1d, labels: {kueue.x-k8s.io/queue-name: team-a-user-queue}}
                spec:
                  replicaSpecs:
                  - {type: worker, replicas: 4, template: {spec: {containers: [{name: pytorch, image: torch}]}}}
                """.formatted(name), PyTorchTrainingJob.class);
        return job;
    }

    static PodTemplateSpec template() {
        return new PodTemplateSpecBuilder().withNewMetadata().withName("dropped").withLabels(Map.of("team", "vision")).endMetadata()
                .withNewSpec().addNewContainer().withName("pytorch").withImage("torch").endContainer().endSpec().build();
    }

    @Test
    void theWorkloadIsNamedAsKueueNamesItsOwn() {
        String name = WorkloadName.of("PyTorchTrainingJob", "batch.tensorstack.dev", "mnist", "uid-1");
        assertTrue(name.matches("pytorchtrainingjob-mnist-[0-9a-f]{5}"), name);
        assertEquals(name, WorkloadName.of("PyTorchTrainingJob", "batch.tensorstack.dev", "mnist", "uid-1"), "stable");
        assertNotEquals(name, WorkloadName.of("PyTorchTrainingJob", "batch.tensorstack.dev", "mnist", "uid-2"),
                "a job recreated under the same name gets another Workload");
        String longest = WorkloadName.of("PyTorchJob", "kubeflow.org", "j".repeat(300), "u");
        assertEquals(253, longest.length());
    }

    @Test
    void theWorkloadAsksForOnePodSetPerGroupAndIsHeldForTheJob() {
        PyTorchTrainingJob job = job("mnist");
        GenericKubernetesResource workload = KueueWorkload.of(job, KueueWorkload.queueOf(job).orElseThrow(), List.of(
                new KueueWorkload.PodSet("master", template(), 1, Optional.empty(), null),
                new KueueWorkload.PodSet("worker", template(), 8, Optional.of(2), null)),
                Optional.of(new KueueWorkload.Priority("kueue.x-k8s.io", "WorkloadPriorityClass", "high", 1000)));
        assertEquals("kueue.x-k8s.io/v1beta2", workload.getApiVersion());
        assertEquals("team-a", workload.getMetadata().getNamespace());
        assertEquals(Map.of("kueue.x-k8s.io/job-uid", "0c1d"), workload.getMetadata().getLabels());
        assertEquals(List.of("kueue.x-k8s.io/resource-in-use"), workload.getMetadata().getFinalizers());
        var owner = workload.getMetadata().getOwnerReferences().get(0);
        assertEquals(List.of("PyTorchTrainingJob", "mnist", "0c1d", true, true),
                List.of(owner.getKind(), owner.getName(), owner.getUid(), owner.getController(), owner.getBlockOwnerDeletion()));
        assertEquals("team-a-user-queue", workload.get("spec", "queueName"));
        assertEquals(1000, (Integer) workload.get("spec", "priority"));
        assertEquals("high", workload.get("spec", "priorityClassRef", "name"));
        assertEquals("worker", workload.get("spec", "podSets", 1, "name"));
        assertEquals(8, (Integer) workload.get("spec", "podSets", 1, "count"));
        assertEquals(2, (Integer) workload.get("spec", "podSets", 1, "minCount"), "an elastic group may be admitted partly");
        assertEquals(null, (Object) workload.get("spec", "podSets", 0, "minCount"));
        Map<String, Object> meta = workload.get("spec", "podSets", 0, "template", "metadata");
        assertEquals(Map.of("labels", Map.of("team", "vision")), meta, "only labels and annotations are kept in a podSet's metadata");
    }

    @Test
    void aJobWithoutTheQueueLabelIsNotQueued() {
        PyTorchTrainingJob job = job("free");
        job.getMetadata().setLabels(Map.of());
        assertEquals(Optional.empty(), KueueWorkload.queueOf(job));
    }

    static GenericKubernetesResource workload(String status) {
        return YAML.unmarshal("""
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: Workload
                metadata: {name: w, namespace: team-a}
                spec:
                  queueName: team-a-user-queue
                  podSets:
                  - {name: master, count: 1, template: {spec: {containers: [{name: pytorch}]}}}
                  - {name: worker, count: 8, minCount: 2, template: {spec: {containers: [{name: pytorch}]}}}
                status:
                %s
                """.formatted(status.indent(2)), GenericKubernetesResource.class);
    }

    static final Map<String, KueueAdmission.Flavor> FLAVORS = Map.of(
            "a100", new KueueAdmission.Flavor(Map.of("gpu", "a100"), List.of(toleration("gpu"))),
            "spot", new KueueAdmission.Flavor(Map.of("lifecycle", "spot"), List.of(toleration("spot"))));

    static Toleration toleration(String key) {
        return new TolerationBuilder().withKey(key).withOperator("Exists").withEffect("NoSchedule").build();
    }

    @Test
    void aWorkloadWithoutAdmissionIsQueued() {
        var state = KueueAdmission.of(workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "couldn't assign flavors to pod set worker: insufficient quota"}
                """), FLAVORS);
        assertEquals(new KueueAdmission.Queued("team-a-user-queue", "couldn't assign flavors to pod set worker: insufficient quota"), state);
    }

    @Test
    void anAdmissionGivesEachPodSetItsFlavorsNodeLabelsTolerationsAndTheChecksUpdatesWithThePartialCount() {
        var state = KueueAdmission.of(workload("""
                conditions:
                - {type: QuotaReserved, status: "True", reason: QuotaReserved}
                - {type: Admitted, status: "True", reason: Admitted}
                admission:
                  clusterQueue: gpu-cluster-queue
                  podSetAssignments:
                  - {name: master, count: 1, flavors: {cpu: spot, nvidia.com/gpu: a100}}
                  - {name: worker, count: 5, flavors: {nvidia.com/gpu: a100}}
                admissionChecks:
                - name: provisioning
                  state: Ready
                  podSetUpdates:
                  - {name: worker, labels: {provisioned: "yes"}, annotations: {note: x}, nodeSelector: {zone: b},
                     tolerations: [{key: provisioned, operator: Exists, effect: NoSchedule}]}
                """), FLAVORS);
        var admitted = assertInstanceOf(KueueAdmission.Admitted.class, state);
        assertEquals("gpu-cluster-queue", admitted.clusterQueue());
        var master = admitted.podSets().get("master");
        assertEquals(Map.of("lifecycle", "spot", "gpu", "a100"), master.nodeSelector());
        assertEquals(List.of(toleration("spot"), toleration("gpu")), master.tolerations());
        var worker = admitted.podSets().get("worker");
        assertEquals(5, worker.count(), "partial admission: 5 of 8, at least minCount 2");
        assertEquals(Map.of("gpu", "a100", "zone", "b"), worker.nodeSelector());
        assertEquals(Map.of("kueue.x-k8s.io/podset", "worker", "kueue.x-k8s.io/local-queue-name", "team-a-user-queue",
                "kueue.x-k8s.io/cluster-queue-name", "gpu-cluster-queue", "provisioned", "yes"), worker.labels());
        assertEquals(List.of(toleration("gpu"), toleration("provisioned")), worker.tolerations());

        Pod pod = new PodBuilder().withNewMetadata().withName("j-worker-0").withLabels(Map.of("team", "vision")).endMetadata()
                .withNewSpec().withNodeSelector(Map.of("zone", "b")).addNewContainer().withName("pytorch").endContainer().endSpec().build();
        Pod admittedPod = worker.applyTo(pod);
        assertEquals(Map.of("zone", "b", "gpu", "a100"), admittedPod.getSpec().getNodeSelector());
        assertEquals("worker", admittedPod.getMetadata().getLabels().get("kueue.x-k8s.io/podset"));
        assertEquals("vision", admittedPod.getMetadata().getLabels().get("team"));
        assertEquals(2, admittedPod.getSpec().getTolerations().size());
        assertEquals(Map.of("zone", "b"), pod.getSpec().getNodeSelector(), "the planned pod itself is not changed");
    }

    static PodTemplateSpec annotated(Map<String, String> annotations) {
        PodTemplateSpec template = template();
        template.getMetadata().setAnnotations(annotations);
        return template;
    }

    @Test
    void eachPodSetAsksForTheTopologyItsTemplateNamesWithThePodsIndexLabelAsKueuesIntegrationsDo() {
        GenericKubernetesResource workload = KueueWorkload.of(job("racks"), "q", List.of(
                new KueueWorkload.PodSet("master", annotated(Map.of(TopologyRequest.REQUIRED, "example.com/rack",
                        TopologyRequest.GROUP, "ranks")), 1, Optional.empty(), "tensorstack.dev/replica-index"),
                new KueueWorkload.PodSet("worker", annotated(Map.of(TopologyRequest.PREFERRED, "example.com/block")), 8,
                        Optional.empty(), "tensorstack.dev/replica-index"),
                new KueueWorkload.PodSet("launcher", template(), 1, Optional.empty(), "tensorstack.dev/replica-index"),
                new KueueWorkload.PodSet("evaluator", annotated(Map.of(TopologyRequest.UNCONSTRAINED, "TRUE")), 1,
                        Optional.empty(), null),
                new KueueWorkload.PodSet("sliced", annotated(Map.of(TopologyRequest.REQUIRED, "example.com/block",
                        TopologyRequest.SLICE_REQUIRED, "example.com/rack", TopologyRequest.SLICE_SIZE, "4")), 16, Optional.empty(), null),
                new KueueWorkload.PodSet("layered", annotated(Map.of(TopologyRequest.SLICE_CONSTRAINTS,
                        "[{\"topology\": \"example.com/block\", \"size\": 8}, {\"topology\": \"example.com/rack\", \"size\": 4}]")),
                        16, Optional.empty(), null),
                new KueueWorkload.PodSet("plain", template(), 1, Optional.empty(), null)), Optional.empty());
        assertEquals(Map.of("required", "example.com/rack", "podIndexLabel", "tensorstack.dev/replica-index", "podSetGroupName", "ranks"),
                workload.get("spec", "podSets", 0, "topologyRequest"), "a master and its workers placed in one rack together");
        assertEquals(Map.of("preferred", "example.com/block", "podIndexLabel", "tensorstack.dev/replica-index"),
                workload.get("spec", "podSets", 1, "topologyRequest"));
        assertEquals(Map.of("podIndexLabel", "tensorstack.dev/replica-index"), workload.get("spec", "podSets", 2, "topologyRequest"),
                "no level asked: only the ranks' order, for a flavor with a topology");
        assertEquals(Map.of("unconstrained", true), workload.get("spec", "podSets", 3, "topologyRequest"));
        assertEquals(Map.of("required", "example.com/block", "podSetSliceRequiredTopology", "example.com/rack", "podSetSliceSize", 4),
                workload.get("spec", "podSets", 4, "topologyRequest"), "16 pods in one block, in slices of 4 each within a rack");
        assertEquals(Map.of("podsetSliceRequiredTopologyConstraints", List.of(Map.of("topology", "example.com/block", "size", 8),
                Map.of("topology", "example.com/rack", "size", 4))), workload.get("spec", "podSets", 5, "topologyRequest"));
        assertEquals(null, (Object) workload.get("spec", "podSets", 6, "topologyRequest"));
    }

    @Test
    void topologyAnnotationsKueuesWebhookWouldRefuseAreSaidInTheJobsTermsAllAtOnce() {
        java.util.function.BiFunction<Map<String, String>, Integer, List<String>> problems = (annotations, count) ->
                TopologyRequest.problems("worker", annotations, count);
        assertEquals(List.of(), problems.apply(Map.of(TopologyRequest.REQUIRED, "example.com/rack", TopologyRequest.SLICE_REQUIRED,
                "kubernetes.io/hostname", TopologyRequest.SLICE_SIZE, "2"), 8));
        assertEquals(List.of("replica worker: at most one of the annotations kueue.x-k8s.io/podset-required-topology, "
                + "kueue.x-k8s.io/podset-preferred-topology and kueue.x-k8s.io/podset-unconstrained-topology"),
                problems.apply(Map.of(TopologyRequest.REQUIRED, "rack", TopologyRequest.PREFERRED, "block"), 8));
        assertEquals(List.of("replica worker: kueue.x-k8s.io/podset-unconstrained-topology is \"yes\": it must be true or false"),
                problems.apply(Map.of(TopologyRequest.UNCONSTRAINED, "yes"), 8));
        assertEquals(List.of("replica worker: kueue.x-k8s.io/podset-required-topology is \"a rack\": it must be a node label (a level of "
                + "the Topology)"), problems.apply(Map.of(TopologyRequest.REQUIRED, "a rack"), 8));
        assertEquals(List.of("replica worker: kueue.x-k8s.io/podset-slice-size is 16: more than the 8 replica(s) of worker"),
                problems.apply(Map.of(TopologyRequest.SLICE_REQUIRED, "rack", TopologyRequest.SLICE_SIZE, "16"), 8));
        assertEquals(List.of("replica worker: kueue.x-k8s.io/podset-slice-size is \"four\": it must be a whole number of pods, at least 1",
                "replica worker: kueue.x-k8s.io/podset-slice-required-topology and kueue.x-k8s.io/podset-slice-size go together"),
                problems.apply(Map.of(TopologyRequest.SLICE_SIZE, "four"), 8));
        assertEquals(List.of("replica worker: kueue.x-k8s.io/podset-group-name is \"7\": it must not be a number",
                "replica worker: kueue.x-k8s.io/podset-group-name needs kueue.x-k8s.io/podset-required-topology or "
                        + "kueue.x-k8s.io/podset-preferred-topology"), problems.apply(Map.of(TopologyRequest.GROUP, "7"), 8));
        assertEquals(List.of("replica worker: kueue.x-k8s.io/podset-slice-required-topology-constraints is 'rack:4': it must be a JSON "
                + "array of 1 to 3 {\"topology\": <node label>, \"size\": <pods>}, coarsest first"),
                problems.apply(Map.of(TopologyRequest.SLICE_CONSTRAINTS, "rack:4"), 8));
        assertEquals(List.of("replica worker: kueue.x-k8s.io/podset-slice-required-topology-constraints: each layer's topology must be a "
                + "distinct node label, not rack", "replica worker: kueue.x-k8s.io/podset-slice-required-topology-constraints: each "
                + "layer's size must be a whole number of pods, at least 1, not 0"),
                problems.apply(Map.of(TopologyRequest.SLICE_CONSTRAINTS, "[{\"topology\": \"rack\", \"size\": 4}, "
                        + "{\"topology\": \"rack\", \"size\": 0}]"), 8));

        List<KueueWorkload.PodSet> mismatched = List.of(
                new KueueWorkload.PodSet("master", annotated(Map.of(TopologyRequest.REQUIRED, "rack", TopologyRequest.GROUP, "g")), 1,
                        Optional.empty(), null),
                new KueueWorkload.PodSet("worker", annotated(Map.of(TopologyRequest.PREFERRED, "rack", TopologyRequest.GROUP, "g")), 4,
                        Optional.empty(), null));
        assertEquals(List.of("kueue.x-k8s.io/podset-group-name g: [master, worker] must ask for the same level, both with "
                + "kueue.x-k8s.io/podset-required-topology or both with kueue.x-k8s.io/podset-preferred-topology"),
                TopologyRequest.groupProblems(mismatched));
        KueueWorkload.PodSet workers = new KueueWorkload.PodSet("worker", annotated(Map.of(TopologyRequest.REQUIRED, "rack",
                TopologyRequest.GROUP, "g")), 4, Optional.empty(), null);
        assertEquals(List.of("kueue.x-k8s.io/podset-group-name g is on [worker]: a group is exactly two replica groups"),
                TopologyRequest.groupProblems(List.of(workers)));
        assertEquals(List.of("kueue.x-k8s.io/podset-group-name g: one of [worker, evaluator] must have a single replica"),
                TopologyRequest.groupProblems(List.of(workers, new KueueWorkload.PodSet("evaluator", workers.template(), 2,
                        Optional.empty(), null))));

        PyTorchTrainingJob job = job("bad");
        job.getMetadata().getLabels().put(KueueWorkload.MAX_EXEC_TIME_LABEL, "0");
        var e = assertThrows(KueueWorkload.Invalid.class, () -> KueueWorkload.check(job, List.of(new KueueWorkload.PodSet("worker",
                annotated(Map.of(TopologyRequest.UNCONSTRAINED, "yes")), 4, Optional.empty(), null))));
        assertEquals("the label kueue.x-k8s.io/max-exec-time-seconds is \"0\": Kueue takes a whole number of seconds greater than 0 "
                + "(at most 2147483647); replica worker: kueue.x-k8s.io/podset-unconstrained-topology is \"yes\": it must be true or "
                + "false. Fix them to queue the job.", e.getMessage());
    }

    @Test
    void anAdmissionInATopologyGatesThePodsForKueueToPlaceEachInItsDomain() {
        var state = KueueAdmission.of(YAML.unmarshal("""
                apiVersion: kueue.x-k8s.io/v1beta2
                kind: Workload
                metadata: {name: pytorchjob-racks-1a2b3, namespace: team-a}
                spec:
                  queueName: q
                  podSets:
                  - {name: master, count: 1, topologyRequest: {required: example.com/rack, podIndexLabel: training.kubeflow.org/replica-index},
                     template: {spec: {containers: [{name: pytorch}]}}}
                  - {name: worker, count: 2, topologyRequest: {podIndexLabel: training.kubeflow.org/replica-index},
                     template: {spec: {containers: [{name: pytorch}]}}}
                  - {name: evaluator, count: 1, template: {spec: {containers: [{name: pytorch}]}}}
                status:
                  conditions:
                  - {type: QuotaReserved, status: "True"}
                  - {type: Admitted, status: "True"}
                  admission:
                    clusterQueue: q
                    podSetAssignments:
                    - {name: master, count: 1, flavors: {cpu: a100},
                       topologyAssignment: {levels: [example.com/rack], domains: [{values: [r1], count: 1}]}}
                    - {name: worker, count: 2, flavors: {cpu: a100},
                       topologyAssignment: {levels: [example.com/rack], domains: [{values: [r1], count: 2}]}}
                    - {name: evaluator, count: 1, flavors: {cpu: a100}}
                """, GenericKubernetesResource.class), FLAVORS);
        var admitted = assertInstanceOf(KueueAdmission.Admitted.class, state);
        var master = admitted.podSets().get("master");
        assertEquals(Map.of("kueue.x-k8s.io/workload", "pytorchjob-racks-1a2b3"), master.annotations());
        assertEquals(List.of("kueue.x-k8s.io/topology"), master.schedulingGates());
        assertEquals(Map.of("kueue.x-k8s.io/workload", "pytorchjob-racks-1a2b3", "kueue.x-k8s.io/podset-unconstrained-topology", "true"),
                admitted.podSets().get("worker").annotations(), "no level asked: Kueue places it unconstrained, and its ungater wants to know");
        var evaluator = admitted.podSets().get("evaluator");
        assertEquals(Map.of(), evaluator.annotations(), "no topology in the admission: nothing to wait for");
        assertEquals(List.of(), evaluator.schedulingGates());

        Pod pod = new PodBuilder().withNewMetadata().withName("j-master-0").endMetadata().withNewSpec()
                .addNewSchedulingGate("example.com/own").addNewContainer().withName("pytorch").endContainer().endSpec().build();
        Pod gated = master.applyTo(pod);
        assertEquals(List.of("example.com/own", "kueue.x-k8s.io/topology"),
                gated.getSpec().getSchedulingGates().stream().map(g -> g.getName()).toList(), "the pod's own gates stay");
        assertEquals(List.of("example.com/own", "kueue.x-k8s.io/topology"),
                master.applyTo(gated).getSpec().getSchedulingGates().stream().map(g -> g.getName()).toList(), "never twice");
        assertEquals("pytorchjob-racks-1a2b3", gated.getMetadata().getAnnotations().get("kueue.x-k8s.io/workload"));
        assertEquals(null, evaluator.applyTo(new PodBuilder().withNewMetadata().withName("e").endMetadata().withNewSpec().endSpec().build())
                .getSpec().getSchedulingGates());
    }

    @Test
    void anAdmissionThatContradictsThePodIsAConflict() {
        var worker = new KueueAdmission.PodSetInfo("worker", 1, Map.of("gpu", "a100"), List.of(), Map.of(), Map.of(), List.of());
        Pod pod = new PodBuilder().withNewMetadata().withName("p").endMetadata()
                .withNewSpec().withNodeSelector(Map.of("gpu", "h100")).endSpec().build();
        var conflict = assertThrows(KueueAdmission.Conflict.class, () -> worker.applyTo(pod));
        assertEquals("nodeSelector gpu is h100 and the admission asks for a100", conflict.getMessage());
    }

    @Test
    void twoSourcesOfOneAdmissionThatDisagreeMakeItUnusable() {
        var state = KueueAdmission.of(workload("""
                conditions:
                - {type: Admitted, status: "True"}
                admission:
                  clusterQueue: q
                  podSetAssignments:
                  - {name: worker, count: 8, flavors: {nvidia.com/gpu: a100}}
                admissionChecks:
                - {name: check, podSetUpdates: [{name: worker, nodeSelector: {gpu: h100}}]}
                """), FLAVORS);
        assertEquals(new KueueAdmission.Unusable("nodeSelector gpu is a100 and the admission asks for h100"), state);
    }

    @Test
    void anEvictionIsReadWithItsReason() {
        var state = KueueAdmission.of(workload("""
                conditions:
                - {type: QuotaReserved, status: "True"}
                - {type: Admitted, status: "True"}
                - {type: Evicted, status: "True", reason: Preempted, message: "Preempted to accommodate a higher priority Workload"}
                """), FLAVORS);
        assertEquals(new KueueAdmission.Evicted("team-a-user-queue", "Preempted", "Preempted to accommodate a higher priority Workload"), state);
    }

    @Test
    void anEvictionWhoseReservationWasReleasedIsQueuedAgain() {
        var state = KueueAdmission.of(workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "Preempted to accommodate a higher priority Workload"}
                - {type: Admitted, status: "False"}
                - {type: Evicted, status: "True", reason: Preempted, message: "Preempted to accommodate a higher priority Workload"}
                """), FLAVORS);
        assertEquals(new KueueAdmission.Queued("team-a-user-queue", "Preempted to accommodate a higher priority Workload"), state);
    }

    @Test
    void aWorkloadKueueDeactivatedSaysWhyAndOneDeactivatedByHandSaysOnlyThat() {
        GenericKubernetesResource timedOut = workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "The workload is deactivated due to exceeding the maximum execution time"}
                - {type: Admitted, status: "False"}
                - {type: Evicted, status: "True", reason: DeactivatedDueToMaximumExecutionTimeExceeded, message: "The workload is deactivated due to exceeding the maximum execution time"}
                """);
        timedOut.<Map<String, Object>>get("spec").put("active", false);
        assertEquals(new KueueAdmission.Queued("team-a-user-queue", "the Workload w is deactivated (spec.active is false): "
                + "The workload is deactivated due to exceeding the maximum execution time"), KueueAdmission.of(timedOut, FLAVORS));

        GenericKubernetesResource byHand = workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "The workload is deactivated"}
                - {type: Evicted, status: "True", reason: Deactivated, message: "The workload is deactivated"}
                """);
        byHand.<Map<String, Object>>get("spec").put("active", false);
        assertEquals(new KueueAdmission.Queued("team-a-user-queue", "the Workload w is deactivated (spec.active is false)"),
                KueueAdmission.of(byHand, FLAVORS));
    }

    @Test
    void aJobHasWaitedSinceItsWorkloadWasMadeOrItsLastRequeue() {
        GenericKubernetesResource waiting = workload("""
                conditions:
                - {type: QuotaReserved, status: "False", reason: Pending, message: "insufficient quota"}
                """);
        waiting.getMetadata().setCreationTimestamp("2026-12-01T10:00:00Z");
        assertEquals(Optional.of(Instant.parse("2026-12-01T10:00:00Z")), KueueAdmission.waitingSince(waiting));

        GenericKubernetesResource requeued = workload("""
                conditions:
                - {type: Requeued, status: "True", reason: Preempted, lastTransitionTime: "2026-12-01T11:30:00Z"}
                """);
        requeued.getMetadata().setCreationTimestamp("2026-12-01T10:00:00Z");
        assertEquals(Optional.of(Instant.parse("2026-12-01T11:30:00Z")), KueueAdmission.waitingSince(requeued),
                "the wait before its eviction was already counted");

        requeued.getMetadata().setCreationTimestamp(null);
        assertEquals(Optional.of(Instant.parse("2026-12-01T11:30:00Z")), KueueAdmission.waitingSince(requeued));
        assertEquals(Optional.empty(), KueueAdmission.waitingSince(workload("conditions: []")), "nothing known: no figure");
    }

    @Test
    void onlyKueuesOwnDeactivationStartsTheTimeAfterWhichTheJobIsDeleted() {
        GenericKubernetesResource timedOut = workload("""
                conditions:
                - {type: Evicted, status: "True", reason: DeactivatedDueToRequeuingLimitExceeded, message: "exceeded", lastTransitionTime: "2026-12-01T10:00:00Z"}
                """);
        timedOut.<Map<String, Object>>get("spec").put("active", false);
        assertEquals(Optional.of(Instant.parse("2026-12-01T10:00:00Z")), KueueAdmission.deactivatedByKueueSince(timedOut));
        timedOut.<Map<String, Object>>get("spec").put("active", true);
        assertEquals(Optional.empty(), KueueAdmission.deactivatedByKueueSince(timedOut), "reactivated");

        GenericKubernetesResource paused = workload("""
                conditions:
                - {type: Evicted, status: "True", reason: InactiveWorkload, message: "The workload is deactivated", lastTransitionTime: "2026-12-01T10:00:00Z"}
                """);
        paused.<Map<String, Object>>get("spec").put("active", false);
        assertEquals(Optional.empty(), KueueAdmission.deactivatedByKueueSince(paused), "a pause, or an administrator's deactivation");
    }

    @Test
    void theJobsProvisioningRequestParametersGoToItsWorkloadAsKueuesIntegrationsCarryThem() {
        PyTorchTrainingJob job = job("provisioned");
        job.getMetadata().setAnnotations(Map.of("provreq.kueue.x-k8s.io/maxRunDurationSeconds", "3600",
                "provreq.kueue.x-k8s.io/ValidUntilSeconds", "60", "team.example.com/owner", "vision"));
        GenericKubernetesResource workload = KueueWorkload.of(job, "q", List.of(new KueueWorkload.PodSet("worker", template(), 4,
                Optional.empty(), null)), Optional.empty());
        assertEquals(Map.of("provreq.kueue.x-k8s.io/maxRunDurationSeconds", "3600", "provreq.kueue.x-k8s.io/ValidUntilSeconds", "60"),
                workload.getMetadata().getAnnotations(), "only Kueue's ProvisioningRequest parameters");
        assertEquals(Map.of(), KueueWorkload.of(job("plain"), "q", List.of(), Optional.empty()).getMetadata().getAnnotations());
    }

    @Test
    void theJobsLabelsNamedToBeCopiedGoToItsWorkloadAsKueuesLabelKeysToCopySays() {
        PyTorchTrainingJob job = job("accounted");
        job.getMetadata().getLabels().putAll(Map.of("team.example.com/cost-center", "42", "app", "mnist",
                "kueue.x-k8s.io/job-uid", "forged", "torchjob.dev/owned", "forged"));
        GenericKubernetesResource workload = KueueWorkload.of(job, "q", List.of(), Optional.empty(), Map.of("torchjob.dev/owned", "true"),
                Set.of("team.example.com/cost-center", "team.example.com/project", "kueue.x-k8s.io/job-uid", "torchjob.dev/owned"));
        assertEquals(Map.of("team.example.com/cost-center", "42", "torchjob.dev/owned", "true", "kueue.x-k8s.io/job-uid", "0c1d"),
                workload.getMetadata().getLabels(), "only the keys named that the job has; the operator's own and the job's UID win");
        assertEquals(Map.of("kueue.x-k8s.io/job-uid", "0c1d"), KueueWorkload.of(job, "q", List.of(), Optional.empty())
                .getMetadata().getLabels(), "none named, none copied");
    }

    @Test
    void theJobsMaximumExecutionTimeIsItsLabelAndABadValueIsRefusedAsKueueRefusesIt() {
        PyTorchTrainingJob job = job("limited");
        job.getMetadata().getLabels().put(KueueWorkload.MAX_EXEC_TIME_LABEL, "3600");
        assertEquals(Optional.of(3600), KueueWorkload.maxExecutionSecondsOf(job));
        GenericKubernetesResource workload = KueueWorkload.of(job, "q", List.of(new KueueWorkload.PodSet("worker", template(), 4,
                Optional.empty(), null)), Optional.empty());
        assertEquals(3600, (Integer) workload.get("spec", "maximumExecutionTimeSeconds"));

        assertEquals(Optional.empty(), KueueWorkload.maxExecutionSecondsOf(job("unlimited")));
        assertEquals(null, (Object) KueueWorkload.of(job("unlimited"), "q", List.of(), Optional.empty()).get("spec", "maximumExecutionTimeSeconds"));
        for (String bad : List.of("0", "-5", "1h", "", "2147483648", "3600.5")) {
            job.getMetadata().getLabels().put(KueueWorkload.MAX_EXEC_TIME_LABEL, bad);
            var e = assertThrows(KueueWorkload.Invalid.class, () -> KueueWorkload.maxExecutionSecondsOf(job), bad);
            assertEquals("the label kueue.x-k8s.io/max-exec-time-seconds is \"" + bad + "\": Kueue takes a whole number of seconds "
                    + "greater than 0 (at most 2147483647)", e.getMessage());
        }
    }

    @Test
    void aWorkloadBeingDeletedEvictsTheJob() {
        var workload = workload("""
                conditions:
                - {type: QuotaReserved, status: "True"}
                - {type: Admitted, status: "True"}
                """);
        workload.getMetadata().setDeletionTimestamp("2026-11-24T10:00:00Z");
        assertEquals(new KueueAdmission.Evicted("team-a-user-queue", "WorkloadDeleted", "the Workload w is being deleted"), KueueAdmission.of(workload, FLAVORS));
    }

    @Test
    void aFlavorThatCannotBeReadIsAnErrorToRetryNotTheJobsFailure() {
        var workload = workload("""
                conditions:
                - {type: Admitted, status: "True"}
                admission:
                  clusterQueue: q
                  podSetAssignments:
                  - {name: worker, count: 8, flavors: {nvidia.com/gpu: h200}}
                """);
        var missing = assertThrows(KueueAdmission.MissingFlavor.class, () -> KueueAdmission.of(workload, FLAVORS));
        assertEquals("ResourceFlavor h200 of podSet worker does not exist", missing.getMessage());
    }
}
