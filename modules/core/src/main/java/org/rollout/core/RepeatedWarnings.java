package org.rollout.core;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;

/**
 * Keeps a warning that repeats from flooding the log: per kind, the first {@code burst} in each
 * {@code period} are logged in full; the rest are counted, and when the next one of that kind comes
 * after the period a single line says how many were left out ("… 8,400 more like this in the last
 * 60 s: …"). A run whose every group fails used to write one warning with a stack trace per failed
 * slot: hundreds of thousands of identical lines in minutes.
 *
 * <pre>
 *   warn(kind, …) ──► within the burst of this period? ──yes──► logged in full
 *                              └─no──► counted ──(first one after the period)──► "… N more like this"
 * </pre>
 *
 * <p>The kind is the caller's: a reason, or {@link #kindOf(Throwable)} for an exception (its class
 * and message with digits masked, so that "task 17" and "task 18" are one kind). At most {@link
 * #MAX_KINDS} kinds are tracked; a new kind beyond them is logged in full.
 *
 * <p><b>Threading.</b> Thread-safe: slots on many threads report through one instance.
 */
public final class RepeatedWarnings {
    static final int MAX_KINDS = 1_000;

    private record Window(long startNanos, int logged, long suppressed) {}

    private final int burst;
    private final long periodNanos;
    private final LongSupplier clock;
    private final Map<String, Window> windows = new LinkedHashMap<>();

    /** The first {@code burst} of each kind per {@code period} are logged, on the system clock. */
    public RepeatedWarnings(int burst, Duration period) {
        this(burst, period, System::nanoTime);
    }

    RepeatedWarnings(int burst, Duration period, LongSupplier clock) {
        if (burst < 1 || period.isNegative() || period.isZero()) {
            throw new IllegalArgumentException("burst must be >= 1 and period > 0: " + burst + ", " + period);
        }
        this.burst = burst;
        this.periodNanos = period.toNanos();
        this.clock = clock;
    }

    /** What to do with one occurrence: log it in full or not, and a summary line to log first, or null. */
    public record Decision(boolean log, String summary) {}

    /** Records one occurrence of {@code kind} now. */
    public synchronized Decision offer(String kind) {
        long now = clock.getAsLong();
        Window w = windows.get(kind);
        if (w == null) {
            if (windows.size() >= MAX_KINDS) {
                return new Decision(true, null);
            }
            windows.put(kind, new Window(now, 1, 0));
            return new Decision(true, null);
        }
        if (now - w.startNanos() >= periodNanos) {
            String summary = w.suppressed() == 0
                    ? null
                    : String.format(
                            "… %,d more like this in the last %d s: %s",
                            w.suppressed(),
                            Duration.ofNanos(now - w.startNanos()).toSeconds(),
                            kind);
            windows.put(kind, new Window(now, 1, 0));
            return new Decision(true, summary);
        }
        if (w.logged() < burst) {
            windows.put(kind, new Window(w.startNanos(), w.logged() + 1, w.suppressed()));
            return new Decision(true, null);
        }
        windows.put(kind, new Window(w.startNanos(), w.logged(), w.suppressed() + 1));
        return new Decision(false, null);
    }

    /**
     * Logs {@code message()} with {@code args} at WARN on {@code log} when {@link #offer} says so,
     * after the summary of what was left out, if any. The message is built only when logged.
     */
    public void warn(Logger log, String kind, Supplier<String> message, Object... args) {
        Decision d = offer(kind);
        if (d.summary() != null) {
            log.warn(d.summary());
        }
        if (d.log()) {
            log.warn(message.get(), args);
        }
    }

    /** An exception's kind: its class and the first line of its message, digits masked, at most 160 characters. */
    public static String kindOf(Throwable e) {
        String message =
                e.getMessage() == null ? "" : e.getMessage().lines().findFirst().orElse("");
        String kind = e.getClass().getSimpleName() + ": " + message.replaceAll("[0-9]+", "#");
        return kind.length() > 160 ? kind.substring(0, 160) + "…" : kind;
    }
}
