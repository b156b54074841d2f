package org.rollout.cluster;

import java.util.Map;
import java.util.Optional;

/**
 * Trainer rank {@code rank}'s share of a run whose trainer pulls with {@code ranks} data-parallel
 * ranks, each from its own coordinator and collector (AReaL's multi-rank rollout: every rank runs
 * its own executor over a share of the budget). The rank's pipeline takes:
 *
 * <ul>
 *   <li>the task ids {@code rank, rank + ranks, rank + 2·ranks, …}, so ids stay unique across the
 *       run and a task's id names its rank;
 *   <li>the training prompts {@code rank, rank + ranks, …} of the source ({@link #prompts});
 *   <li>{@code consumer_batch_size / ranks} groups a batch and {@code max_concurrent_rollouts /
 *       ranks} in flight (at least 1): its staleness budget is AReaL's local one (semantics §6.8),
 *       exact on its own; {@code queue_size} bounds each rank's unbatched groups, unscaled, as it
 *       bounds each of AReaL's rank's queues;
 *   <li>a share of each runner's capacity ({@link #capacity}), so the ranks together dispatch to a
 *       node what one coordinator would.
 * </ul>
 *
 * With one rank ({@link #ALONE}) every share is the whole.
 */
record RankShare(int rank, int ranks) {

    /** A run with one trainer rank. */
    static final RankShare ALONE = new RankShare(0, 1);

    /** The most ranks a run has: a batch id carries its rank in 8 bits ({@link BatchBook}). */
    static final int MAX_RANKS = BatchBook.MAX_RANK + 1;

    RankShare {
        if (ranks < 1 || ranks > MAX_RANKS) {
            throw new IllegalArgumentException("trainer ranks: " + ranks + " is not between 1 and " + MAX_RANKS);
        }
        if (rank < 0 || rank >= ranks) {
            throw new IllegalArgumentException("trainer rank " + rank + " is outside [0, " + ranks + ")");
        }
    }

    /**
     * Each rank's batch size: {@code consumerBatchSize / ranks}.
     *
     * @throws IllegalArgumentException when {@code ranks} is not between 1 and {@link #MAX_RANKS},
     *     or, naming {@code consumer_batch_size}, does not divide it: every rank's batch is an equal
     *     share of the trainer's step
     */
    static int batchShare(int consumerBatchSize, int ranks) {
        new RankShare(0, ranks); // checks the number of ranks
        if (consumerBatchSize % ranks != 0) {
            throw new IllegalArgumentException("consumer_batch_size " + consumerBatchSize + " is not a multiple of the "
                    + ranks + " trainer ranks: each rank's batch is an equal share of a step");
        }
        return consumerBatchSize / ranks;
    }

    /** This rank's share of a limit on the whole run ({@code max_concurrent_rollouts}): at least 1. */
    int limit(int whole) {
        return Math.max(1, whole / ranks);
    }

    /**
     * This rank's share of a runner's {@code capacity}: the capacity split as evenly as it goes (the
     * lower ranks take the remainder), at least 1 so that no rank is left without a runner.
     */
    int capacity(int capacity) {
        return Math.max(1, (capacity + ranks - 1 - rank) / ranks);
    }

    /** Whether task {@code taskId} is one of this rank's. */
    boolean owns(long taskId) {
        return Math.floorMod(taskId, (long) ranks) == rank;
    }

    /** The first of this rank's task ids at or after {@code id}. */
    long firstIdFrom(long id) {
        return id + Math.floorMod(rank - id, (long) ranks);
    }

    /** The training prompts this rank takes: item {@code i} is the source's item {@code i·ranks + rank}. */
    PromptSource prompts(PromptSource source) {
        if (ranks == 1) {
            return source;
        }
        return new PromptSource() {
            @Override
            public Optional<Map<String, Object>> item(long index) {
                return source.item(index * ranks + rank);
            }
        };
    }
}
