package org.rollout.config;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigList;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.rollout.api.InvalidConfigException;

/**
 * Typed reading of a resolved configuration tree with errors in our format: every problem becomes
 * an {@link InvalidConfigException} keyed by the full dotted path, collected rather than thrown,
 * so that one start-up reports everything wrong.
 *
 * <p>Types are strict: a string is not a number, a fraction is not an integer, a list is not a
 * string, null is refused where no null is allowed. Two leniencies: where a single string is
 * expected, a number or boolean is taken as its text (as HOCON's {@code getString} does, so that
 * {@code trial_name=1} works); and a string that came from an environment variable (HOCON
 * {@code ${?VAR}}), which can only be a string, is read as the number or boolean it spells. A reader method that fails records the error, marks the key failed (see {@link #ok})
 * and returns null; callers skip checks that depend on a failed key.
 *
 * <p>Not thread-safe; one reader per load.
 */
final class ConfigReader {
    /** Longest duration accepted, as {@code InferenceConfig} does: 10^9 s. */
    private static final double MAX_SECONDS = 1e9;

    private static final Pattern NUMERIC = Pattern.compile("[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?");
    private static final Pattern INTEGER = Pattern.compile("[+-]?\\d+");

    private final ConfigObject root;
    private final List<InvalidConfigException> errors = new ArrayList<>();
    private final Set<String> failed = new HashSet<>();

    ConfigReader(ConfigObject root) {
        this.root = root;
    }

    List<InvalidConfigException> errors() {
        return errors;
    }

    void error(InvalidConfigException e) {
        errors.add(e);
        failed.add(e.key());
    }

    void error(String key, Object value, String allowed) {
        error(new InvalidConfigException(key, value, allowed));
    }

    /** Marks a key failed without an error of its own (its section was already reported). */
    void markFailed(String key) {
        failed.add(key);
    }

    /** Whether none of {@code keys} failed. */
    boolean ok(String... keys) {
        for (String k : keys) {
            if (failed.contains(k)) {
                return false;
            }
        }
        return true;
    }

    /**
     * The value at a dotted path of plain keys; null when absent, or when a section on the way is
     * not an object (already reported by the unknown-key walk) or is null.
     */
    ConfigValue value(String path) {
        ConfigValue v = root;
        for (String part : path.split("\\.")) {
            if (!(v instanceof ConfigObject o)) {
                return null;
            }
            v = o.get(part);
            if (v == null) {
                return null;
            }
        }
        return v;
    }

    /** Whether the path holds a value, null included. */
    boolean present(String path) {
        return value(path) != null;
    }

    /**
     * Whether every section on the way to {@code path} is an object. When one is not (a value the
     * unknown-key walk already reported), the key is marked failed without an error of its own.
     */
    private boolean reachable(String path) {
        int dot = path.lastIndexOf('.');
        if (dot < 0) {
            return true;
        }
        ConfigValue parent = value(path.substring(0, dot));
        if (parent instanceof ConfigObject) {
            return true;
        }
        failed.add(path);
        return false;
    }

    private static boolean isNull(ConfigValue v) {
        return v == null || v.valueType() == ConfigValueType.NULL;
    }

    private static boolean fromEnvironment(ConfigValue v) {
        return v.valueType() == ConfigValueType.STRING
                && v.origin().description().startsWith("env variables");
    }

    /**
     * An integer in {@code [min, max]}; null allowed only when {@code nullable}.
     *
     * @param allowed the whole description, used for type and range errors alike
     */
    Long integer(String path, long min, long max, boolean nullable, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (isNull(v)) {
            if (!nullable) {
                error(path, null, allowed);
            }
            return null;
        }
        Long n = null;
        if (v.valueType() == ConfigValueType.NUMBER) {
            Object u = v.unwrapped();
            if (u instanceof Integer || u instanceof Long) {
                n = ((Number) u).longValue();
            }
        } else if (fromEnvironment(v)) {
            String s = ((String) v.unwrapped()).strip();
            if (INTEGER.matcher(s).matches()) {
                try {
                    n = Long.parseLong(s);
                } catch (NumberFormatException e) {
                    n = null;
                }
            }
        }
        if (n == null || n < min || n > max) {
            error(path, shown(v), allowed);
            return null;
        }
        return n;
    }

    /** An {@code int} in {@code [min, Integer.MAX_VALUE]}. */
    Integer intValue(String path, int min, boolean nullable, String allowed) {
        Long n = integer(path, min, Integer.MAX_VALUE, nullable, allowed);
        return n == null ? null : n.intValue();
    }

    /** Any number (whole or fractional); ranges are the caller's. */
    Double number(String path, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (v != null && v.valueType() == ConfigValueType.NUMBER) {
            return ((Number) v.unwrapped()).doubleValue();
        }
        if (v != null && fromEnvironment(v)) {
            String s = ((String) v.unwrapped()).strip();
            if (NUMERIC.matcher(s).matches()) {
                return Double.parseDouble(s);
            }
        }
        error(path, v == null ? null : shown(v), allowed);
        return null;
    }

