package org.rollout.inference;

import org.rollout.api.GenerationException;

/**
 * A weight update that loaded the new weights on no server at all. The engine's version is left
 * unchanged (the servers still serve the previous weights) and the caller may retry the same
 * version. {@link #report()} has each server's errors.
 */
public final class WeightUpdateException extends GenerationException {
    private final transient WeightUpdateReport report;

    /**
     * @param report every server's outcome (none loaded)
     * @param keptVersion the engine's version, unchanged
     */
    public WeightUpdateException(WeightUpdateReport report, int keptVersion) {
        super(report.summary() + "; no server loaded the new weights, so the engine keeps version " + keptVersion);
        this.report = report;
    }

    /** Each server's outcome. */
    public WeightUpdateReport report() {
        return report;
    }
}
