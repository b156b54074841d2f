package org.rollout.config;

import com.typesafe.config.ConfigList;
import com.typesafe.config.ConfigRenderOptions;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.rollout.api.InvalidConfigException;

/** Values as {@link ConfigReader} hands them out and shows them in errors. Stateless. */
final class ShownValues {
    private ShownValues() {}

    /** {@code o} unwrapped deep-immutable, maps with sorted keys. */
    static Object immutable(Object o) {
        if (o instanceof Map<?, ?> m) {
            Map<String, Object> copy = new LinkedHashMap<>();
            new TreeMap<>(m).forEach((k, val) -> copy.put((String) k, immutable(val)));
            return Collections.unmodifiableMap(copy);
        }
        if (o instanceof List<?> l) {
            List<Object> copy = new ArrayList<>(l.size());
            l.forEach(e -> copy.add(immutable(e)));
            return Collections.unmodifiableList(copy);
        }
        return o;
    }

    /**
     * How a value appears in an error: scalars and lists as themselves (strings quoted by
     * {@link InvalidConfigException}), objects as compact JSON cut at 80 characters.
     */
    static Object of(ConfigValue v) {
        if (v == null) {
            return null;
        }
        if (v.valueType() == ConfigValueType.OBJECT) {
            String json = v.render(ConfigRenderOptions.concise());
            return new Rendered(json.length() > 80 ? json.substring(0, 79) + "…" : json);
        }
        if (v.valueType() == ConfigValueType.LIST) {
            for (ConfigValue e : (ConfigList) v) {
                if (e.valueType() == ConfigValueType.OBJECT || e.valueType() == ConfigValueType.LIST) {
                    String json = v.render(ConfigRenderOptions.concise());
                    return new Rendered(json.length() > 80 ? json.substring(0, 79) + "…" : json);
                }
            }
        }
        return v.unwrapped();
    }

    /** Text shown as is in an error message (not quoted). */
    record Rendered(String text) {
        @Override
        public String toString() {
            return text;
        }
    }
}
