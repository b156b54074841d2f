package org.rollout.modelserver;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Decides, request by request, which faults of the current {@link FaultPlan} strike. Thread-safe:
 * decisions are taken under the instance lock in arrival order, so a plan replayed over the same
 * request sequence decides the same way.
 */
final class FaultInjector {
    /** What happens to one generation request. {@code hangUntil} is null when it is not held. */
    record Decision(
            boolean crash,
            boolean error,
            CompletableFuture<Void> hangUntil,
            Duration slow,
            FaultPlan.MalformedKind malformed) {}

    private FaultPlan plan;
    private SplittableRandom random;
    private long counted;
    private CompletableFuture<Void> hangRelease = new CompletableFuture<>();
    private final AtomicInteger hung = new AtomicInteger();

    FaultInjector(FaultPlan initial) {
        set(initial);
    }

    synchronized FaultPlan plan() {
        return plan;
    }

    /** Replaces the plan, restarting its random stream and count; lifting hang releases held requests. */
    synchronized void set(FaultPlan next) {
        plan = next;
        random = new SplittableRandom(next.seed());
        counted = 0;
        if (!next.hang()) {
            hangRelease.complete(null);
            hangRelease = new CompletableFuture<>();
        }
    }

    synchronized Decision onGenerate() {
        long index = counted++;
        double errorDraw = random.nextDouble();
        double malformedDraw = random.nextDouble();
        boolean crash = plan.crashAfter() >= 0 && index >= plan.crashAfter();
        boolean error = errorDraw < plan.errorRate();
        FaultPlan.MalformedKind malformed = malformedDraw < plan.malformedRate() ? plan.malformedKind() : null;
        return new Decision(crash, error, plan.hang() ? hangRelease : null, plan.slow(), malformed);
    }

    /** Counts a request held by hang while {@code wait} runs. */
    void holding(Runnable wait) {
        hung.incrementAndGet();
        try {
            wait.run();
        } finally {
            hung.decrementAndGet();
        }
    }

    int hungRequests() {
        return hung.get();
    }
}
