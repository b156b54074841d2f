package org.rollout.api;

import java.util.Map;

/**
 * How one episode turns a data item into trajectory rows (semantics §3.1): build the prompt, call
 * {@link InferenceEngine#generate}, compute a reward, pack a {@link TensorDict} (or return
 * interactions, or reject).
 *
 * <p>Threading: each call runs on its own virtual thread, so plain blocking code is right here.
 * The slots of one group run concurrently on one instance and share {@code data}, so an
 * implementation must be thread-safe (keep per-episode state in locals). {@link
 * WorkflowContext#current()} tells the call which task, slot and mode it serves.
 *
 * <p>Failure: returning {@link EpisodeResult.Rejected} makes the slot unusable. Throwing fails the
 * whole group: its sibling slots are cancelled (their generations aborted on the server) and the
 * group is rejected with the exception as the reason. A {@link WorkflowContractException} means a
 * broken contract, reported as such. Cancellation arrives as thread interruption.
 */
@FunctionalInterface
public interface RolloutWorkflow {

    /**
     * Runs one episode.
     *
     * @param engine the node's inference engine, shared by all slots
     * @param data one dataset item (a JSON object); shared by the group's slots, do not modify
     * @return the episode's result, never null
     */
    EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception;
}
