package org.rollout.cluster;

import java.util.Map;
import java.util.Optional;

/**
 * Where the coordinator gets prompts: one data item (a JSON object) per task. Implementations:
 * {@link JsonlPromptSource} (dataset files) and {@link GeneratedPromptSource} (a function of the
 * item index). Called only from the coordinator's actor, so implementations need not be
 * thread-safe.
 */
public interface PromptSource {

    /** The next item, or empty when the source is exhausted (a cycling source never is). */
    Optional<Map<String, Object>> next();
}
