package dev.torchjob.operator.reconciler;

import static java.lang.annotation.ElementType.FIELD;
import static java.lang.annotation.ElementType.METHOD;
import static java.lang.annotation.ElementType.PARAMETER;
import static java.lang.annotation.RetentionPolicy.RUNTIME;

import java.lang.annotation.Retention;
import java.lang.annotation.Target;

import jakarta.inject.Qualifier;

/**
 * The Kubernetes client of the calls a reconcile pass makes (creates, deletes, events, the status, Kueue's
 * Workloads, discovery): it retries a failed call ({@code 5xx}, {@code 429}, no answer) once, soon, where
 * the client as configured retries ten times over about 20 s. Those 20 s held a reconcile thread per
 * refused call, so a broken admission webhook in one namespace made every other job wait; after the one
 * retry the job's own back-off takes over (docs/decisions.md, "Errors and bounds"). The informers and the
 * leader election keep the configured retries: nothing waits on them.
 */
@Qualifier
@Retention(RUNTIME)
@Target({ FIELD, METHOD, PARAMETER })
public @interface PassClient {
    /** How often a pass's client retries a failed call before the pass reports it. */
    int RETRIES = 1;
}
