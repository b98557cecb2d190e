package dev.torchjob.operator.t9k;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import dev.torchjob.operator.api.JobCondition;
import dev.torchjob.operator.api.PyTorchTrainingJobStatus;
import dev.torchjob.operator.api.RestartPolicy;
import dev.torchjob.operator.engine.JobPhase;
import dev.torchjob.operator.engine.Plan;

/**
 * Spec §5/§6 as a table: every restart policy × how the replica ended × budget left or spent ×
 * master or worker. The expected outcome is written out independently of the planner's code.
 */
class RestartDecisionTableTest {

    enum Ending {
        EXIT_0, EXIT_1, EXIT_2, EXIT_130, EXIT_137, EXIT_138, EXIT_143, EXIT_255, EVICTED, VANISHED
    }

    enum Expect {
        /** Job succeeds (master exit 0). */
        SUCCEEDED,
        /** Nothing happens: a worker exit 0 under a policy that does not restart successes. */
        NOTHING,
        RESTART,
        FAIL_PERMANENTLY,
        FAIL_BACKOFF
    }

    static Expect expected(RestartPolicy policy, Ending ending, boolean budgetLeft, boolean master) {
        if (ending == Ending.EXIT_0) {
            if (master) {
                return Expect.SUCCEEDED;
            }
            return policy == RestartPolicy.Always && budgetLeft ? Expect.RESTART : Expect.NOTHING;
        }
        boolean restartable = switch (policy) {
            case Never -> false;
            case OnFailure, Always -> true;
            case ExitCode -> switch (ending) {
                case EXIT_130, EXIT_137, EXIT_138, EXIT_143, EVICTED, VANISHED -> true;
                default -> false;
            };
        };
        if (!restartable) {
            return Expect.FAIL_PERMANENTLY;
        }
        return budgetLeft ? Expect.RESTART : Expect.FAIL_BACKOFF;
    }

    static Stream<Arguments> table() {
        List<Arguments> rows = new ArrayList<>();
        for (String scope : new String[] {"Job", "Replica"}) {
            for (RestartPolicy policy : RestartPolicy.values()) {
                for (Ending ending : Ending.values()) {
                    for (boolean budgetLeft : new boolean[] {true, false}) {
                        for (boolean master : new boolean[] {true, false}) {
                            rows.add(Arguments.of(scope, policy, ending, budgetLeft, master, expected(policy, ending, budgetLeft, master)));
                        }
                    }
                }
            }
        }
        return rows.stream();
    }

    /** The same table whatever the restart scope: a group restart decides on its cause as a replica's restart on its failure. */
    @ParameterizedTest(name = "scope {0}: {1} {2} budgetLeft={3} master={4} -> {5}")
    @MethodSource("table")
    void decides(String scope, RestartPolicy policy, Ending ending, boolean budgetLeft, boolean master, Expect expect) {
        InMemoryCluster cluster = FailureScenariosTest.running("{backoffLimit: " + (budgetLeft ? 2 : 0) + "}", policy.name(), scope);
        String pod = master ? "f-master-0" : "f-worker-1";
        String oldUid = cluster.pod(pod).getMetadata().getUid();
        switch (ending) {
            case EVICTED -> cluster.evict(pod);
            case VANISHED -> cluster.vanish(pod);
            default -> cluster.exit(pod, Integer.parseInt(ending.name().substring("EXIT_".length())));
        }
        Plan<PyTorchTrainingJobStatus> plan = cluster.reconcile();
        var status = plan.status();
        switch (expect) {
            case SUCCEEDED -> assertEquals(JobPhase.Succeeded, status.phase);
            case NOTHING -> {
                assertEquals(JobPhase.Running, status.phase);
                assertEquals(0, status.backoffCount);
                assertTrue(plan.podsToDelete().isEmpty() && plan.podsToCreate().isEmpty());
            }
            case RESTART -> {
                assertEquals(JobPhase.Running, status.phase);
                assertEquals(1, status.backoffCount);
                String type = master ? "master" : "worker";
                assertEquals(1, status.tasks.stream().filter(t -> t.type.equals(type)).findFirst().orElseThrow().restartCount);
                // A success restarted under Always is one replica's restart whatever the scope.
                String reason = scope.equals("Job") && ending != Ending.EXIT_0 ? "JobRestarting" : "ReplicaRestarted";
                assertTrue(plan.events().stream().anyMatch(e -> e.reason().equals(reason) && e.message().contains(pod)), plan.events().toString());
                cluster.settle();
                assertEquals(1, cluster.job.getStatus().backoffCount, "the restart is counted once");
                assertTrue(!oldUid.equals(cluster.pod(pod).getMetadata().getUid()), "a new pod replaces the old one");
                assertEquals(JobPhase.Running, cluster.job.getStatus().phase);
            }
            case FAIL_PERMANENTLY, FAIL_BACKOFF -> {
                assertEquals(JobPhase.Failed, status.phase);
                assertTrue(status.completionTime != null);
                JobCondition failed = status.conditions.stream().filter(c -> c.type.equals("Failed")).findFirst().orElseThrow();
                assertEquals(expect == Expect.FAIL_PERMANENTLY ? "ReplicaFailedPermanently" : "BackoffLimitExceeded", failed.reason);
                assertTrue(failed.message.contains(pod), failed.message);
                if (ending.name().startsWith("EXIT_")) {
                    assertTrue(failed.message.contains("code " + ending.name().substring(5)), failed.message);
                    assertTrue(failed.message.contains("container pytorch"), failed.message);
                }
                assertTrue(plan.events().stream().anyMatch(e -> e.reason().equals("ReplicaFailed") && e.message().contains(pod)));
                assertTrue(plan.podsToCreate().isEmpty());
            }
        }
    }
}
