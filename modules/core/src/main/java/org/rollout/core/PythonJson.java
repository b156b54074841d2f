package org.rollout.core;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.PrettyPrinter;
import java.io.IOException;
import java.io.Writer;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.function.Predicate;

/**
 * JSON that reads like Python's {@code json.dumps} with default arguments, so our dump lines
 * look like AReaL's: {@code ", "} between items, {@code ": "} after keys, floats as Python's
 * {@code repr} ({@code 0.1}, {@code 1.0}, {@code 1e-05}, {@code 1e+16}, {@code NaN},
 * {@code Infinity}).
 *
 * <p>One deliberate difference: non-ASCII text is written as UTF-8, not as {@code \}{@code uXXXX}
 * escapes (Python's {@code ensure_ascii=True}), so dumps stay readable. Control characters are
 * escaped as JSON requires, with upper-case hex digits where Python writes lower-case.
 *
 * <p>Stateless and thread-safe.
 */
final class PythonJson {
    private static final JsonFactory FACTORY = JsonFactory.builder().build();
    private static final PrettyPrinter SEPARATORS = new PythonSeparators();

    private PythonJson() {}

    /** A generator writing to {@code out} with Python's separators. */
    static JsonGenerator generator(Writer out) throws IOException {
        JsonGenerator g = FACTORY.createGenerator(out);
        g.setPrettyPrinter(SEPARATORS);
        return g;
    }

    /** Writes {@code value} as Python's {@code json.dumps} would write that float. */
    static void writeFloat(JsonGenerator g, double value) throws IOException {
        g.writeNumber(floatRepr(value));
    }

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

    /** Python's default separators, no indentation, no newline. */
    private static final class PythonSeparators implements PrettyPrinter {
        @Override
        public void writeRootValueSeparator(JsonGenerator g) {}

        @Override
        public void writeStartObject(JsonGenerator g) throws IOException {
            g.writeRaw('{');
        }

        @Override
        public void beforeObjectEntries(JsonGenerator g) {}

        @Override
        public void writeObjectFieldValueSeparator(JsonGenerator g) throws IOException {
            g.writeRaw(": ");
        }

        @Override
        public void writeObjectEntrySeparator(JsonGenerator g) throws IOException {
            g.writeRaw(", ");
        }

        @Override
        public void writeEndObject(JsonGenerator g, int entries) throws IOException {
            g.writeRaw('}');
        }

        @Override
        public void writeStartArray(JsonGenerator g) throws IOException {
            g.writeRaw('[');
        }

        @Override
        public void beforeArrayValues(JsonGenerator g) {}

        @Override
        public void writeArrayValueSeparator(JsonGenerator g) throws IOException {
            g.writeRaw(", ");
        }

        @Override
        public void writeEndArray(JsonGenerator g, int values) throws IOException {
            g.writeRaw(']');
        }
    }
}
