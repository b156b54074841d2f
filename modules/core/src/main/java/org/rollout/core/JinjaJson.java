package org.rollout.core;

import java.lang.reflect.Array;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * JSON text exactly as Python's {@code json.dumps} writes it, which is what the {@code tojson}
 * filter of Hugging Face chat templates produces ({@code ensure_ascii=False} by default). Chat
 * templates embed tool schemas and tool-call arguments with it, so the bytes must match what the
 * model saw in training: {@code {"a": 1, "b": [1, 2]}} with a space after {@code :} and {@code ,},
 * floats in Python's {@code repr} form ({@code 1e-05}, {@code 1e+16}, {@code 0.5}), non-ASCII kept
 * as is unless {@code ensureAscii}.
 *
 * <p>Accepts maps (keys rendered as strings), iterables and arrays, strings and other char
 * sequences, numbers, booleans and null; anything else is an {@link IllegalArgumentException}
 * naming its class, as Python's {@code TypeError: Object of type X is not JSON serializable}.
 * Stateless and thread-safe.
 */
final class JinjaJson {
    private JinjaJson() {}

    /** {@code json.dumps(value, ensure_ascii=ensureAscii, indent=indent, separators=..., sort_keys=sortKeys)}. */
    static String dumps(
            Object value,
            Integer indent,
            String itemSeparator,
            String keySeparator,
            boolean sortKeys,
            boolean ensureAscii) {
        // Python's defaults: (", ", ": ") without indent, ("," , ": ") with one.
        String items = itemSeparator != null ? itemSeparator : (indent == null ? ", " : ",");
        String keys = keySeparator != null ? keySeparator : ": ";
        StringBuilder sb = new StringBuilder();
        new Writer(sb, indent, items, keys, sortKeys, ensureAscii).write(value, 0);
        return sb.toString();
    }

    /** {@code json.dumps(value, ensure_ascii=False)}. */
    static String dumps(Object value) {
        return dumps(value, null, null, null, false, false);
    }

