package org.rollout.inference;

import java.util.Map;
import org.rollout.api.ModelRequest;
import org.rollout.api.WorkflowContext;

/**
 * What placement knows of one segment: the group and the trajectory it belongs to, and the names
 * of its tokens' blocks ({@link PrefixView#blockNames}). Keys are null when unknown.
 *
 * <ul>
 *   <li><b>Trajectory</b>: the request's {@value ModelRequest#AFFINITY_KEY} metadata when set (the
 *       agent proxy sets its session id, so an agent's turns stay together), else the episode's
 *       task, attempt and sample from the {@link WorkflowContext} of the thread that generates (a
 *       multi-turn workflow's next turn).
 *   <li><b>Group</b>: the episode's task (a group's samples share their prompt); none for a
 *       request outside an episode.
 * </ul>
 *
 * @param group the group's key, or null
 * @param trajectory the trajectory's key, or null
 * @param blocks the block names of the tokens sent (prompt and tokens so far); empty when not needed
 */
record Placement(String group, String trajectory, long[] blocks) {
    static final Placement NONE = new Placement(null, null, new long[0]);

    /** The placement of {@code request}'s segment that sends {@code prompt} and the first {@code outLength} of {@code out}. */
    static Placement of(ModelRequest request, int[] prompt, int[] out, int outLength, boolean withBlocks) {
        return of(request.metadata(), WorkflowContext.current(), prompt, out, outLength, withBlocks);
    }

    static Placement of(
            Map<String, Object> metadata,
            WorkflowContext context,
            int[] prompt,
            int[] out,
            int outLength,
            boolean withBlocks) {
        String group = null;
        String trajectory = null;
        if (context.taskId().isPresent()) {
            group = (context.isEval() ? "eval:" : "") + context.taskId().getAsLong();
            trajectory = group + "/" + context.attempt() + "/"
                    + (context.sampleIdx().isPresent() ? context.sampleIdx().getAsInt() : "-");
        }
        if (metadata.get(ModelRequest.AFFINITY_KEY) instanceof String key && !key.isBlank()) {
            trajectory = "session:" + key;
        }
        long[] blocks = withBlocks ? PrefixView.blockNames(prompt, out, outLength) : NONE.blocks;
        return new Placement(group, trajectory, blocks);
    }
}
