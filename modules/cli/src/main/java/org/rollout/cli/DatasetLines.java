package org.rollout.cli;

import java.nio.file.Path;
import java.util.List;
import org.rollout.api.InvalidConfigException;
import org.rollout.cluster.JsonlPromptSource;
import org.rollout.config.OnMalformed;

/**
 * The dataset files of a run, read as {@link JsonlPromptSource}s: a refusal ({@code on_malformed =
 * fail}) names the key the files came from ({@code rollout.dataset.train} or {@code
 * rollout.dataset.eval}) instead of the source's generic {@code dataset}. Skipped lines are
 * reported by the source itself, each as {@code file:line: problem}.
 */
final class DatasetLines {
    private DatasetLines() {}

    /**
     * The prompts of {@code files}.
     *
     * @throws InvalidConfigException as {@link JsonlPromptSource} does, naming {@code key}
     */
    static JsonlPromptSource read(
            String key, List<Path> files, boolean cycle, Long shuffleSeed, OnMalformed onMalformed) {
        try {
            return new JsonlPromptSource(files, cycle, shuffleSeed, onMalformed);
        } catch (InvalidConfigException e) {
            if (!e.key().equals("dataset")) {
                throw e;
            }
            InvalidConfigException named = new InvalidConfigException(key, String.valueOf(e.value()), e.allowed());
            named.initCause(e);
            throw named;
        }
    }
}
