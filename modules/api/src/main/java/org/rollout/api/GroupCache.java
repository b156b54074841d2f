package org.rollout.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * A cache shared by the slots of one group and released when the group ends: the place for work
 * every sample of a prompt needs once (a parsed problem, a tool sandbox, a processed image).
 *
 * <p>Values are created at most once per key, even when several slots ask at the same moment.
 * When the group ends the engine {@linkplain #close() closes} the cache: values that are
 * {@link AutoCloseable} are closed (failures are collected and reported, not thrown at a slot) and
 * later calls fail. A value stored while the cache is being released (a slot still in its factory
 * when the group ends) is closed too, exactly once, and the call that stored it fails instead of
 * handing it out. Thread-safe.
 */
public final class GroupCache implements AutoCloseable {
    private final Map<String, Object> values = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** A new, empty cache. The engine makes one per group; tests and tools may make their own. */
    public static GroupCache create() {
        return new GroupCache();
    }

    private GroupCache() {}

    /**
     * The value under {@code key}, created by {@code factory} if absent. Concurrent callers for one
     * key wait for the first to finish, and all get its value.
     *
     * @throws IllegalStateException after the group has ended
     * @throws ClassCastException when the cached value is not a {@code T}
     */
    @SuppressWarnings("unchecked")
    public <T> T computeIfAbsent(String key, Supplier<? extends T> factory) {
        checkOpen(key);
        Objects.requireNonNull(factory, "factory");
        Object value = values.computeIfAbsent(
                key, k -> Objects.requireNonNull(factory.get(), () -> "group cache value for '" + k + "'"));
        refuseIfReleased(key, value);
        return (T) value;
    }

    /** The value under {@code key}, or null. */
    @SuppressWarnings("unchecked")
    public <T> T get(String key) {
        checkOpen(key);
        return (T) values.get(key);
    }

    /**
     * Sets {@code key}; a replaced value is not closed.
     *
     * @throws IllegalStateException after the group has ended (the value is then not stored, or,
     *     when the group ended during this call, stored and closed)
     */
    public void put(String key, Object value) {
        checkOpen(key);
        values.put(key, Objects.requireNonNull(value, "value"));
        refuseIfReleased(key, value);
    }

    public int size() {
        return values.size();
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Ends the cache: closes every {@link AutoCloseable} value once.
     *
     * @return the failures of closing values, each naming its key (empty when all closed cleanly)
     */
    public List<Exception> release() {
        closed = true;
        List<Exception> failures = new ArrayList<>();
        for (String key : values.keySet()) {
            // Whoever removes a value closes it: this loop, or a store racing with it.
            Object v = values.remove(key);
            if (v instanceof AutoCloseable c) {
                try {
                    c.close();
                } catch (Exception e) {
                    failures.add(new IllegalStateException("closing group cache value '" + key + "' failed: " + e, e));
                }
            }
        }
        return failures;
    }

    /** Same as {@link #release()}, ignoring the failures' list (they are also not thrown). */
    @Override
    public void close() {
        release();
    }

    private void checkOpen(String key) {
        if (closed) {
            throw released(key);
        }
    }

    /**
     * After a store: when the cache was released meanwhile, release() may have passed this key
     * before the value arrived, so the value is taken back and closed here, and the call fails.
     */
    private void refuseIfReleased(String key, Object value) {
        if (!closed) {
            return;
        }
        IllegalStateException failure = released(key);
        if (values.remove(key, value) && value instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                failure.addSuppressed(e);
            }
        }
        throw failure;
    }

    private static IllegalStateException released(String key) {
        return new IllegalStateException("group cache is released (the group has ended); key '" + key + "'");
    }
}
