package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** A shutdown waits for the passes running and lets no new one start; a stuck pass does not hold it up for long. */
class PassesInFlightTest {
    @Test
    void aShutdownWaitsForTheRunningPassAndStartsNoNewOne() throws Exception {
        PassesInFlight passes = new PassesInFlight();
        assertTrue(passes.enter());
        CompletableFuture<Void> drained = CompletableFuture.runAsync(() -> passes.drain(Duration.ofSeconds(10)));
        Thread.sleep(200);
        assertFalse(drained.isDone(), "the running pass is waited for");
        assertFalse(passes.enter(), "no pass starts once draining");
        passes.exit();
        drained.get(5, TimeUnit.SECONDS);
    }

    @Test
    void aPassThatDoesNotEndHoldsTheShutdownOnlyForTheBound() {
        PassesInFlight passes = new PassesInFlight();
        assertTrue(passes.enter());
        long start = System.nanoTime();
        passes.drain(Duration.ofMillis(300));
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(took >= 250 && took < 3000, "waited " + took + " ms");
    }
}