    private record Writer(
            StringBuilder sb, Integer indent, String items, String keys, boolean sortKeys, boolean ensureAscii) {

        void write(Object v, int level) {
            switch (v) {
                case null -> sb.append("null");
                case Boolean b -> sb.append(b ? "true" : "false");
                case CharSequence s -> string(s.toString());
                case Character c -> string(c.toString());
                case Number n -> number(n);
                case Map<?, ?> m -> map(m, level);
                case Iterable<?> it -> list(it, level);
                default -> {
                    if (v.getClass().isArray()) {
                        List<Object> elements = new ArrayList<>();
                        for (int i = 0; i < Array.getLength(v); i++) {
                            elements.add(Array.get(v, i));
                        }
                        list(elements, level);
                    } else {
                        throw new IllegalArgumentException(
                                "tojson: object of type " + v.getClass().getName() + " is not JSON serializable");
                    }
                }
            }
        }

        private void map(Map<?, ?> m, int level) {
            if (m.isEmpty()) {
                sb.append("{}");
                return;
            }
            List<Map.Entry<String, Object>> entries = new ArrayList<>();
            m.forEach((k, v) -> entries.add(Map.entry(key(k), v == null ? NULL : v)));
            if (sortKeys) {
                entries.sort(Map.Entry.comparingByKey());
            }
            sb.append('{');
            for (int i = 0; i < entries.size(); i++) {
                separate(i, level + 1);
                string(entries.get(i).getKey());
                sb.append(keys);
                Object value = entries.get(i).getValue();
                write(value == NULL ? null : value, level + 1);
            }
            close(level, '}');
        }

        private void list(Iterable<?> it, int level) {
            int i = 0;
            sb.append('[');
            for (Object e : it) {
                separate(i++, level + 1);
                write(e, level + 1);
            }
            if (i == 0) {
                sb.append(']');
                return;
            }
            close(level, ']');
        }

        private void separate(int index, int level) {
            if (index > 0) {
                sb.append(items);
            }
            newline(level);
        }

        private void close(int level, char bracket) {
            newline(level);
            sb.append(bracket);
        }

        private void newline(int level) {
            if (indent != null) {
                sb.append('\n').append(" ".repeat(indent * level));
            }
        }

        /** Python converts non-string keys: None → "null", True → "true", numbers as written. */
        private static String key(Object k) {
            if (k == null) {
                return "null";
            }
            if (k instanceof Double || k instanceof Float) {
                return floatRepr(((Number) k).doubleValue());
            }
            return k.toString();
        }

        private void number(Number n) {
            switch (n) {
                case Double d -> sb.append(floatRepr(d));
                case Float f -> sb.append(floatRepr(f.doubleValue()));
                case BigDecimal bd ->
                    sb.append(bd.scale() <= 0 ? bd.toBigInteger().toString() : floatRepr(bd.doubleValue()));
                case BigInteger bi -> sb.append(bi);
                default -> sb.append(n.longValue());
            }
        }

        private void string(String s) {
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    case '\b' -> sb.append("\\b");
                    case '\f' -> sb.append("\\f");
                    default -> {
                        if (c < 0x20 || (ensureAscii && c > 0x7E)) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                    }
                }
            }
            sb.append('"');
        }
    }

    /** Stands in for a null map value while entries are sorted. */
    private static final Object NULL = new Object();

    /**
     * Python's {@code repr(float)}: the shortest digits that round-trip, in fixed notation when the
     * decimal exponent is in [-4, 16), otherwise {@code d.ddde±XX}; JSON spells the non-finite
     * values {@code NaN}, {@code Infinity} and {@code -Infinity}.
     */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        String sign = (d < 0 || (d == 0 && 1 / d < 0)) ? "-" : "";
        double abs = Math.abs(d);
        if (abs == 0) {
            return sign + "0.0";
        }
        // Double.toString gives the shortest round-tripping digits (JDK 19+), as Python's repr does,
        // except that it never prints fewer than two: 5e-324 comes out as 4.9E-324.
        BigDecimal bd = new BigDecimal(Double.toString(abs)).stripTrailingZeros();
        String digits = bd.unscaledValue().toString();
        int decpt = digits.length() - bd.scale(); // value = 0.digits × 10^decpt
        if (digits.length() == 2) {
            String one = oneDigit(abs, digits, decpt);
            if (one != null) {
                digits = one.length() == 2 ? "1" : one; // "10" means the digit rounded up to the next decade
                decpt += one.length() == 2 ? 1 : 0;
            }
        }
        StringBuilder out = new StringBuilder(sign);
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                out.append("0.").append("0".repeat(-decpt)).append(digits);
            } else if (decpt >= digits.length()) {
                out.append(digits).append("0".repeat(decpt - digits.length())).append(".0");
            } else {
                out.append(digits, 0, decpt).append('.').append(digits, decpt, digits.length());
            }
        } else {
            out.append(digits.charAt(0));
            if (digits.length() > 1) {
                out.append('.').append(digits, 1, digits.length());
            }
            int exp = decpt - 1;
            out.append('e').append(exp < 0 ? '-' : '+');
            String e = Integer.toString(Math.abs(exp));
            out.append(e.length() < 2 ? "0" + e : e);
        }
        return out.toString();
    }

    /** A one-digit decimal 0.d × 10^decpt that reads back as {@code abs}, the nearer one first; or null. */
    private static String oneDigit(double abs, String twoDigits, int decpt) {
        int first = twoDigits.charAt(0) - '0';
        int second = twoDigits.charAt(1) - '0';
        int nearer = second >= 5 ? first + 1 : first;
        for (int d : new int[] {nearer, nearer == first ? first + 1 : first}) {
            String candidate = d == 10 ? "0.1E" + (decpt + 1) : "0." + d + "E" + decpt;
            if (d >= 1 && Double.parseDouble(candidate) == abs) {
                return Integer.toString(d);
            }
        }
        return null;
    }
}
