package org.rollout.api;

import java.util.Collection;
import java.util.stream.Collectors;

/**
 * A configuration value that is not allowed. The message names the key (in AReaL's spelling, e.g.
 * {@code gconfig.top_p}), the value given and what is allowed, so a user can fix it without
 * reading code.
 */
public final class InvalidConfigException extends IllegalArgumentException {
    private final String key;
    private final transient Object value;
    private final String allowed;

    public InvalidConfigException(String key, Object value, String allowed) {
        super("invalid value for '" + key + "': " + render(value) + " (allowed: " + allowed + ")");
        this.key = key;
        this.value = value;
        this.allowed = allowed;
    }

    /** The offending key, e.g. {@code top_p} or, once prefixed, {@code gconfig.top_p}. */
    public String key() {
        return key;
    }

    /** The value that was given. */
    public Object value() {
        return value;
    }

    /** What is allowed, in words. */
    public String allowed() {
        return allowed;
    }

    /** The same error with the key placed under {@code prefix} (e.g. {@code eval_gconfig}). */
    public InvalidConfigException under(String prefix) {
        InvalidConfigException e = new InvalidConfigException(prefix + "." + key, value, allowed);
        e.setStackTrace(getStackTrace());
        return e;
    }

    /** Strings quoted, also inside lists, so that an empty or blank string is visible. */
    private static String render(Object value) {
        if (value instanceof String s) {
            return "\"" + s + "\"";
        }
        if (value instanceof Collection<?> c) {
            return c.stream().map(InvalidConfigException::render).collect(Collectors.joining(", ", "[", "]"));
        }
        return String.valueOf(value);
    }
}
