package dev.torchjob.operator.reconciler;

/** The PyTorchJob the integration tests of both tiers submit. */
public final class PyTorchJobTestJobs {
    private PyTorchJobTestJobs() {
    }

    /** A Master and two Workers, the Workers under one restart policy, with the given runPolicy (YAML flow map). */
    public static String job(String name, String workerPolicy, String runPolicy) {
        return """
                apiVersion: kubeflow.org/v1
                kind: PyTorchJob
                metadata: {name: %s}
                spec:
                  runPolicy: %s
                  pytorchReplicaSpecs:
                    Master:
                      template: {spec: {containers: [{name: pytorch, image: torch, args: [--backend, gloo]}]}}
                    Worker:
                      replicas: 2
                      restartPolicy: %s
                      template: {spec: {containers: [{name: pytorch, image: torch, args: [--backend, gloo]}]}}
                """.formatted(name, runPolicy, workerPolicy);
    }
}
