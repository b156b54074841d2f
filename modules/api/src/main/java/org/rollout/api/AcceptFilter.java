package org.rollout.api;

/**
 * Decides whether a merged group goes to training (AReaL's {@code should_accept_fn}, semantics §6.4). It
 * sees the group's converted tensor rows after merging and normalisation. Returning false rejects
 * the group with reason {@code rejected}; throwing rejects it with the exception as the reason.
 */
@FunctionalInterface
public interface AcceptFilter {
    boolean accept(TensorDict group) throws Exception;

    /** Accepts everything. */
    static AcceptFilter all() {
        return g -> true;
    }
}
