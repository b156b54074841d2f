package org.rollout.trainer;

import java.time.Duration;
import java.util.Objects;

/**
 * A trainer's hold on the batches it pulls. The engine keeps a batch pulled under a lease for its
 * {@code holder} only while the lease is renewed (every batch of the holder at once, see {@link
 * RolloutClient#renewLease}); when {@code duration} passes without a renewal, the holder is taken
 * for gone and its unacknowledged batches go to the next pull at once, instead of after {@code
 * rollout.batch_ack_timeout}. The clients renew for their user, also while a step runs.
 *
 * @param holder names the trainer in the engine's status and logs (e.g. {@code host:pid:nonce});
 *     unique per trainer process, 1 to 200 characters
 * @param duration how long a batch stays held without a renewal, above 0 and at most an hour
 */
public record BatchLease(String holder, Duration duration) {
    /** Leases longer than this are refused: {@code batch_ack_timeout} covers holders that never renew. */
    public static final Duration MAX = Duration.ofHours(1);

    /** The longest holder name. */
    public static final int MAX_HOLDER_LENGTH = 200;

    public BatchLease {
        Objects.requireNonNull(holder, "holder");
        Objects.requireNonNull(duration, "duration");
        if (holder.isBlank() || holder.length() > MAX_HOLDER_LENGTH) {
            throw new IllegalArgumentException(
                    "lease holder must be 1 to " + MAX_HOLDER_LENGTH + " characters, not blank; got '" + holder + "'");
        }
        if (duration.isNegative() || duration.isZero() || duration.compareTo(MAX) > 0) {
            throw new IllegalArgumentException(
                    "lease duration must be above 0 and at most " + MAX + ", got " + duration);
        }
    }
}
