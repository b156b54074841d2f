package org.rollout.modelserver;

import java.util.Objects;

/**
 * Simulated output lengths (off unless {@link ModelServerConfig#withOutputLengths} sets them): each
 * generation ends with {@code length} after a length drawn from {@link #distribution()}, whatever
 * the model samples, capped by the request's {@code max_new_tokens}. Benchmarks use it to give the
 * tiny model the long-tailed output lengths of a reasoning model (the effect asynchronous RL and
 * interruptible generation are about); the tokens and logprobs are still the model's real samples.
 *
 * <p>How a draw follows a generation across interruptions. The draw is made when a request is
 * admitted and fixes the generation's end as an absolute sequence length: {@code prompt length +
 * drawn length}. A later request with the same {@code rid} whose prompt is <em>longer</em> than the
 * prompt of that draw is a resumed segment (the engine sends prompt + tokens so far, same rid) and
 * ends at the same absolute length, so a resumed generation is as long as if it had never been
 * interrupted. A request with the same rid and a prompt <em>no longer</em> than that is a new
 * attempt (a client that discarded its tokens and regenerates from the original prompt) and gets a
 * fresh draw, as a real model sampling again would. Draws are deterministic: the {@code n}-th
 * attempt of a rid draws from a random stream seeded by {@code (seed, rid, n)}.
 *
 * <p>While simulated lengths are on, EOS, {@code stop_token_ids} and {@code stop} strings do not end
 * a generation. A draw is forgotten when its generation finishes with {@code length}; draws of
 * aborted generations are kept for their resumption, at most {@value #REMEMBERED_RIDS} rids (the
 * oldest is forgotten first; its resumption then counts as a new generation whose prompt is the
 * longer one). A resumed segment sent to another server (failover) is a new generation there.
 *
 * @param distribution where drawn lengths come from
 * @param seed the seed of every draw
 */
public record OutputLengths(LengthDistribution distribution, long seed) {
    /** How many rids' draws a server remembers for resumption. */
    public static final int REMEMBERED_RIDS = 65_536;

    public OutputLengths {
        Objects.requireNonNull(distribution, "distribution");
    }

    @Override
    public String toString() {
        return distribution.spec() + " (seed " + seed + ")";
    }
}
