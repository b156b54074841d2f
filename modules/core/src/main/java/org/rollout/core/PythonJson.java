package org.rollout.core;

import java.lang.reflect.Array;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * JSON text exactly as Python's {@code json.dumps} writes it. Two places need those bytes: the
 * {@code tojson} filter of Hugging Face chat templates, which embeds tool schemas and tool-call
 * arguments in the prompt (they must match what the model saw in training), and the trajectory
 * dump lines, which read like AReaL's. So: {@code {"a": 1, "b": [1, 2]}} with a space after
 * {@code :} and {@code ,}, floats in Python's {@code repr} form ({@code 0.1}, {@code 1.0},
 * {@code 1e-05}, {@code 1e+16}, {@code NaN}, {@code Infinity}), control characters escaped with
 * lower-case hex, non-ASCII kept as is unless {@code ensureAscii} (the default of the
 * {@code tojson} filter; dumps keep it too, so they stay readable).
 *
 * <p>Accepts maps (keys rendered as strings), iterables and arrays, strings and other char
 * sequences, numbers, booleans and null; anything else is an {@link IllegalArgumentException}
 * naming its class, as Python's {@code TypeError: Object of type X is not JSON serializable}.
 * Stateless and thread-safe.
 */
final class PythonJson {
    private PythonJson() {}

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
     * The double whose Python {@code repr} is the shortest decimal of the float32 {@code value}:
     * {@code 0.1f} becomes {@code 0.1}, not {@code 0.10000000149011612}. Dumps show rewards this
     * way because the float32 is what the trajectory holds; its widening is an artefact.
     */
    static double float32AsDecimal(float value) {
        if (!Float.isFinite(value) || value == 0f) {
            return value;
        }
        BigDecimal shortest =
                shortest(new BigDecimal(Float.toString(value)), new BigDecimal(value), d -> d.floatValue() == value);
        return shortest.doubleValue();
    }

    /**
     * Python's {@code repr(float)} (as {@code json.dumps} uses it): the shortest decimal that
     * round-trips, in positional notation when the decimal exponent is in {@code [-4, 16)},
     * otherwise in scientific notation with a signed two-digit-minimum exponent.
     */
    static String floatRepr(double value) {
        if (Double.isNaN(value)) {
            return "NaN";
        }
        if (Double.isInfinite(value)) {
            return value > 0 ? "Infinity" : "-Infinity";
        }
        if (value == 0.0) {
            return Double.doubleToRawLongBits(value) == 0L ? "0.0" : "-0.0";
        }
        String sign = value < 0 ? "-" : "";
        double abs = Math.abs(value);
        BigDecimal decimal =
                shortest(new BigDecimal(Double.toString(abs)), new BigDecimal(abs), d -> d.doubleValue() == abs);
        String digits = decimal.unscaledValue().toString();
        int exponent = digits.length() - 1 - decimal.scale(); // value = d.ddd × 10^exponent
        if (exponent < -4 || exponent >= 16) {
            String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
            String exp = Integer.toString(Math.abs(exponent));
            return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + (exp.length() < 2 ? "0" + exp : exp);
        }
        if (exponent < 0) {
            return sign + "0." + "0".repeat(-exponent - 1) + digits;
        }
        int intDigits = exponent + 1;
        if (digits.length() <= intDigits) {
            return sign + digits + "0".repeat(intDigits - digits.length()) + ".0";
        }
        return sign + digits.substring(0, intDigits) + "." + digits.substring(intDigits);
    }

    /**
     * The shortest decimal that round-trips, starting from Java's {@code toString} digits (JDK 19+
     * gives the shortest, except that it never gives a single digit: where one digit would do, it
     * gives the two-digit decimal closest to the value, {@code 4.9E-324} for {@code 5e-324}). With
     * two digits, a one-digit neighbour that also round-trips wins, the closer one if both do, as
     * in Python.
     */
    private static BigDecimal shortest(BigDecimal javaDigits, BigDecimal exact, Predicate<BigDecimal> roundTrips) {
        BigDecimal d = javaDigits.stripTrailingZeros();
        if (d.precision() != 2) {
            return d;
        }
        BigDecimal best = null;
        for (RoundingMode mode : new RoundingMode[] {RoundingMode.FLOOR, RoundingMode.CEILING}) {
            BigDecimal candidate = d.round(new MathContext(1, mode)).stripTrailingZeros();
            if (roundTrips.test(candidate)
                    && (best == null
                            || candidate
                                            .subtract(exact)
                                            .abs()
                                            .compareTo(best.subtract(exact).abs())
                                    < 0)) {
                best = candidate;
            }
        }
        return best != null ? best : d;
    }
}
