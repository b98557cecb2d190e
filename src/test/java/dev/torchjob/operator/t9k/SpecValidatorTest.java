package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What the operator rejects with InvalidSpec, and that each message names the field. */
class SpecValidatorTest {

    static Optional<String> problem(String name, String spec) {
        return SpecValidator.problemWith(InMemoryCluster.parse("metadata: {name: " + name + "}\nspec:\n" + spec));
    }

    static final String OK_WORKER = "  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: pytorch, image: torch}]}}\n";

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            master not first         | ok   | '  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n  - type: master\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.replicaSpecs[1]
            two masters              | ok   | '  replicaSpecs:\n  - type: master\n    replicas: 2\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.replicaSpecs[0].replicas
            no replica groups        | ok   | '  replicaSpecs: []\n' | spec.replicaSpecs
            duplicate type           | ok   | '  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.replicaSpecs[1].type
            no containers            | ok   | '  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: []}}\n' | spec.replicaSpecs[0].template.spec.containers
            container without image  | ok   | '  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a}]}}\n' | containers[0].image
            uppercase type           | ok   | '  replicaSpecs:\n  - type: Worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.replicaSpecs[0].type
            elastic without torchrun | ok   | '  elastic: {enabled: true, minReplicas: 1, maxReplicas: 2}\n  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | torchrunConfig.enabled
            elastic min above max    | ok   | '  torchrunConfig: {enabled: true}\n  elastic: {enabled: true, minReplicas: 3, maxReplicas: 2}\n  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | minReplicas
            bad procPerNode          | ok   | '  torchrunConfig: {enabled: true, procPerNode: many}\n  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | procPerNode
            negative backoffLimit    | ok   | '  runPolicy: {backoffLimit: -1}\n  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | backoffLimit
            job name not DNS-1035    | 1job | '  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | metadata.name
            replicas beyond bound    | ok   | '  replicaSpecs:\n  - type: worker\n    replicas: 1001\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.replicaSpecs[0].replicas must be at most 1000 (found 1001)
            replicas beyond int      | ok   | '  replicaSpecs:\n  - type: worker\n    replicas: 2147483648\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.replicaSpecs[0].replicas must be at most 1000 (found 2147483647 or more)
            too many in all          | ok   | '  replicaSpecs:\n  - type: worker\n    replicas: 600\n    template: {spec: {containers: [{name: a, image: b}]}}\n  - type: ps\n    replicas: 401\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | 1001 replicas in all
            elastic max beyond bound | ok   | '  torchrunConfig: {enabled: true}\n  elastic: {enabled: true, minReplicas: 1, maxReplicas: 5000}\n  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.elastic.maxReplicas must be at most 1000
            backoffLimit beyond int  | ok   | '  runPolicy: {backoffLimit: -99999999999}\n  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | backoffLimit
            port out of range        | ok   | '  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b, ports: [{name: pytorchjob-port, containerPort: 70000}]}]}}\n' | spec.replicaSpecs[0].template.spec.containers[0].ports[0].containerPort must be between 1 and 65535 (found 70000)
            unreadable value         | ok   | '  runPolicy: {backoffLimit: three}\n  replicaSpecs:\n  - type: worker\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | spec.runPolicy.backoffLimit cannot be read
            pod name too long        | a-very-long-job-name-that-goes-on-and-on-and-on-forever | '  replicaSpecs:\n  - type: worker-with-long-type\n    template: {spec: {containers: [{name: a, image: b}]}}\n' | longer than 63
            """)
    void rejects(String title, String name, String spec, String field) {
        Optional<String> problem = problem(name, spec.replace("\\n", "\n"));
        assertTrue(problem.isPresent(), title + " must be rejected");
        assertTrue(problem.get().contains(field), problem.get());
    }

    @ParameterizedTest
    @CsvSource({"ok"})
    void acceptsAPlainWorkerGroup(String name) {
        assertEquals(Optional.empty(), problem(name, OK_WORKER));
    }
}
