package org.rollout.benchmarks.e2e;

import java.time.Duration;
import java.util.Map;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.InferenceEngine;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.StopReason;
import org.rollout.api.WorkflowContext;
import org.rollout.core.TrajectoryRows;

/**
 * The scale-out benchmark's workflow, run by node JVMs as a class-named workflow ({@code
 * rollout.workflow = org.rollout.benchmarks.e2e.ScaleOutWorkflow}). With {@code payload_tokens = 0}
 * (the default) an episode is one generation of the task's prompt, one trajectory row, as {@link
 * SingleGenerationWorkflow}; with {@code payload_tokens = N > 0} it makes no request and returns a row
 * of N synthetic output tokens stamped with the engine's current version, so that groups as large as
 * a 16 × 32k-token group are made as fast as a node can allocate them (the hand-off bandwidth
 * phase). Stateless and thread-safe.
 *
 * <p>workflow_kwargs: {@code prompt_tokens} (default 32), {@code payload_tokens} (default 0), and the
 * {@code gconfig} the node injects.
 */
public final class ScaleOutWorkflow implements RolloutWorkflow {
    private final GenerationConfig gconfig;
    private final int promptTokens;
    private final int payloadTokens;

    public ScaleOutWorkflow(Map<String, Object> kwargs) {
        if (!(kwargs.get("gconfig") instanceof GenerationConfig g)) {
            throw new IllegalArgumentException("ScaleOutWorkflow: workflow_kwargs.gconfig must be a GenerationConfig");
        }
        this.gconfig = g.withNSamples(1);
        this.promptTokens = intKwarg(kwargs, "prompt_tokens", 32, 1);
        this.payloadTokens = intKwarg(kwargs, "payload_tokens", 0, 0);
    }

    private static int intKwarg(Map<String, Object> kwargs, String key, int fallback, int min) {
        Object v = kwargs.get(key);
        if (v == null) {
            return fallback;
        }
        if (v instanceof Number n && n.intValue() >= min && n.doubleValue() == n.intValue()) {
            return n.intValue();
        }
        throw new IllegalArgumentException(
                "ScaleOutWorkflow: workflow_kwargs." + key + " must be an integer >= " + min + ", got " + v);
    }

    @Override
    public EpisodeResult runEpisode(InferenceEngine engine, Map<String, Object> data) throws InterruptedException {
        WorkflowContext ctx = WorkflowContext.current();
        long task = ctx.taskId().orElse(data.hashCode());
        int slot = ctx.sampleIdx().orElse(0);
        int[] prompt = new int[promptTokens];
        for (int i = 0; i < promptTokens; i++) {
            prompt[i] = 'a' + (int) Math.floorMod(task * 7 + i, 26L);
        }
        double reward = slot / (double) Math.max(1, ctx.groupSize());
        if (payloadTokens == 0) {
            ModelResponse r = engine.generate(ModelRequest.of("t" + task + "s" + slot, prompt, gconfig));
            return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, reward));
        }
        int[] tokens = new int[payloadTokens];
        float[] logprobs = new float[payloadTokens];
        int[] versions = new int[payloadTokens];
        int version = engine.version();
        for (int i = 0; i < payloadTokens; i++) {
            tokens[i] = 'a' + (int) ((task + slot + i) % 26);
            logprobs[i] = -0.001f * (i % 1000);
            versions[i] = version;
        }
        ModelResponse r = ModelResponse.of(prompt, tokens, logprobs, versions, StopReason.LENGTH, Duration.ZERO);
        return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, reward));
    }
}
