package org.rollout.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Whether two OpenAI chat messages say the same thing, for linking a completion to its parent.
 *
 * <p>Compared: {@code role}; the content text (a string, or text parts joined; null, absent and
 * empty are the same); {@code tool_call_id}; {@code name}; and the tool calls in order, by function
 * name and arguments (JSON strings compared as the JSON they encode, so {@code {"a":1}} equals
 * {@code {"a": 1}}). Ignored: tool call ids (clients may regenerate them), {@code refusal},
 * {@code annotations}, {@code audio} and other response-only fields that SDKs echo back. AReaL
 * compares dicts exactly and only warns on near misses; this is deliberately more forgiving.
 */
final class MessageEquivalence {
    private static final ObjectMapper JSON = new ObjectMapper();

    private MessageEquivalence() {}

    static boolean same(Map<String, Object> a, Map<String, Object> b) {
        if (a == null || b == null) {
            return a == b;
        }
        return Objects.equals(a.get("role"), b.get("role"))
                && text(a.get("content")).equals(text(b.get("content")))
                && Objects.equals(a.get("tool_call_id"), b.get("tool_call_id"))
                && Objects.equals(a.get("name"), b.get("name"))
                && sameCalls(a.get("tool_calls"), b.get("tool_calls"));
    }

    private static String text(Object content) {
        if (content == null) {
            return "";
        }
        if (content instanceof String s) {
            return s;
        }
        if (content instanceof List<?> parts) {
            StringBuilder sb = new StringBuilder();
            for (Object p : parts) {
                if (p instanceof Map<?, ?> part && part.get("text") instanceof String t) {
                    sb.append(t);
                } else {
                    sb.append(p);
                }
            }
            return sb.toString();
        }
        return String.valueOf(content);
    }

    private static boolean sameCalls(Object a, Object b) {
        List<?> x = a instanceof List<?> l ? l : List.of();
        List<?> y = b instanceof List<?> l ? l : List.of();
        if (x.size() != y.size()) {
            return false;
        }
        for (int i = 0; i < x.size(); i++) {
            if (!(x.get(i) instanceof Map<?, ?> p) || !(y.get(i) instanceof Map<?, ?> q)) {
                return false;
            }
            Map<?, ?> f = p.get("function") instanceof Map<?, ?> m ? m : p;
            Map<?, ?> g = q.get("function") instanceof Map<?, ?> m ? m : q;
            if (!Objects.equals(f.get("name"), g.get("name"))
                    || !Objects.equals(arguments(f.get("arguments")), arguments(g.get("arguments")))) {
                return false;
            }
        }
        return true;
    }

    private static Object arguments(Object v) {
        if (v instanceof String s) {
            try {
                return JSON.readTree(s);
            } catch (JsonProcessingException e) {
                return s;
            }
        }
        return v == null ? null : JSON.valueToTree(v);
    }
}
