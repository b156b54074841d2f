package org.rollout.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigOriginFactory;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueFactory;
import com.typesafe.config.ConfigValueType;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.rollout.api.InvalidConfigException;

/**
 * Command-line overrides, {@code key=value}: how {@link RolloutConfig} reads one (the syntax is in
 * its class comment). Stateless.
 */
final class Overrides {
    // Numbers in an override that HOCON does not read as numbers (.95, +3, 1.).
    private static final Pattern LOOSE_INTEGER = Pattern.compile("[+-]?\\d{1,18}");
    private static final Pattern LOOSE_DECIMAL = Pattern.compile("[+-]?(\\d+\\.\\d*|\\.\\d+)([eE][+-]?\\d+)?");

    private Overrides() {}

    /** One {@code key=value} override as a configuration with that one value. */
    static Config parseOverride(String override) {
        String example = "key=value, e.g. rollout.consumer_batch_size=8";
        int eq = override.indexOf('=');
        if (eq < 0) {
            throw new InvalidConfigException("override", override, example);
        }
        String key = override.substring(0, eq).strip();
        if (key.isEmpty()) {
            throw new InvalidConfigException("override", override, example + " (the key is empty)");
        }
        List<String> path;
        try {
            path = ConfigUtil.splitPath(key);
        } catch (ConfigException e) {
            throw new InvalidConfigException("override", override, example + " (the key is not a HOCON path)");
        }
        String origin = "override " + override;
        Object value = overrideValue(override.substring(eq + 1));
        ConfigValue v = value instanceof ConfigValue parsed
                ? parsed.withOrigin(ConfigOriginFactory.newSimple(origin))
                : ConfigValueFactory.fromAnyRef(value, origin);
        return ConfigFactory.empty().withValue(ConfigUtil.joinPath(path), v);
    }

    /**
     * The value of an override (see {@link RolloutConfig}'s class comment): the parsed HOCON value,
     * which keeps a number as written (for a string key, 007 stays 007), or a plain Java value when
     * read as written.
     */
    static Object overrideValue(String raw) {
        String text = raw.strip();
        if (text.isEmpty()) {
            return "";
        }
        try {
            Config parsed = ConfigFactory.parseString("v = " + text);
            ConfigValue v = parsed.isResolved() ? parsed.root().get("v") : null;
            if (v == null) {
                return text;
            }
            if (v.valueType() == ConfigValueType.STRING && !text.startsWith("\"")) {
                // A number HOCON does not spell (.95, +3, 1.), or an unquoted string HOCON may have cut
                // at a comment or re-spaced: read as written.
                return looseNumber(text);
            }
            return v;
        } catch (ConfigException e) {
            if (text.length() >= 2 && text.startsWith("[") && text.endsWith("]")) {
                String inner = text.substring(1, text.length() - 1).strip();
                List<Object> elements = new ArrayList<>();
                if (!inner.isEmpty()) {
                    for (String element : inner.split(",", -1)) {
                        Object e2 = overrideValue(element);
                        elements.add(e2 instanceof ConfigValue cv ? cv.unwrapped() : e2);
                    }
                }
                return elements;
            }
            return looseNumber(text);
        }
    }

    /** {@code text} as a number when it spells one the way Java does, else as itself. */
    private static Object looseNumber(String text) {
        if (LOOSE_INTEGER.matcher(text).matches()) {
            long l = Long.parseLong(text);
            return l == (int) l ? (Object) (int) l : (Object) l;
        }
        if (LOOSE_DECIMAL.matcher(text).matches()) {
            return Double.parseDouble(text);
        }
        return text;
    }
}
