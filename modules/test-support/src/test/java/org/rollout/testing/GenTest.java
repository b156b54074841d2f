package org.rollout.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

class GenTest {
    private static final int SAMPLES = 5_000;

    private static <T> List<T> sample(Gen<T> gen) {
        SplittableRandom random = new SplittableRandom(1);
        List<T> out = new ArrayList<>(SAMPLES);
        for (int i = 0; i < SAMPLES; i++) {
            out.add(gen.generate(random));
        }
        return out;
    }

    private static boolean hasUnpairedSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                } else {
                    return true;
                }
            } else if (Character.isLowSurrogate(c)) {
                return true;
            }
        }
        return false;
    }

    // ---- determinism ----

    @Test
    void theSameRandomSeedGeneratesTheSameValues() {
        Gen<List<String>> gen = Gen.unicodeStrings(0, 20).list(0, 5);
        assertThat(gen.generate(new SplittableRandom(9))).isEqualTo(gen.generate(new SplittableRandom(9)));
    }

    // ---- numbers ----

    @Test
    void intsStayInTheirRangeAndReachBothBounds() {
        List<Integer> values = sample(Gen.ints(-3, 7));
        assertThat(values).allMatch(v -> v >= -3 && v <= 7).contains(-3, 7, 0, 1, -1);
        assertThat(new HashSet<>(values)).hasSize(11);
    }

    @Test
    void intsCoverTheWholeIntRange() {
        List<Integer> values = sample(Gen.ints(Integer.MIN_VALUE, Integer.MAX_VALUE));
        assertThat(values).contains(Integer.MIN_VALUE, Integer.MAX_VALUE, 0);
    }

    @Test
    void longsReachTheExtremesOfTheirType() {
        assertThat(sample(Gen.longs())).contains(Long.MIN_VALUE, Long.MAX_VALUE, 0L, 1L, -1L);
        assertThat(sample(Gen.longs(5, 5))).containsOnly(5L);
    }

    @Test
    void aRangeWithMinAboveMaxIsRejected() {
        assertThatThrownBy(() -> Gen.longs(3, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("need min <= max, got [3, 2]");
        assertThatThrownBy(() -> Gen.doubles(0, Double.NaN))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("need finite min <= max, got [0.0, NaN]");
    }

    @Test
    void doublesInARangeStayInsideAndReachTheBounds() {
        List<Double> values = sample(Gen.doubles(0.05, 3.0));
        assertThat(values).allMatch(v -> v >= 0.05 && v <= 3.0).contains(0.05, 3.0, 1.0);
        List<Double> wide = sample(Gen.doubles(-Double.MAX_VALUE, Double.MAX_VALUE));
        assertThat(wide).allMatch(Double::isFinite).contains(-Double.MAX_VALUE, Double.MAX_VALUE, 0.0);
    }

    @Test
    void anyDoubleIncludesNaNInfinitiesNegativeZeroSubnormalsAndShortDecimals() {
        List<Double> values = sample(Gen.doubles());
        assertThat(values)
                .contains(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, Double.MIN_VALUE)
                .anyMatch(v -> v != 0 && Math.abs(v) < Double.MIN_NORMAL && v != Double.MIN_VALUE)
                .anyMatch(v -> Math.abs(v) > 1e300)
                .anyMatch(v -> Double.toString(v).length() <= 8 && v != Math.rint(v));
    }

    @Test
    void finiteDoublesAreFinite() {
        assertThat(sample(Gen.finiteDoubles())).allMatch(Double::isFinite).contains(-0.0, Double.MAX_VALUE);
    }

    @Test
    void anyFloatIncludesTheSpecialValues() {
        assertThat(sample(Gen.floats()))
                .contains(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0f, Float.MIN_VALUE)
                .anyMatch(v -> v != 0 && Math.abs(v) < Float.MIN_NORMAL && v != Float.MIN_VALUE);
    }

    // ---- choices and combinators ----

    @Test
    void elementOfPicksEveryValue() {
        assertThat(sample(Gen.elementOf("a", "b", "c")))
                .containsOnly("a", "b", "c")
                .contains("a", "b", "c");
        assertThatThrownBy(() -> Gen.elementOf(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("elementOf needs at least one value");
    }

    @Test
    void oneOfDrawsFromEveryGenerator() {
        assertThat(sample(Gen.oneOf(Gen.ints(0, 0), Gen.ints(10, 10))))
                .containsOnly(0, 10)
                .contains(0, 10);
        assertThatThrownBy(() -> Gen.<Integer>oneOf())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("oneOf needs at least one generator");
    }

    @Test
    void zipMapAndFlatMapCombineValues() {
        Gen<String> pairs = Gen.zip(Gen.ints(1, 3), Gen.booleans(), (n, b) -> (b ? "y" : "n").repeat(n));
        assertThat(sample(pairs)).containsOnly("y", "yy", "yyy", "n", "nn", "nnn");
        Gen<Integer> sums =
                Gen.zip(Gen.ints(0, 1), Gen.ints(0, 10).map(v -> v * 10), Gen.constant(100), (a, b, c) -> a + b + c);
        assertThat(sample(sums)).allMatch(v -> v >= 100 && v <= 201).contains(100, 201);
        Gen<List<Integer>> sized = Gen.ints(0, 4).flatMap(n -> Gen.ints(0, 9).list(n, n));
        assertThat(sample(sized)).allMatch(list -> list.size() <= 4).anyMatch(List::isEmpty);
    }

    @Test
    void filterKeepsOnlyAcceptedValuesAndShrinkCandidates() {
        Gen<Integer> even = Gen.ints(0, 100).filter(v -> v % 2 == 0);
        assertThat(sample(even)).allMatch(v -> v % 2 == 0);
        assertThat(even.shrink(64)).allMatch(v -> v % 2 == 0).contains(0, 32);
    }

    @Test
    void aFilterThatRejectsEverythingSaysSo() {
        Gen<Integer> none = Gen.ints(0, 10).filter(v -> v > 10);
        assertThatThrownBy(() -> none.generate(new SplittableRandom(1)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(
                        "filter rejected 1000 generated values in a row; generate the wanted values directly instead");
    }

    @Test
    void listsRespectTheirSizeBoundsAndReachBoth() {
        List<List<Integer>> lists = sample(Gen.ints(0, 9).list(2, 6));
        assertThat(lists).allMatch(l -> l.size() >= 2 && l.size() <= 6);
        assertThat(lists.stream().map(List::size).distinct()).contains(2, 3, 4, 5, 6);
        assertThatThrownBy(() -> Gen.ints(0, 9).list(3, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("need 0 <= minSize <= maxSize, got [3, 2]");
    }

    @Test
    void intArraysHoldTheElementsValues() {
        List<int[]> arrays = sample(Gen.intArrays(Gen.ints(-1, 3), 0, 40));
        assertThat(arrays)
                .allMatch(a -> a.length <= 40)
                .anyMatch(a -> a.length == 0)
                .anyMatch(a -> a.length == 40);
        assertThat(arrays.stream()
                        .flatMapToInt(java.util.Arrays::stream)
                        .distinct()
                        .sorted()
                        .toArray())
                .containsExactly(-1, 0, 1, 2, 3);
    }

    // ---- strings ----

    @Test
    void alphabetStringsUseOnlyTheAlphabetAndCountCodePoints() {
        List<String> strings = sample(Gen.strings("ab😀", 0, 5));
        assertThat(strings).allMatch(s -> s.codePoints().allMatch(cp -> cp == 'a' || cp == 'b' || cp == 0x1F600));
        assertThat(strings).allMatch(s -> s.codePointCount(0, s.length()) <= 5).anyMatch(s -> s.length() == 10);
        assertThatThrownBy(() -> Gen.strings("", 0, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the alphabet is empty");
    }

    @Test
    void asciiStringsAreAscii() {
        assertThat(sample(Gen.asciiStrings(0, 30)))
                .allMatch(s -> s.chars().allMatch(c -> c < 0x80))
                .anyMatch(s -> s.chars().anyMatch(Character::isISOControl));
    }

    @Test
    void unicodeStringsAreWellFormedAndReachEveryUtf8Length() {
        List<String> strings = sample(Gen.unicodeStrings(0, 30));
        assertThat(strings).noneMatch(GenTest::hasUnpairedSurrogate);
        assertThat(strings)
                .allMatch(s -> new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8).equals(s));
        Set<Integer> utf8Lengths = new HashSet<>();
        strings.forEach(s -> s.codePoints()
                .forEach(cp ->
                        utf8Lengths.add(new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length)));
        assertThat(utf8Lengths).containsExactlyInAnyOrder(1, 2, 3, 4);
        assertThat(strings).anyMatch(s -> s.codePoints().anyMatch(cp -> cp >= 0xE000 && cp <= 0xF8FF || cp < 0x20));
    }

    @Test
    void anyCharStringsIncludeUnpairedSurrogates() {
        List<String> strings = sample(Gen.anyCharStrings(0, 30));
        assertThat(strings).allMatch(s -> s.length() <= 30).anyMatch(s -> s.length() == 30);
        assertThat(strings).anyMatch(GenTest::hasUnpairedSurrogate);
        Predicate<String> hasPair = s -> s.codePoints().anyMatch(Character::isSupplementaryCodePoint);
        assertThat(strings).anyMatch(hasPair);
    }

    @Test
    void printableStringsHoldOnlyPrintableCodePoints() {
        List<String> strings = sample(Gen.printableStrings(0, 30));
        assertThat(strings)
                .noneMatch(GenTest::hasUnpairedSurrogate)
                .allMatch(s -> s.codePoints()
                        .allMatch(cp -> !Character.isISOControl(cp)
                                && Character.getType(cp) != Character.FORMAT
                                && Character.getType(cp) != Character.UNASSIGNED
                                && Character.getType(cp) != Character.PRIVATE_USE))
                .anyMatch(s -> s.codePoints().anyMatch(Character::isSupplementaryCodePoint))
                .anyMatch(s -> s.contains(" "));
    }

    // ---- shrinking ----

    @Test
    void intsShrinkTowardTheValueClosestToZeroWithinTheirRange() {
        assertThat(Gen.ints(5, 100).shrink(50)).containsExactly(5, 28, 39, 45, 48, 49);
        assertThat(Gen.ints(-100, -5).shrink(-50))
                .allMatch(v -> v >= -50 && v <= -5)
                .first()
                .isEqualTo(-5);
        assertThat(Gen.ints(5, 100).shrink(5)).isEmpty();
        assertThat(Gen.longs().shrink(Long.MIN_VALUE)).first().isEqualTo(0L);
    }

    @Test
    void listsShrinkShorterFirstAndNeverBelowTheirMinimum() {
        Gen<List<Integer>> lists = Gen.ints(0, 9).list(2, 10);
        List<List<Integer>> candidates = lists.shrink(List.of(1, 2, 3, 4, 5)).toList();
        assertThat(candidates).allMatch(l -> l.size() >= 2);
        assertThat(candidates.get(0)).containsExactly(1, 2);
        assertThat(candidates).contains(List.of(3, 4, 5), List.of(1, 2, 4, 5), List.of(0, 2, 3, 4, 5));
        assertThat(lists.shrink(List.of(0, 0))).isEmpty();
    }

    @Test
    void unicodeStringsShrinkByWholeCodePoints() {
        assertThat(Gen.unicodeStrings(0, 10).shrink("a😀b😀"))
                .noneMatch(GenTest::hasUnpairedSurrogate)
                .contains("a😀b");
    }

    @Test
    void constantsMappedValuesAndFloatingPointDoNotShrink() {
        assertThat(Gen.constant(3).shrink(3)).isEmpty();
        assertThat(Gen.ints(0, 9).map(v -> v + 1).shrink(5)).isEmpty();
        assertThat(Gen.doubles().shrink(2.5)).isEmpty();
        assertThat(Gen.booleans().shrink(true)).containsExactly(false);
        assertThat(Gen.elementOf("a", "b").shrink("b")).containsExactly("a");
    }
}
