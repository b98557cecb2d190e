package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.javaoperatorsdk.operator.processing.event.ResourceID;

/** A pod that leaves the cache is still known to its job's next pass, as the cache last held it, for a few minutes. */
class GonePodsTest {
    private static final ResourceID JOB = new ResourceID("j", "ns");

    private static Pod evicted(String name, String uid) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace("ns").withUid(uid).endMetadata()
                .withNewStatus().withPhase("Running").addNewCondition().withType("DisruptionTarget").withStatus("True")
                .withReason("EvictionByEvictionAPI").endCondition().endStatus().build();
    }

    @Test
    void whatLeavesTheCacheIsHandedOnAsItWasLastHeldBeforeItIsGone() {
        List<Pod> left = new ArrayList<>();
        LeanCache<Pod> cache = new LeanCache<>(left::add);
        cache.put("ns/j-worker-0", evicted("j-worker-0", "u1"));
        cache.remove("ns/j-worker-0");
        cache.remove("ns/j-worker-9"); // never held: nothing to hand on
        assertEquals(List.of("u1"), left.stream().map(p -> p.getMetadata().getUid()).toList());
        assertEquals("EvictionByEvictionAPI", left.get(0).getStatus().getConditions().get(0).getReason());
    }

    @Test
    void aGonePodIsKnownToItsJobOnlyAndForAFewMinutes() {
        ResourceFlavorsTest.MovingClock clock = new ResourceFlavorsTest.MovingClock();
        GonePods gone = new GonePods();
        gone.clock = clock;
        gone.left(JOB, evicted("j-worker-0", "u1"));
        assertEquals("u1", gone.of(JOB).get("j-worker-0").getMetadata().getUid());
        assertEquals(Map.of(), gone.of(new ResourceID("j", "other-ns")));
        gone.left(JOB, evicted("j-worker-0", "u2"));
        assertEquals("u2", gone.of(JOB).get("j-worker-0").getMetadata().getUid(), "the pod of that name that left last");

        clock.now = clock.now.plus(GonePods.KEPT_FOR).plusSeconds(1);
        assertEquals(Map.of(), gone.of(JOB));
    }

    @Test
    void whatNoPassAskedForIsDroppedOnceItIsOld() {
        ResourceFlavorsTest.MovingClock clock = new ResourceFlavorsTest.MovingClock();
        GonePods gone = new GonePods();
        gone.clock = clock;
        for (int i = 0; i < 100; i++) {
            gone.left(new ResourceID("finished-" + i, "ns"), evicted("finished-" + i + "-worker-0", "u" + i));
        }
        clock.now = clock.now.plus(GonePods.KEPT_FOR).plusSeconds(1);
        gone.left(JOB, evicted("j-worker-0", "u"));
        assertEquals(1, gone.jobs(), "a finished job's clean-up keeps nothing for long");
    }
}
