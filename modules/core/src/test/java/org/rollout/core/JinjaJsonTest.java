package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

/** Expected strings are Python 3.11's {@code json.dumps} and {@code repr} output. */
class JinjaJsonTest {

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
        assertThat(JinjaJson.dumps(sample()))
                .isEqualTo("{\"b\": [1, {\"x\": null}], \"a\": \"q\", \"c\": {}, \"d\": []}");
    }

    @Test
    void indentsLikePythonWithoutTrailingSpacesAfterCommas() {
        assertThat(JinjaJson.dumps(sample(), 2, null, null, false, false))
                .isEqualTo("{\n  \"b\": [\n    1,\n    {\n      \"x\": null\n    }\n  ],\n  \"a\": \"q\",\n"
                        + "  \"c\": {},\n  \"d\": []\n}");
    }

    @Test
    void sortsKeysAndEscapesNonAsciiOnRequest() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("b", 1);
        m.put("a", "é");
        assertThat(JinjaJson.dumps(m, null, null, null, true, true)).isEqualTo("{\"a\": \"\\u00e9\", \"b\": 1}");
        assertThat(JinjaJson.dumps(m)).isEqualTo("{\"b\": 1, \"a\": \"é\"}");
    }

    @Test
    void honoursCustomSeparators() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("b", 1);
        m.put("a", List.of(1, 2));
        assertThat(JinjaJson.dumps(m, null, ",", ":", false, false)).isEqualTo("{\"b\":1,\"a\":[1,2]}");
    }

    @Test
    void escapesQuotesBackslashesAndControlCharacters() {
        assertThat(JinjaJson.dumps("é\"\\\n\t\u0001\b\f\r")).isEqualTo("\"é\\\"\\\\\\n\\t\\u0001\\b\\f\\r\"");
    }

    @Test
    void rendersNonStringKeysAsPythonDoes() {
        Map<Object, Object> m = new LinkedHashMap<>();
        m.put(1, "x");
        m.put(null, "y");
        m.put(2.5, "w");
        assertThat(JinjaJson.dumps(m)).isEqualTo("{\"1\": \"x\", \"null\": \"y\", \"2.5\": \"w\"}");
    }

    @Test
    void writesArraysAndIterablesAsLists() {
        assertThat(JinjaJson.dumps(new int[] {1, 2})).isEqualTo("[1, 2]");
        assertThat(JinjaJson.dumps(new ArrayList<>(List.of(true, false)))).isEqualTo("[true, false]");
        assertThat(JinjaJson.dumps(List.of(1L, 2.0f))).isEqualTo("[1, 2.0]");
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
            assertThat(JinjaJson.floatRepr(values[i])).as("repr(%s)", values[i]).isEqualTo(python[i]);
        }
    }

    @Test
    void reprReadsBackAsTheSameDouble() {
        Property.forAll(
                "reprReadsBackAsTheSameDouble",
                1_000,
                Gen.doubles(),
                d -> assertThat(Double.parseDouble(JinjaJson.floatRepr(d))).isEqualTo(d));
    }

    @Test
    void nonFiniteFloatsAreSpelledAsPythonsJson() {
        assertThat(JinjaJson.dumps(List.of(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY)))
                .isEqualTo("[NaN, Infinity, -Infinity]");
    }

    @Test
    void anUnserializableObjectIsAnErrorNamingItsType() {
        assertThatThrownBy(() -> JinjaJson.dumps(List.of(new Object())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tojson: object of type java.lang.Object is not JSON serializable");
    }
}
