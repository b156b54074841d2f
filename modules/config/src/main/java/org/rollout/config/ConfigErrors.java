package org.rollout.config;

import java.util.List;
import org.rollout.api.InvalidConfigException;

/**
 * Several configuration values that are not allowed, found together at start-up: one line per
 * {@link InvalidConfigException}, each naming the key (AReaL's dotted spelling, e.g.
 * {@code gconfig.top_p}), the value and what is allowed, in the order the keys were checked.
 *
 * <pre>
 *   3 configuration errors:
 *     invalid value for 'rollout.consumer_batch_size': 0 (allowed: an integer &gt;= 1)
 *     invalid value for 'gconfig.top_p': 1.5 (allowed: a number in (0, 1])
 *     invalid value for 'rollout.consumer_batch_sise': 8 (allowed: no such key; did you mean …?)
 * </pre>
 *
 * <p>{@link RolloutConfig} throws a single {@link InvalidConfigException} when exactly one value is
 * wrong and this when several are, so that one run of the command shows everything to fix; both
 * are {@link IllegalArgumentException}s. Immutable.
 */
public final class ConfigErrors extends IllegalArgumentException {
    private final List<InvalidConfigException> errors;

    /** @param errors at least one error, in the order found */
    public ConfigErrors(List<InvalidConfigException> errors) {
        super(message(errors));
        this.errors = List.copyOf(errors);
    }

    /** Every error, in the order found. */
    public List<InvalidConfigException> errors() {
        return errors;
    }

    /** The keys of every error, in the order found. */
    public List<String> keys() {
        return errors.stream().map(InvalidConfigException::key).toList();
    }

    private static String message(List<InvalidConfigException> errors) {
        if (errors.isEmpty()) {
            throw new IllegalArgumentException("ConfigErrors needs at least one error");
        }
        StringBuilder b = new StringBuilder()
                .append(errors.size())
                .append(errors.size() == 1 ? " configuration error:" : " configuration errors:");
        for (InvalidConfigException e : errors) {
            b.append("\n  ").append(e.getMessage());
        }
        return b.toString();
    }
}
