package dev.torchjob.operator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import dev.torchjob.operator.engine.JobState.CountedRestart;
import dev.torchjob.operator.engine.TrainingJob.RestartPolicy;
import dev.torchjob.operator.engine.TrainingJob.RetryableExitCodes;
import dev.torchjob.operator.engine.TrainingJob.SuccessRule;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * Each success rule on its own: the master's pod (T9k, Kubeflow with a master), any replica's (elastic),
 * all of them (Kubeflow's workers alone); a success already counted as a restart makes none. Through whole
 * passes: {@link EngineTest}.
 */
class SuccessRuleTest {
    private static final JobTopology MASTER_AND_TWO_WORKERS = JobTopology.of(EngineTest.Run.job(2, 3));
    private static final JobTopology THREE_WORKERS = JobTopology.of(
            EngineTest.Run.workersOnly(3, RestartPolicy.OnFailure, SuccessRule.ALL_REPLICAS, RetryableExitCodes.FROM_128));

    private final Map<String, Pod> pods = new LinkedHashMap<>();
    private RestartLedger ledger = ledger(List.of());

    @Test
    void theMastersSuccessIsTheJobsWhateverItsWorkersDo() {
        pods.put("j-master-0", pod("j-master-0", "Running"));
        pods.put("j-worker-0", pod("j-worker-0", "Succeeded"));
        pods.put("j-worker-1", pod("j-worker-1", "Succeeded"));
        assertEquals(Optional.empty(), success(SuccessRule.MASTER, MASTER_AND_TWO_WORKERS), "every worker done, the master still trains");

        pods.put("j-master-0", pod("j-master-0", "Succeeded"));
        pods.put("j-worker-1", pod("j-worker-1", "Failed"));
        assertEquals(Optional.of("master pod j-master-0 succeeded"), success(SuccessRule.MASTER, MASTER_AND_TWO_WORKERS));
    }

    @Test
    void withoutAMasterOneReplicasSuccessIsTheElasticJobsAndEveryReplicasTheOthers() {
        pods.put("j-worker-0", pod("j-worker-0", "Running"));
        pods.put("j-worker-1", pod("j-worker-1", "Succeeded"));
        assertEquals(Optional.of("pod j-worker-1 succeeded"), success(SuccessRule.ANY_REPLICA, THREE_WORKERS));
        assertEquals(Optional.empty(), success(SuccessRule.ALL_REPLICAS, THREE_WORKERS), "worker 2 has no pod yet");

        pods.put("j-worker-0", pod("j-worker-0", "Succeeded"));
        pods.put("j-worker-2", pod("j-worker-2", "Succeeded"));
        assertEquals(Optional.of("all 3 replicas succeeded"), success(SuccessRule.ALL_REPLICAS, THREE_WORKERS));
        assertEquals(Optional.of("pod j-worker-0 succeeded"), success(SuccessRule.ANY_REPLICA, THREE_WORKERS), "the first by rank is named");
    }

    @Test
    void aSuccessCountedAsARestartIsNoSuccessButTheNextPodsIs() {
        pods.put("j-master-0", pod("j-master-0", "Succeeded"));
        ledger = ledger(List.of(new CountedRestart("j-master-0", "j-master-0-uid", null)));
        assertEquals(Optional.empty(), success(SuccessRule.MASTER, MASTER_AND_TWO_WORKERS), "under Always, the master restarts");

        Pod next = pod("j-master-0", "Succeeded");
        next.getMetadata().setUid("j-master-0-uid-2");
        pods.put("j-master-0", next);
        assertEquals(Optional.of("master pod j-master-0 succeeded"), success(SuccessRule.MASTER, MASTER_AND_TWO_WORKERS),
                "the restarted replica's own pod");
    }

    private Optional<String> success(SuccessRule rule, JobTopology topology) {
        return JobSuccess.of(rule, topology, pods, ledger);
    }

    private static RestartLedger ledger(List<CountedRestart> counted) {
        return new RestartLedger(new JobState(true, JobPhase.Running, EngineTest.T0, null, counted.size(), counted, List.of(), null,
                true, true, JobState.Pause.NEVER, false, false, null));
    }

    private static Pod pod(String name, String phase) {
        return new PodBuilder().withNewMetadata().withName(name).withUid(name + "-uid").endMetadata()
                .withNewStatus().withPhase(phase).endStatus().build();
    }
}
