package dev.torchjob.operator.cluster;

/**
 * A team's ValidatingAdmissionPolicy that refuses, in one namespace, every request one resource rule matches, with
 * its message: what an admission webhook or policy of a real cluster does. Named after the namespace; removed on close.
 */
public final class RefusingPolicy implements AutoCloseable {
    private final Kubectl kubectl;
    private final String name;

    private RefusingPolicy(Kubectl kubectl, String name) {
        this.kubectl = kubectl;
        this.name = name;
    }

    /**
     * Applies the policy and its binding; {@code rule}: its one resource rule as a YAML flow map
     * ({@code {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods/binding]}}). The API server
     * enforces it a moment later: the caller waits for that as its test can tell.
     */
    public static RefusingPolicy apply(Kubectl kubectl, String namespace, String rule, String message) {
        kubectl.runWithInput("""
                apiVersion: admissionregistration.k8s.io/v1
                kind: ValidatingAdmissionPolicy
                metadata: {name: %1$s}
                spec:
                  failurePolicy: Fail
                  matchConstraints:
                    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %1$s}}
                    resourceRules:
                    - %2$s
                  validations:
                  - expression: "false"
                    message: "%3$s"
                ---
                apiVersion: admissionregistration.k8s.io/v1
                kind: ValidatingAdmissionPolicyBinding
                metadata: {name: %1$s}
                spec:
                  policyName: %1$s
                  validationActions: [Deny]
                """.formatted(namespace, rule, message), "apply", "-f", "-").orFail();
        return new RefusingPolicy(kubectl, namespace);
    }

    @Override
    public void close() {
        kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name).orFail();
    }
}
