package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

/** Expected strings are Python 3's {@code json.dumps} and {@code repr} output. */
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

    @Test
    void formatsTheSmallestFloat32AsOneDigit() {
        assertThat(PythonJson.floatRepr(PythonJson.float32AsDecimal(Float.MIN_VALUE)))
                .isEqualTo("1e-45");
    }

    @Test
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

    @Test
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

    @Test
    void writesPythonSeparatorsAroundNestedValues() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", List.of(List.of(5, 2)));
        m.put("b", "é\u0001\n");
        m.put("c", List.of());
        m.put("d", Map.of());
        // Python: json.dumps(m, ensure_ascii=False)
        assertThat(PythonJson.dumps(m)).isEqualTo("{\"a\": [[5, 2]], \"b\": \"é\\u0001\\n\", \"c\": [], \"d\": {}}");
    }

    private static Map<String, Object> sample() {
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("x", null);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("b", List.of(1, inner));
        m.put("a", "q");
        m.put("c", Map.of());
        m.put("d", List.of());
        return m;
    }

    @Test
    void separatesItemsAndKeysWithASpaceLikePython() {
        assertThat(PythonJson.dumps(sample()))
                .isEqualTo("{\"b\": [1, {\"x\": null}], \"a\": \"q\", \"c\": {}, \"d\": []}");
    }

    @Test
    void indentsLikePythonWithoutTrailingSpacesAfterCommas() {
        assertThat(PythonJson.dumps(sample(), 2, null, null, false, false))
                .isEqualTo("{\n  \"b\": [\n    1,\n    {\n      \"x\": null\n    }\n  ],\n  \"a\": \"q\",\n"
                        + "  \"c\": {},\n  \"d\": []\n}");
    }

    @Test
    void sortsKeysAndEscapesNonAsciiOnRequest() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("b", 1);
        m.put("a", "é");
        assertThat(PythonJson.dumps(m, null, null, null, true, true)).isEqualTo("{\"a\": \"\\u00e9\", \"b\": 1}");
        assertThat(PythonJson.dumps(m)).isEqualTo("{\"b\": 1, \"a\": \"é\"}");
    }

    @Test
    void honoursCustomSeparators() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("b", 1);
        m.put("a", List.of(1, 2));
        assertThat(PythonJson.dumps(m, null, ",", ":", false, false)).isEqualTo("{\"b\":1,\"a\":[1,2]}");
    }

    @Test
    void escapesQuotesBackslashesAndControlCharacters() {
        assertThat(PythonJson.dumps("é\"\\\n\t\u0001\b\f\r")).isEqualTo("\"é\\\"\\\\\\n\\t\\u0001\\b\\f\\r\"");
    }

    @Test
    void rendersNonStringKeysAsPythonDoes() {
        Map<Object, Object> m = new LinkedHashMap<>();
        m.put(1, "x");
        m.put(null, "y");
        m.put(2.5, "w");
        assertThat(PythonJson.dumps(m)).isEqualTo("{\"1\": \"x\", \"null\": \"y\", \"2.5\": \"w\"}");
    }

    @Test
    void writesArraysAndIterablesAsLists() {
        assertThat(PythonJson.dumps(new int[] {1, 2})).isEqualTo("[1, 2]");
        assertThat(PythonJson.dumps(new ArrayList<>(List.of(true, false)))).isEqualTo("[true, false]");
        assertThat(PythonJson.dumps(List.of(1L, 2.0f))).isEqualTo("[1, 2.0]");
    }

    @Test
    void floatsAreWrittenAsPythonsRepr() {
        double[] values = {
            0.5,
            1.0,
            1e16,
            1e15,
            1e-5,
            0.0001,
            123.456,
            -0.0,
            Double.MAX_VALUE,
            Double.MIN_VALUE,
            0.1 + 0.2,
            1e22,
            1.5e-7,
            100.0,
            12345678901234567.0
        };
        String[] python = {
            "0.5",
            "1.0",
            "1e+16",
            "1000000000000000.0",
            "1e-05",
            "0.0001",
            "123.456",
            "-0.0",
            "1.7976931348623157e+308",
            "5e-324",
            "0.30000000000000004",
            "1e+22",
            "1.5e-07",
            "100.0",
            "1.2345678901234568e+16"
        };
        for (int i = 0; i < values.length; i++) {
            assertThat(PythonJson.floatRepr(values[i]))
                    .as("repr(%s)", values[i])
                    .isEqualTo(python[i]);
        }
    }

    @Test
    void reprReadsBackAsTheSameDouble() {
        Property.forAll(
                "reprReadsBackAsTheSameDouble",
                1_000,
                Gen.doubles(),
                d -> assertThat(Double.parseDouble(PythonJson.floatRepr(d))).isEqualTo(d));
    }

    @Test
    void nonFiniteFloatsAreSpelledAsPythonsJson() {
        assertThat(PythonJson.dumps(List.of(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY)))
                .isEqualTo("[NaN, Infinity, -Infinity]");
    }

    @Test
    void anUnserializableObjectIsAnErrorNamingItsType() {
        assertThatThrownBy(() -> PythonJson.dumps(List.of(new Object())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tojson: object of type java.lang.Object is not JSON serializable");
    }
}
