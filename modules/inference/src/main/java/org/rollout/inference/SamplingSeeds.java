package org.rollout.inference;

import org.rollout.api.GenerationConfig;
import org.rollout.api.WorkflowContext;

/**
 * The sampling seeds of {@code deterministic_sampling} (docs/inference.md, "Deterministic
 * sampling"): one seed per generation segment, a pure function of the task id, the slot (sample
 * index), whether the task is an evaluation, the request's prompt, the segment's index within the
 * request and {@code gconfig.seed} (0 when unset). Nothing in it depends on time, routing or the
 * process, so a rerun of the same tasks sends the same seeds; the slots of one group get different
 * seeds, and so do the turns of a multi-turn episode (their prompts differ).
 *
 * <p>Seeds lie in [0, 2<sup>53</sup>): exact as a JSON number in any parser and within SGLang's
 * and vLLM's 64-bit seed. Stateless.
 */
final class SamplingSeeds {
    /** Seeds are below this: 2^53. */
    static final long BOUND = 1L << 53;

    private SamplingSeeds() {}

    /**
     * The seed of segment {@code segment} (0 for the first) of a request for {@code prompt} made in
     * {@code context}; {@code gconfig.seed()} unchanged (possibly null) when the context names no
     * task (a request made outside a workflow, e.g. through the agent proxy's HTTP threads).
     */
    static Long seedFor(GenerationConfig gconfig, WorkflowContext context, int[] prompt, int segment) {
        if (context.taskId().isEmpty()) {
            return gconfig.seed();
        }
        long h = mix(gconfig.seed() == null ? 0L : gconfig.seed());
        h = mix(h ^ (context.isEval() ? 0x5bd1e995L : 0L));
        h = mix(h ^ context.taskId().getAsLong());
        h = mix(h ^ context.sampleIdx().orElse(-1));
        long p = prompt.length;
        for (int id : prompt) {
            p = p * 0x100000001b3L + id;
        }
        h = mix(h ^ p);
        h = mix(h ^ segment);
        return h & (BOUND - 1);
    }

    /** SplitMix64's finaliser: every input bit affects every output bit. */
    private static long mix(long z) {
        z += 0x9e3779b97f4a7c15L;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
