package org.rollout.cluster;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongFunction;

/**
 * Prompts made by a function of their index {@code 0, 1, 2, …}, up to {@code limit} items (or
 * without end when {@code limit < 0}). The built-in demo task uses it.
 */
public final class GeneratedPromptSource implements PromptSource {
    private final LongFunction<Map<String, Object>> generator;
    private final long limit;

    public GeneratedPromptSource(LongFunction<Map<String, Object>> generator, long limit) {
        this.generator = Objects.requireNonNull(generator, "generator");
        this.limit = limit;
    }

    @Override
    public Optional<Map<String, Object>> item(long index) {
        if (index < 0 || (limit >= 0 && index >= limit)) {
            return Optional.empty();
        }
        return Optional.of(Objects.requireNonNull(generator.apply(index), () -> "generated prompt " + index));
    }
}
