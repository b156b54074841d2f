package org.rollout.gateway;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * What the gateway counts: pulls admitted and refused, batch streams dropped by the stall watch,
 * batches handed back, and each batch hand-off's bytes and time. Counted always; registered as
 * meters when the node gives a registry.
 */
final class GatewayMeters {
    final AtomicLong pullsRefused = new AtomicLong();
    final AtomicLong pullsAdmitted = new AtomicLong();
    final AtomicLong writesTimedOut = new AtomicLong();
    /** Batches whose connection closed before their last byte, handed back for the next pull. */
    final AtomicLong batchesReleased = new AtomicLong();
    /** Pulls answered 307: the trainer reads from the gateway of the node that holds the batches. */
    final AtomicLong pullsRedirected = new AtomicLong();

    private final LongSupplier connectionsAccepted;
    private final DistributionSummary handoffBytes;
    private final Timer handoffTime;

    /**
     * @param registry where the meters go, or null for none
     * @param pullSlots the pull slots; the pulls under way are {@code maxWaitingPulls} less its permits
     */
    GatewayMeters(MeterRegistry registry, Semaphore pullSlots, int maxWaitingPulls) {
        this(registry, pullSlots, maxWaitingPulls, () -> 0L);
    }

    /** @param connectionsAccepted the connections the gateway's server accepted so far */
    GatewayMeters(MeterRegistry registry, Semaphore pullSlots, int maxWaitingPulls, LongSupplier connectionsAccepted) {
        // Held here: a function meter keeps only a weak reference to what it reads.
        this.connectionsAccepted = connectionsAccepted;
        if (registry == null) {
            handoffBytes = null;
            handoffTime = null;
            return;
        }
        handoffBytes = DistributionSummary.builder("rollout_batch_handoff_size")
                .description("bytes of one batch streamed to a trainer")
                .baseUnit("bytes")
                .register(registry);
        handoffTime = Timer.builder("rollout_batch_handoff_duration")
                .description("time to stream one batch to a trainer, from the first byte to the last")
                .register(registry);
        Gauge.builder("rollout_gateway_pulls", pullSlots, slots -> maxWaitingPulls - slots.availablePermits())
                .description("pulls this gateway serves now (waiting for a batch or streaming one)")
                .register(registry);
        FunctionCounter.builder("rollout_gateway_pulls_refused", pullsRefused, AtomicLong::get)
                .description("pulls answered 503 too_many_pulls: gateway.max_waiting_pulls were under way")
                .register(registry);
        FunctionCounter.builder("rollout_gateway_batch_writes_timed_out", writesTimedOut, AtomicLong::get)
                .description("batch streams dropped after gateway.write_timeout without progress")
                .register(registry);
        FunctionCounter.builder("rollout_gateway_batches_released", batchesReleased, AtomicLong::get)
                .description("batches whose connection closed before their last byte, given to the next pull")
                .register(registry);
        FunctionCounter.builder("rollout_gateway_pulls_redirected", pullsRedirected, AtomicLong::get)
                .description("pulls answered 307 to the gateway of the node that holds the batches")
                .register(registry);
        FunctionCounter.builder(
                        "rollout_gateway_connections_accepted", this.connectionsAccepted, LongSupplier::getAsLong)
                .description("HTTP connections the gateway accepted (a trainer client keeps one alive across pulls)")
                .register(registry);
    }

    /** A batch streamed whole: its bytes, and the nanoseconds from its first byte to its last. */
    void handoff(long bytes, long nanos) {
        if (handoffBytes != null) {
            handoffBytes.record(bytes);
            handoffTime.record(nanos, TimeUnit.NANOSECONDS);
        }
    }
}
