package org.rollout.benchmarks.e2e;

import java.util.Map;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;
import org.rollout.core.TrajectoryRows;

/**
 * The benchmarks' workflow: one generation per episode, returned as one trajectory row (RLVR's
 * shape) with reward {@code sample index / group size}. The prompt is {@code promptTokens} byte
 * tokens derived from the item's {@code index}; the rid is {@code p<index>s<sample index>}, so that
 * two runs over the same items send the same rids (a model server with simulated output lengths
 * then draws the same lengths for them). Stateless and thread-safe.
 */
public final class SingleGenerationWorkflow implements RolloutWorkflow {
    /** The item key holding the prompt's index (a {@link Number}). */
    public static final String INDEX = "index";

    private final GenerationConfig gconfig;
    private final int promptTokens;

    /**
     * @param gconfig the sampling parameters ({@code n_samples} is set to 1 per generation)
     * @param promptTokens the prompt length in tokens, {@code >= 1}
     */
    public SingleGenerationWorkflow(GenerationConfig gconfig, int promptTokens) {
        if (promptTokens < 1) {
            throw new IllegalArgumentException("prompt tokens must be >= 1, got " + promptTokens);
        }
        this.gconfig = gconfig.withNSamples(1);
        this.promptTokens = promptTokens;
    }

    /** An item for prompt {@code index}. */
    public static Map<String, Object> item(long index) {
        return Map.of(INDEX, index);
    }

    /** The prompt of item {@code index}: printable bytes that vary with the index. */
    public int[] prompt(long index) {
        int[] p = new int[promptTokens];
        for (int i = 0; i < promptTokens; i++) {
            p[i] = 'a' + (int) ((index * 7 + i) % 26);
        }
        return p;
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws Exception {
        Object raw = data.get(INDEX);
        if (!(raw instanceof Number n)) {
            throw new IllegalArgumentException("benchmark item has no numeric '" + INDEX + "': " + data.keySet());
        }
        long index = n.longValue();
        WorkflowContext ctx = WorkflowContext.current();
        int slot = ctx.sampleIdx().orElse(0);
        ModelResponse r = engine.generate(ModelRequest.of("p" + index + "s" + slot, prompt(index), gconfig));
        return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, slot / (double) Math.max(1, ctx.groupSize())));
    }
}
