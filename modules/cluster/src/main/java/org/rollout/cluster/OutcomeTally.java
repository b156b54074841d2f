package org.rollout.cluster;

import java.util.LinkedHashMap;
import java.util.Map;
import org.rollout.cluster.Collector.GroupFinished;
import org.rollout.cluster.Collector.Rejected;
import org.slf4j.event.Level;

/**
 * The collector's counts of the outcomes it took, for its status: tokens generated, rejections per
 * reason (with groups dropped at hand-out as stale), and per reason the latest rejection, "task N
 * attempt A: detail". Pure state; the collector owns one and is its only user.
 */
final class OutcomeTally {
    /** Longer rejection details are cut, so that one huge exception message cannot flood a log or status. */
    static final int DETAIL_CHARS = 500;

    private final Map<String, Long> rejectedByReason = new LinkedHashMap<>();
    private final Map<String, String> lastRejections = new LinkedHashMap<>();
    private long tokens;

    /** Counts {@code g}, taken as its task's outcome. */
    void taken(GroupFinished g) {
        tokens += g.generatedTokens();
        if (g.outcome() instanceof Rejected r) {
            String reason = r.reason().wireName();
            rejectedByReason.merge(reason, 1L, Long::sum);
            lastRejections.put(reason, "task " + g.taskId() + " attempt " + g.attempt() + ": " + shortened(r.detail()));
        }
    }

    /** Counts an accepted group dropped before hand-out, for {@code reason}. */
    void discarded(RejectReason reason) {
        rejectedByReason.merge(reason.wireName(), 1L, Long::sum);
    }

    long tokens() {
        return tokens;
    }

    Map<String, Long> rejectedByReason() {
        return Map.copyOf(rejectedByReason);
    }

    Map<String, String> lastRejections() {
        return Map.copyOf(lastRejections);
    }

    /** {@code detail} (none: empty) cut to {@link #DETAIL_CHARS} characters, saying how long it was. */
    static String shortened(String detail) {
        String d = detail == null ? "" : detail;
        return d.length() > DETAIL_CHARS ? d.substring(0, DETAIL_CHARS) + "… (" + d.length() + " characters)" : d;
    }

    /**
     * How loudly a rejection for {@code reason} is logged: a timeout, a stale or cancelled group,
     * or a filter that threw is a warning; a filter's "no" and a group with too few usable slots
     * are routine; failures and contract breaks were logged where they happened.
     */
    static Level loudness(RejectReason reason) {
        return switch (reason) {
            case TIMEOUT, STALE, CANCELLED, ACCEPT_ERROR -> Level.WARN;
            case REJECTED, RETURNED_NONE -> Level.INFO;
            default -> Level.DEBUG;
        };
    }
}
