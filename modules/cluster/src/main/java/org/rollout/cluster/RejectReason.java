package org.rollout.cluster;

/**
 * Why a group did not reach training. The first two are AReaL's reasons (semantics §6.4); the rest are
 * ours, because our runtime can also fail, cancel or time out a group and says so.
 */
public enum RejectReason {
    /** The merger found no (or too few) usable slots: AReaL's {@code returned_none}. */
    RETURNED_NONE("returned_none"),
    /** The accept filter ({@code should_accept}) returned false: AReaL's {@code rejected}. */
    REJECTED("rejected"),
    /** The accept filter threw. */
    ACCEPT_ERROR("accept_error"),
    /** A slot's workflow threw; its siblings were cancelled. */
    FAILED("failed"),
    /** A result broke the workflow contract (duplicate ids, mixed kinds, bad shapes, NaN rewards). */
    CONTRACT("contract"),
    /** Cancelled by {@code staleness_policy = cancel}: the version moved more than η past dispatch. */
    STALE("stale"),
    /** Not finished within {@code episode_timeout}. */
    TIMEOUT("timeout"),
    /** Cancelled by the coordinator (e.g. another attempt of the task already finished). */
    CANCELLED("cancelled");

    private final String wireName;

    RejectReason(String wireName) {
        this.wireName = wireName;
    }

    /** The name in statistics and status: {@code returned_none}, {@code stale}, … */
    public String wireName() {
        return wireName;
    }

    @Override
    public String toString() {
        return wireName;
    }
}