    /** {@code true} or {@code false}. */
    Boolean bool(String path) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (v != null && v.valueType() == ConfigValueType.BOOLEAN) {
            return (Boolean) v.unwrapped();
        }
        if (v != null && fromEnvironment(v)) {
            String s = ((String) v.unwrapped()).strip();
            if (s.equals("true") || s.equals("false")) {
                return Boolean.parseBoolean(s);
            }
        }
        error(path, v == null ? null : shown(v), "true or false");
        return null;
    }

    /**
     * A string; a number or boolean is taken as its text. Null is allowed only when {@code
     * nullable} (then returned as null).
     */
    String string(String path, boolean nullable, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (isNull(v)) {
            if (!nullable) {
                error(path, null, allowed);
            }
            return null;
        }
        if (v.valueType() == ConfigValueType.NUMBER || v.valueType() == ConfigValueType.BOOLEAN) {
            // As HOCON's getString does, with the number as written (007 stays 007): a trial named 1
            // is written trial_name=1 on a command line.
            return ConfigFactory.empty().withValue("v", v).getString("v");
        }
        if (v.valueType() != ConfigValueType.STRING) {
            error(path, shown(v), allowed);
            return null;
        }
        return (String) v.unwrapped();
    }

    /** One of {@code options} (by its configuration spelling); null allowed only when {@code nullable}. */
    <E> E choice(String path, Map<String, E> options, boolean nullable, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (isNull(v) && nullable) {
            return null;
        }
        if (v != null && v.valueType() == ConfigValueType.STRING && options.containsKey((String) v.unwrapped())) {
            return options.get((String) v.unwrapped());
        }
        error(path, v == null ? null : shown(v), allowed);
        return null;
    }

    /**
     * A list of strings. With {@code splitString}, one string is also accepted and split at commas
     * (blank parts dropped), as AReaL's {@code AREAL_LLM_SERVER_ADDRS} is; without it, a string is
     * a list of one. Null is allowed only when {@code nullable} (then returned as null).
     */
    List<String> strings(String path, boolean nullable, boolean splitString, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (isNull(v)) {
            if (!nullable) {
                error(path, null, allowed);
            }
            return null;
        }
        if (v.valueType() == ConfigValueType.STRING) {
            String s = (String) v.unwrapped();
            if (!splitString) {
                return List.of(s);
            }
            List<String> parts = new ArrayList<>();
            for (String part : s.split(",")) {
                if (!part.isBlank()) {
                    parts.add(part.strip());
                }
            }
            return parts;
        }
        if (v.valueType() != ConfigValueType.LIST) {
            error(path, shown(v), allowed);
            return null;
        }
        List<String> out = new ArrayList<>();
        for (ConfigValue e : (ConfigList) v) {
            if (e.valueType() != ConfigValueType.STRING) {
                error(path, shown(v), allowed);
                return null;
            }
            out.add((String) e.unwrapped());
        }
        return out;
    }

    /** A list of integers (each within {@code int}); ranges are the caller's. */
    List<Integer> integers(String path, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (v == null || v.valueType() != ConfigValueType.LIST) {
            error(path, v == null ? null : shown(v), allowed);
            return null;
        }
        List<Integer> out = new ArrayList<>();
        for (ConfigValue e : (ConfigList) v) {
            Object u = e.unwrapped();
            if (e.valueType() != ConfigValueType.NUMBER
                    || !(u instanceof Integer || u instanceof Long)
                    || ((Number) u).longValue() != ((Number) u).intValue()) {
                error(path, shown(v), allowed);
                return null;
            }
            out.add(((Number) u).intValue());
        }
        return out;
    }

    /**
     * A duration: a number of seconds (fractions allowed), or a string holding one, or a HOCON
     * duration string such as {@code "90s"} or {@code "10 minutes"}. With {@code positive} it must
     * be above 0, else only not negative is left to the caller (the range check is theirs).
     */
    Duration seconds(String path, boolean positive) {
        if (!reachable(path)) {
            return null;
        }
        String allowed = positive ? "a number of seconds > 0" : "a number of seconds";
        ConfigValue v = value(path);
        Double s = null;
        if (v != null && v.valueType() == ConfigValueType.NUMBER) {
            s = ((Number) v.unwrapped()).doubleValue();
        } else if (v != null && v.valueType() == ConfigValueType.STRING) {
            String text = ((String) v.unwrapped()).strip();
            if (NUMERIC.matcher(text).matches()) {
                s = Double.parseDouble(text);
            } else {
                try {
                    Duration d = ConfigFactory.empty().withValue("d", v).getDuration("d");
                    s = d.toNanos() / 1e9;
                } catch (ConfigException e) {
                    s = null;
                }
            }
        }
        if (s == null || !Double.isFinite(s) || Math.abs(s) > MAX_SECONDS || (positive && s <= 0)) {
            error(path, v == null ? null : shown(v), allowed);
            return null;
        }
        return Duration.ofNanos(Math.round(s * 1e9));
    }

    /**
     * A byte size in {@code [min, max]}: a whole number of bytes, or a HOCON size string such as
     * {@code "128 KiB"} or {@code "1m"}.
     */
    Long bytes(String path, long min, long max, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        Long n = null;
        if (v != null
                && (v.valueType() == ConfigValueType.NUMBER
                                && (v.unwrapped() instanceof Integer || v.unwrapped() instanceof Long)
                        || v.valueType() == ConfigValueType.STRING)) {
            try {
                n = ConfigFactory.empty().withValue("b", v).getBytes("b");
            } catch (ConfigException e) {
                n = null;
            }
        }
        if (n == null || n < min || n > max) {
            error(path, v == null ? null : shown(v), allowed);
            return null;
        }
        return n;
    }

    /** An object, unwrapped deep-immutable with sorted keys. */
    Map<String, Object> object(String path, String allowed) {
        if (!reachable(path)) {
            return null;
        }
        ConfigValue v = value(path);
        if (v == null || v.valueType() != ConfigValueType.OBJECT) {
            error(path, v == null ? null : shown(v), allowed);
            return null;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) ShownValues.immutable(v.unwrapped());
        return m;
    }

    /**
     * How a value appears in an error: scalars and lists as themselves, objects as compact JSON
     * ({@link ShownValues#of}).
     */
    static Object shown(ConfigValue v) {
        return ShownValues.of(v);
    }
}
