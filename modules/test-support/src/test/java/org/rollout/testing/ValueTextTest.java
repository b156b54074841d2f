package org.rollout.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ValueTextTest {
    private record Case(int[] versions, long seed, List<String> words) {}

    @Test
    void stringsAreEscapedJavaLiteralsSoInvisibleCharactersShow() {
        assertThat(ValueText.of("a\"b\\c\n\t\u0001é\uD800")).isEqualTo("\"a\\\"b\\\\c\\n\\t\\u0001\\u00E9\\uD800\"");
        assertThat(ValueText.of('\'')).isEqualTo("'\\''");
    }

    @Test
    void arraysRecordsCollectionsAndMapsShowTheirElements() {
        assertThat(ValueText.of(new int[] {1, -2})).isEqualTo("[1, -2]");
        assertThat(ValueText.of(new double[][] {{0.5}, {}})).isEqualTo("[[0.5], []]");
        assertThat(ValueText.of(new Case(new int[] {3, 3}, 7L, List.of("x"))))
                .isEqualTo("Case[versions=[3, 3], seed=7, words=[\"x\"]]");
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("k", null);
        map.put("n", List.of(1));
        assertThat(ValueText.of(map)).isEqualTo("{\"k\"=null, \"n\"=[1]}");
    }

    @Test
    void longValuesAreCutAtTheLimit() {
        String text = ValueText.of("x".repeat(10_000), 20);
        assertThat(text).isEqualTo("\"xxxxxxxxxxxxxxxxxxx…(cut at 20 chars)");
        assertThat(ValueText.of(new long[100_000])).hasSizeLessThan(ValueText.LIMIT + 30);
    }

    @Test
    void aToStringThatThrowsIsShownNotPropagated() {
        Object broken = new Object() {
            @Override
            public String toString() {
                throw new IllegalStateException("no text");
            }
        };
        assertThat(ValueText.of(broken))
                .startsWith("<org.rollout.testing.ValueTextTest$")
                .endsWith(" whose toString threw java.lang.IllegalStateException: no text>");
    }
}
