package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.math.BigDecimal;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class PythonJsonTest {

    /** Expected values are Python 3's {@code json.dumps(x)} output. */
    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "0.1 | 0.1",
                "1.0 | 1.0",
                "1e-5 | 1e-05",
                "1e16 | 1e+16",
                "1e15 | 1000000000000000.0",
                "123456789012345678.0 | 1.2345678901234568e+17",
                "0.0001 | 0.0001",
                "-0.0 | -0.0",
                "0.0 | 0.0",
                "2.5e-7 | 2.5e-07",
                "1.5e300 | 1.5e+300",
                "4.9e-324 | 5e-324",
                "1e22 | 1e+22",
                "1e23 | 1e+23",
                "100.0 | 100.0",
                "-3.25 | -3.25",
                "12345.678 | 12345.678",
                "9.999999e-5 | 9.999999e-05",
                "NaN | NaN",
                "Infinity | Infinity",
                "-Infinity | -Infinity"
            })
    void formatsFloatsAsPythonRepr(double value, String python) {
        assertThat(PythonJson.floatRepr(value)).isEqualTo(python);
    }

    @org.junit.jupiter.api.Test
    void formatsTheSmallestFloat32AsOneDigit() {
        assertThat(PythonJson.floatRepr(PythonJson.float32AsDecimal(Float.MIN_VALUE)))
                .isEqualTo("1e-45");
    }

    @org.junit.jupiter.api.Test
    void floatReprRoundTrips() {
        Property.forAll("floatReprRoundTrips", 1_000, Gen.doubles(), value -> {
            String s = PythonJson.floatRepr(value);
            double back = s.equals("NaN")
                    ? Double.NaN
                    : s.equals("Infinity")
                            ? Double.POSITIVE_INFINITY
                            : s.equals("-Infinity") ? Double.NEGATIVE_INFINITY : Double.parseDouble(s);
            assertThat(back).isEqualTo(value);
        });
    }

    @org.junit.jupiter.api.Test
    void float32AsDecimalPrintsTheFloatsShortestDecimal() {
        Property.forAll("float32AsDecimalPrintsTheFloatsShortestDecimal", 1_000, Gen.floats(), value -> {
            double d = PythonJson.float32AsDecimal(value);
            // Compared as Float objects: NaN equals NaN, and -0.0 must stay -0.0.
            assertThat((float) d).isEqualTo(value);
            if (Float.isFinite(value)) {
                BigDecimal java = new BigDecimal(Float.toString(value)).stripTrailingZeros();
                BigDecimal written = new BigDecimal(PythonJson.floatRepr(d)).stripTrailingZeros();
                // BigDecimal has no negative zero, so this one compares numbers (-0.0 == 0.0).
                assertThat(written.floatValue()).isEqualTo(value.floatValue());
                assertThat(written.precision()).isLessThanOrEqualTo(java.precision());
            }
        });
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {"0.1 | 0.1", "0.33333334 | 0.33333334", "1.4e-45 | 1e-45", "1e-5 | 1e-05", "16777216 | 16777216.0"
            })
    void float32RewardsUseTheirShortestDecimal(float value, String python) {
        assertThat(PythonJson.floatRepr(PythonJson.float32AsDecimal(value))).isEqualTo(python);
    }

    @org.junit.jupiter.api.Test
    void writesPythonSeparators() throws IOException {
        StringWriter out = new StringWriter();
        try (JsonGenerator g = PythonJson.generator(out)) {
            g.writeStartObject();
            g.writeArrayFieldStart("a");
            g.writeStartArray();
            g.writeNumber(5);
            g.writeNumber(2);
            g.writeEndArray();
            g.writeEndArray();
            g.writeStringField("b", "é\u0001\n");
            g.writeArrayFieldStart("c");
            g.writeEndArray();
            g.writeObjectFieldStart("d");
            g.writeEndObject();
            g.writeEndObject();
        }
        // Python: {"a": [[5, 2]], "b": "é\u0001\n", "c": [], "d": {}} with ensure_ascii=False
        assertThat(out.toString()).isEqualTo("{\"a\": [[5, 2]], \"b\": \"é\\u0001\\n\", \"c\": [], \"d\": {}}");
    }
}
