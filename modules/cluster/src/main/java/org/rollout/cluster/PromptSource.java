package org.rollout.cluster;

import java.util.Map;
import java.util.Optional;

/**
 * Where the coordinator gets prompts: one data item (a JSON object) per task, by index. The same
 * index always gives the same item, so a coordinator that takes over after its node was lost
 * re-reads the prompts of lost tasks, and continues after the last one taken, from the index alone
 * (see {@link DurableState}). Implementations: {@link JsonlPromptSource} (dataset files) and
 * {@link GeneratedPromptSource} (a function of the index). Called only from the coordinator's
 * actor, so implementations need not be thread-safe.
 */
public interface PromptSource {

    /**
     * Item {@code index} (0, 1, 2, … in the order the source hands them out), or empty when the
     * source has fewer items (a cycling source never has).
     */
    Optional<Map<String, Object>> item(long index);
}
