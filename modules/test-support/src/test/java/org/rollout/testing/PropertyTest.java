package org.rollout.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class PropertyTest {
    private static final PropertySettings DEFAULTS = PropertySettings.from(key -> null);

    private static PropertySettings seeded(long seed) {
        return new PropertySettings(seed, OptionalInt.empty(), 1.0);
    }

    private static <T> List<T> valuesSeen(PropertySettings settings, String name, int trials, Gen<T> gen) {
        List<T> seen = new ArrayList<>();
        Property.run(settings, name, trials, gen, seen::add);
        return seen;
    }

    // ---- trials and determinism ----

    @Test
    void runsTheDeclaredNumberOfTrials() {
        AtomicInteger calls = new AtomicInteger();
        Property.run(DEFAULTS, "count", 37, Gen.ints(0, 9), v -> calls.incrementAndGet());
        assertThat(calls).hasValue(37);
    }

    @Test
    void aPropertyWithoutACountRunsTheDefaultTwoHundredTrials() {
        AtomicInteger calls = new AtomicInteger();
        withOnly(Map.of(), () -> Property.forAll("default count", Gen.ints(0, 9), v -> calls.incrementAndGet()));
        assertThat(calls).hasValue(Property.DEFAULT_TRIALS).hasValue(200);
    }

    @Test
    void theSameSeedGivesTheSameValuesEveryRun() {
        Gen<Long> longs = Gen.longs();
        assertThat(valuesSeen(seeded(42), "p", 50, longs)).isEqualTo(valuesSeen(seeded(42), "p", 50, longs));
    }

    @Test
    void anotherSeedGivesOtherValues() {
        Gen<Long> longs = Gen.longs();
        assertThat(valuesSeen(seeded(42), "p", 50, longs)).isNotEqualTo(valuesSeen(seeded(43), "p", 50, longs));
    }

    @Test
    void propertiesWithOtherNamesSeeOtherValuesUnderOneSeed() {
        Gen<Long> longs = Gen.longs();
        assertThat(valuesSeen(seeded(42), "p", 50, longs)).isNotEqualTo(valuesSeen(seeded(42), "q", 50, longs));
    }

    @Test
    void aTrialsValueDoesNotDependOnHowManyTrialsRun() {
        Gen<Long> longs = Gen.longs();
        assertThat(valuesSeen(seeded(7), "p", 200, longs).subList(0, 20))
                .isEqualTo(valuesSeen(seeded(7), "p", 20, longs));
    }

    @Test
    void theDefaultSeedIsFixed() {
        assertThat(DEFAULTS.seed()).isEqualTo(Property.DEFAULT_SEED);
        Gen<Long> longs = Gen.longs();
        assertThat(valuesSeen(DEFAULTS, "p", 10, longs))
                .isEqualTo(valuesSeen(seeded(Property.DEFAULT_SEED), "p", 10, longs));
    }

    @Test
    void theTrialsSystemPropertyReplacesTheDeclaredCount() {
        AtomicInteger calls = new AtomicInteger();
        withOnly(
                Map.of(Property.TRIALS_PROPERTY, "13"),
                () -> Property.forAll("overridden", 500, Gen.booleans(), v -> calls.incrementAndGet()));
        assertThat(calls).hasValue(13);
    }

    @Test
    void theSeedSystemPropertyChoosesTheValues() {
        List<Long> seen = new ArrayList<>();
        withOnly(Map.of(Property.SEED_PROPERTY, "-99"), () -> Property.forAll("seeded", 30, Gen.longs(), seen::add));
        assertThat(seen).isEqualTo(valuesSeen(seeded(-99), "seeded", 30, Gen.longs()));
    }

    @Test
    void theMultiplierSystemPropertyScalesTheDeclaredCount() {
        AtomicInteger calls = new AtomicInteger();
        withOnly(
                Map.of(Property.MULTIPLIER_PROPERTY, "3"),
                () -> Property.forAll("soaked", 7, Gen.booleans(), v -> calls.incrementAndGet()));
        assertThat(calls).hasValue(21);
    }

    /**
     * Runs {@code body} with exactly {@code settings} among the harness's system properties (the
     * others cleared, whatever the build passed), restoring all of them afterwards.
     */
    private static void withOnly(Map<String, String> settings, Runnable body) {
        List<String> keys = List.of(Property.SEED_PROPERTY, Property.TRIALS_PROPERTY, Property.MULTIPLIER_PROPERTY);
        Map<String, String> previous = new java.util.HashMap<>();
        for (String key : keys) {
            previous.put(key, System.getProperty(key));
            if (settings.containsKey(key)) {
                System.setProperty(key, settings.get(key));
            } else {
                System.clearProperty(key);
            }
        }
        try {
            body.run();
        } finally {
            for (String key : keys) {
                if (previous.get(key) == null) {
                    System.clearProperty(key);
                } else {
                    System.setProperty(key, previous.get(key));
                }
            }
        }
    }

    @Test
    void theMultiplierScalesEveryCountRoundingUp() {
        PropertySettings soak = PropertySettings.from(Map.of(Property.MULTIPLIER_PROPERTY, "2.5")::get);
        assertThat(soak.trialsFor(200)).isEqualTo(500);
        assertThat(soak.trialsFor(3)).isEqualTo(8);
        PropertySettings quick = PropertySettings.from(
                Map.of(Property.MULTIPLIER_PROPERTY, "0.001", Property.TRIALS_PROPERTY, "100")::get);
        assertThat(quick.trialsFor(1000)).isEqualTo(1);
        AtomicInteger calls = new AtomicInteger();
        Property.run(soak, "soak", 10, Gen.booleans(), v -> calls.incrementAndGet());
        assertThat(calls).hasValue(25);
    }

    @Test
    void malformedSettingsAreRejectedNamingTheSystemProperty() {
        assertThatThrownBy(() -> PropertySettings.from(Map.of(Property.SEED_PROPERTY, "abc")::get))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("rollout.property.seed must be a decimal long, got 'abc'");
        assertThatThrownBy(() -> PropertySettings.from(Map.of(Property.TRIALS_PROPERTY, "0")::get))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("rollout.property.trials must be >= 1, got 0");
        assertThatThrownBy(() -> PropertySettings.from(Map.of(Property.TRIALS_PROPERTY, "many")::get))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("rollout.property.trials must be a whole number >= 1, got 'many'");
        assertThatThrownBy(() -> PropertySettings.from(Map.of(Property.MULTIPLIER_PROPERTY, "-1")::get))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("rollout.property.multiplier must be a finite number > 0, got -1.0");
    }

    @Test
    void aPropertyNeedsAtLeastOneTrial() {
        assertThatThrownBy(() -> Property.forAll("none", 0, Gen.booleans(), v -> {}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("property 'none' needs trials >= 1, got 0");
    }

    @Test
    void printsNothingWhenThePropertyHolds() {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream capture = new PrintStream(captured, true, StandardCharsets.UTF_8);
        System.setOut(capture);
        System.setErr(capture);
        try {
            withOnly(
                    Map.of(),
                    () -> Property.forAll(
                            "quiet", Gen.ints(0, 100), v -> assertThat(v).isBetween(0, 100)));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8)).isEmpty();
    }

    // ---- failures ----

    @Test
    void aFailureNamesThePropertyTrialSeedAndValueWithTheCheckFailureAsCause() {
        // map() does not shrink, so the reported value is the generated one.
        Gen<String> words = Gen.ints(0, 1_000_000).map(i -> "w" + i);
        IllegalStateException broken = new IllegalStateException("checked value is broken");
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(seeded(123456789L), "words are short", 100, words, w -> {
                    if (w.length() > 4) {
                        throw broken;
                    }
                }));

        assertThat(e.getCause()).isSameAs(broken);
        assertThat(e.getMessage())
                .startsWith("property 'words are short' failed on trial ")
                .contains(" of 100; reproduce with -Drollout.property.seed=123456789\n  value: \"w")
                .endsWith("\n  failure: java.lang.IllegalStateException: checked value is broken")
                .doesNotContain("shrunk");
        assertThat(e.getSuppressed()).isEmpty();
    }

    @Test
    void rerunningWithTheReportedSeedFailsOnTheSameTrialWithTheSameValue() {
        Gen<Long> longs = Gen.longs(0, 1_000_000).map(v -> v * 3);
        AssertionError first = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(
                        seeded(5), "odd", 200, longs, v -> assertThat(v % 2).isZero()));
        AssertionError again = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(
                        seeded(5), "odd", 200, longs, v -> assertThat(v % 2).isZero()));
        assertThat(first).isNotNull();
        assertThat(again.getMessage()).isEqualTo(first.getMessage());
    }

    @Test
    void anAssertJFailureIsReportedOnOneLine() {
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(
                        DEFAULTS,
                        "equal",
                        5,
                        Gen.constant(1),
                        v -> assertThat(v).isEqualTo(2)));
        assertThat(e.getMessage())
                .contains("\n  failure: org.opentest4j.AssertionFailedError: expected: 2 but was: 1")
                .doesNotContain("\n  expected");
    }

    @Test
    void theReportShowsTheValueAsGeneratedEvenWhenTheCheckMutatesIt() {
        Gen<List<Integer>> lists = Gen.constant(0).map(zero -> new ArrayList<>(List.of(1, 2, 3)));
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(DEFAULTS, "mutating", 3, lists, list -> {
                    list.clear();
                    throw new AssertionError("fails after clearing its input");
                }));
        assertThat(e.getMessage()).contains("\n  value: [1, 2, 3]\n");
    }

    @Test
    void aFailingIntShrinksToTheSmallestCounterexample() {
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(
                        DEFAULTS,
                        "below 100",
                        500,
                        Gen.ints(0, 1_000_000),
                        v -> assertThat(v).isLessThan(100)));
        assertThat(e.getMessage()).containsPattern("\n  shrunk in \\d+ steps? \\(\\d+ candidates tried\\) to: 100\n");
        assertThat(e.getCause()).hasMessageContaining("100");
    }

    @Test
    void aFailingNegativeIntShrinksTowardZeroNotPastIt() {
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(
                        DEFAULTS,
                        "above -50",
                        500,
                        Gen.ints(-1_000, 1_000),
                        v -> assertThat(v).isGreaterThan(-50).isLessThan(400)));
        assertThat(e.getMessage()).containsPattern("to: (-50|400)\n");
    }

    @Test
    void aFailingListShrinksToTheOneOffendingElement() {
        Gen<List<Integer>> lists = Gen.ints(0, 100).list(0, 30);
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(
                        DEFAULTS,
                        "no big element",
                        500,
                        lists,
                        list -> assertThat(list).allMatch(v -> v < 90)));
        assertThat(e.getMessage()).contains("to: [90]\n");
        // The first failure stays attached when shrinking replaced it.
        assertThat(e.getSuppressed()).hasSize(1);
        assertThat(e.getCause()).isNotSameAs(e.getSuppressed()[0]);
    }

    @Test
    void aFailingStringShrinksByShorteningWithinItsMinimumLength() {
        Gen<String> strings = Gen.strings("abq", 3, 40);
        // Starts from a long value whatever the seed, and shrinks as the string generator does.
        Gen<String> longFirst = new Gen<>() {
            @Override
            public String generate(java.util.SplittableRandom random) {
                return "abababababqabababab";
            }

            @Override
            public java.util.stream.Stream<String> shrink(String value) {
                return strings.shrink(value);
            }
        };
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(
                        DEFAULTS, "no q", 5, longFirst, s -> assertThat(s).doesNotContain("q")));
        assertThat(e.getMessage()).containsPattern("to: \"(q[ab]{2}|[ab]q[ab]|[ab]{2}q)\"\n");
    }

    @Test
    void aGeneratorThatThrowsIsReportedWithThePropertyTrialAndSeed() {
        Gen<Integer> broken = random -> {
            throw new ArithmeticException("division by zero");
        };
        assertThatThrownBy(() -> Property.run(seeded(77), "broken gen", 10, broken, v -> {}))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("property 'broken gen': its generator failed on trial 1; reproduce with"
                        + " -Drollout.property.seed=77")
                .hasCauseInstanceOf(ArithmeticException.class);
    }

    @Test
    void aCheckedExceptionFailsTheProperty() {
        AssertionError e = catchThrowableOfType(
                AssertionError.class,
                () -> Property.run(DEFAULTS, "io", 3, Gen.constant("x"), v -> {
                    throw new java.io.IOException("disk full");
                }));
        assertThat(e.getCause()).isInstanceOf(java.io.IOException.class).hasMessage("disk full");
        assertThat(e.getMessage()).contains("trial 1 of 3").contains("value: \"x\"");
    }
}
