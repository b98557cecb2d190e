package dev.torchjob.operator.podtemplate;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.client.utils.Serialization;

/** A pod's requests as kube-scheduler counts them (Kubernetes 1.37's resource helpers), from the template alone. */
class PodRequestsTest {

    static Map<String, String> requests(String podSpec) {
        Map<String, String> text = new LinkedHashMap<>();
        PodRequests.of(Serialization.unmarshal(podSpec, PodSpec.class)).forEach((name, quantity) -> text.put(name, quantity.toString()));
        return text;
    }

    @Test
    void containersAddUpAndALimitStandsForTheRequestItLacks() {
        assertEquals(Map.of("cpu", "3", "memory", "6Gi", "nvidia.com/gpu", "2"), requests("""
                containers:
                - {name: a, resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "4", nvidia.com/gpu: 1}}}
                - {name: b, resources: {requests: {cpu: "2", memory: 4Gi}, limits: {nvidia.com/gpu: 1}}}
                """), "requests win over limits; the GPUs, only limited, count at their limits");
        assertEquals(Map.of("cpu", "1500m"), requests("""
                containers: [{name: a, resources: {requests: {cpu: 500m}}}, {name: b, resources: {requests: {cpu: "1"}}}]
                """), "in the unit the first wrote");
        assertEquals(Map.of(), requests("containers: [{name: a}]"));
        assertEquals(Map.of(), requests("containers: null\ninitContainers: null"), "a template the API server has not checked yet");
    }

    @Test
    void sidecarsAddToThePodAndAnOrdinaryInitContainerOnlyRaisesItWithTheSidecarsStartedBeforeIt() {
        String pod = """
                initContainers:
                - {name: fetch, resources: {requests: {cpu: "3", memory: 1Gi}}}
                - {name: logs, restartPolicy: Always, resources: {requests: {cpu: 500m, memory: 256Mi}}}
                - {name: warm-up, resources: {requests: {cpu: "2", memory: 8Gi}}}
                containers: [{name: pytorch, resources: {requests: {cpu: "2", memory: 4Gi}}}]
                """;
        // running: 2 + 0.5 cpu, 4Gi + 256Mi; fetch alone: 3 cpu; warm-up beside the sidecar: 2.5 cpu, 8Gi + 256Mi
        assertEquals(Map.of("cpu", "3", "memory", "8448Mi"), requests(pod));
        assertEquals(Map.of("cpu", "2500m", "memory", "4352Mi"), requests("""
                initContainers: [{name: logs, restartPolicy: Always, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
                containers: [{name: pytorch, resources: {requests: {cpu: "2", memory: 4Gi}}}]
                """), "a sidecar runs beside training for the whole pod");
    }

    @Test
    void podLevelResourcesReplaceTheContainersSumForCpuAndMemoryOnly() {
        assertEquals(Map.of("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "1"), requests("""
                resources: {requests: {cpu: "8", memory: 32Gi}}
                containers:
                - {name: pytorch, resources: {limits: {nvidia.com/gpu: 1}}}
                - {name: logs, resources: {requests: {cpu: 100m}}}
                """));
        assertEquals(Map.of("cpu", "500m", "memory", "16Gi"), requests("""
                resources: {limits: {cpu: "4", memory: 16Gi}}
                containers: [{name: pytorch, resources: {requests: {cpu: 500m}}}]
                """), "a pod-level limit stands for a request only where no container requests that resource");
    }

    @Test
    void theOverheadATemplateCarriesIsAdded() {
        assertEquals(Map.of("cpu", "1250m", "memory", "1120Mi"), requests("""
                overhead: {cpu: 250m, memory: 96Mi}
                containers: [{name: pytorch, resources: {requests: {cpu: "1", memory: 1Gi}}}]
                """));
    }
}
