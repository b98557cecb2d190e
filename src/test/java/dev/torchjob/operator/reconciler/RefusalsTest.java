package dev.torchjob.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;

import org.junit.jupiter.api.Test;

class RefusalsTest {
    @Test
    void onlySoManyQuietRerunsInARowGoUnsaid() {
        Refusals refusals = new Refusals();
        assertTrue(refusals.runAgainQuietly("j", 2));
        assertTrue(refusals.runAgainQuietly("j", 2));
        assertFalse(refusals.runAgainQuietly("j", 2), "a third in a row is said: the API server keeps closing connections, say");
        assertTrue(refusals.runAgainQuietly("other", 2), "counted per job");
    }

    @Test
    void aPassThatGoesThroughOrAnAnswerEndsTheRow() {
        Refusals refusals = new Refusals();
        refusals.runAgainQuietly("j", 1);
        refusals.over("j");
        assertTrue(refusals.runAgainQuietly("j", 1), "the pass went through in between");
        refusals.said("j", new Refusals.Refusal("FailedCreatePod", "pod j-master-0: denied", Instant.EPOCH));
        assertTrue(refusals.runAgainQuietly("j", 1), "the API server answered in between");
    }
}
