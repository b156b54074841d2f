package org.rollout.agent;

import java.util.Objects;

/**
 * Thrown by an agent to reject its episode (AReaL's {@code None}): the episode becomes {@code
 * EpisodeResult.Rejected(reason)} and its slot is unusable, but its group does not fail. Any other
 * exception an agent throws fails the group; returning null is a contract error.
 *
 * <p>{@link ProcessAgentWorkflow} uses it for a process that timed out, exited non-zero or printed
 * no reward.
 */
public final class EpisodeRejectedException extends Exception {
    public EpisodeRejectedException(String reason) {
        super(Objects.requireNonNull(reason, "reason"));
    }

    /** The rejection reason, as {@code Rejected.reason()} will carry it. */
    public String reason() {
        return getMessage();
    }
}
