package org.rollout.config;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import org.rollout.api.InvalidConfigException;

/**
 * Building a value object (GenerationConfig, InferenceConfig) from read values so that every rule it
 * breaks is reported once: each error is reported (through {@code rekey}), its key dropped back to
 * the default and the build retried. Stateless.
 */
final class ReportingBuild {
    private ReportingBuild() {}

    /**
     * Builds with {@code build}; returns null when some key could not be dropped (then an error was
     * reported).
     */
    static <K, T> T build(
            Map<K, Object> values,
            Function<Map<K, Object>, T> build,
            Function<String, K> keyOf,
            Function<InvalidConfigException, InvalidConfigException> rekey,
            ConfigReader r) {
        Map<K, Object> left = new LinkedHashMap<>(values);
        boolean reported = false;
        while (true) {
            try {
                return build.apply(left);
            } catch (InvalidConfigException e) {
                K k = keyOf.apply(e.key());
                if (k == null || !left.containsKey(k)) {
                    // A default broke a rule together with a value already reported (e.g.
                    // retry_backoff_max's default below a large retry_backoff_initial): nothing new.
                    if (!reported) {
                        r.error(rekey.apply(e));
                    }
                    return null;
                }
                r.error(rekey.apply(e));
                reported = true;
                left.remove(k);
            }
        }
    }
}
