package org.rollout.testing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * A generator of random test values for {@link Property#forAll}.
 *
 * <p>Contract: {@link #generate} draws every random decision from the {@link SplittableRandom} it
 * is given (never from {@code ThreadLocalRandom}, {@code Math.random} or the clock), so that a seed
 * reproduces the value. Generators hold no state and may be shared between properties and threads.
 * A generator may return the same value twice; it must not return {@code null} unless that is part
 * of its domain.
 *
 * <p>{@link #shrink} offers candidates that are simpler than a failing value and inside the same
 * domain, simplest first; the runner tries them to report a smaller counterexample. Integer, list,
 * {@code int[]} and string generators shrink (magnitudes toward zero, lengths toward the minimum);
 * everything built with {@link #map}, {@link #flatMap} or {@link #zip} does not, because the inputs
 * of a function cannot be recovered from its output. That is deliberate: a property over a record of
 * several values still reports the exact generated record and the seed that reproduces it.
 *
 * <p>Numeric generators mix edge values (the bounds, zero, ±1; for floating point also -0.0,
 * subnormals, the extremes, NaN and the infinities where the domain has them) into uniform draws,
 * because bugs live at edges that uniform sampling rarely reaches.
 *
 * @param <T> the type of the generated values
 */
@FunctionalInterface
public interface Gen<T> {

    /** How many values in a row {@link #filter} may reject before it reports the filter as too strict. */
    int MAX_FILTER_ATTEMPTS = 1_000;

    /** Returns one value, using only {@code random} as the source of randomness. */
    T generate(SplittableRandom random);

    /**
     * Candidates simpler than {@code value}, simplest first, each inside this generator's domain;
     * empty when the generator does not shrink or {@code value} is already simplest. The stream is
     * finite and lazy: the runner stops reading it at the first candidate that still fails.
     */
    default Stream<T> shrink(T value) {
        return Stream.empty();
    }

    /** Values of this generator passed through {@code mapper}; does not shrink. */
    default <R> Gen<R> map(Function<? super T, ? extends R> mapper) {
        Objects.requireNonNull(mapper, "mapper");
        return random -> mapper.apply(generate(random));
    }

    /** A value of this generator chooses the generator of the result; does not shrink. */
    default <R> Gen<R> flatMap(Function<? super T, ? extends Gen<? extends R>> next) {
        Objects.requireNonNull(next, "next");
        return random -> next.apply(generate(random)).generate(random);
    }

    /**
     * Only the values {@code accept} accepts. Shrinks as this generator does, keeping only accepted
     * candidates.
     *
     * @throws IllegalStateException from {@code generate} when {@value #MAX_FILTER_ATTEMPTS} values
     *     in a row are rejected: generate the wanted values directly instead of filtering so much
     */
    default Gen<T> filter(Predicate<? super T> accept) {
        Objects.requireNonNull(accept, "accept");
        Gen<T> source = this;
        return new Gen<>() {
            @Override
            public T generate(SplittableRandom random) {
                for (int attempt = 0; attempt < MAX_FILTER_ATTEMPTS; attempt++) {
                    T value = source.generate(random);
                    if (accept.test(value)) {
                        return value;
                    }
                }
                throw new IllegalStateException("filter rejected " + MAX_FILTER_ATTEMPTS
                        + " generated values in a row; generate the wanted values directly instead");
            }

            @Override
            public Stream<T> shrink(T value) {
                return source.shrink(value).filter(accept);
            }
        };
    }

    /**
     * Lists of {@code minSize} to {@code maxSize} values of this generator (sizes at the bounds
     * come up often). Shrinks by dropping halves and single elements, then by shrinking elements.
     * The lists are mutable copies that the property may change.
     */
    default Gen<List<T>> list(int minSize, int maxSize) {
        Sizes.check(minSize, maxSize);
        Gen<T> element = this;
        return new Gen<>() {
            @Override
            public List<T> generate(SplittableRandom random) {
                int size = Sizes.draw(random, minSize, maxSize);
                List<T> out = new ArrayList<>(size);
                for (int i = 0; i < size; i++) {
                    out.add(element.generate(random));
                }
                return out;
            }

            @Override
            public Stream<List<T>> shrink(List<T> value) {
                return Shrinks.list(value, minSize, element);
            }
        };
    }

    // ---- constants and choices ---------------------------------------------------------------

    /** Always {@code value}. */
    static <T> Gen<T> constant(T value) {
        return random -> value;
    }

    /** {@code true} or {@code false}, evenly; shrinks to {@code false}. */
    static Gen<Boolean> booleans() {
        return new Gen<>() {
            @Override
            public Boolean generate(SplittableRandom random) {
                return random.nextBoolean();
            }

            @Override
            public Stream<Boolean> shrink(Boolean value) {
                return value ? Stream.of(false) : Stream.empty();
            }
        };
    }

    /** One of {@code values}, evenly; shrinks toward the first. */
    @SafeVarargs
    static <T> Gen<T> elementOf(T... values) {
        // Copied element by element: letting the varargs array escape is what javac's lint flags.
        List<T> copy = new ArrayList<>(values.length);
        for (T value : values) {
            copy.add(value);
        }
        return elementOf(copy);
    }

    /** One of {@code values}, evenly; shrinks toward the first. */
    static <T> Gen<T> elementOf(List<? extends T> values) {
        if (values.isEmpty()) {
            throw new IllegalArgumentException("elementOf needs at least one value");
        }
        List<T> copy = List.copyOf(values);
        return new Gen<>() {
            @Override
            public T generate(SplittableRandom random) {
                return copy.get(random.nextInt(copy.size()));
            }

            @Override
            public Stream<T> shrink(T value) {
                int at = copy.indexOf(value);
                return at > 0 ? Stream.of(copy.get(0)) : Stream.empty();
            }
        };
    }

    /** A value of one of {@code generators}, each chosen evenly; does not shrink. */
    @SafeVarargs
    static <T> Gen<T> oneOf(Gen<? extends T>... generators) {
        if (generators.length == 0) {
            throw new IllegalArgumentException("oneOf needs at least one generator");
        }
        List<Gen<? extends T>> copy = new ArrayList<>(generators.length);
        for (Gen<? extends T> generator : generators) {
            copy.add(Objects.requireNonNull(generator, "generator"));
        }
        return random -> copy.get(random.nextInt(copy.size())).generate(random);
    }

    /** Pairs of values of {@code a} and {@code b}, combined by {@code combine}; does not shrink. */
    static <A, B, R> Gen<R> zip(Gen<A> a, Gen<B> b, BiFunction<? super A, ? super B, ? extends R> combine) {
        Objects.requireNonNull(combine, "combine");
        return random -> {
            A first = a.generate(random);
            B second = b.generate(random);
            return combine.apply(first, second);
        };
    }

    /** Triples of values of {@code a}, {@code b} and {@code c}, combined by {@code combine}; does not shrink. */
    static <A, B, C, R> Gen<R> zip(Gen<A> a, Gen<B> b, Gen<C> c, Combiner3<A, B, C, R> combine) {
        Objects.requireNonNull(combine, "combine");
        return random -> {
            A first = a.generate(random);
            B second = b.generate(random);
            C third = c.generate(random);
            return combine.apply(first, second, third);
        };
    }

    /** Combines three generated values into one, for {@link #zip(Gen, Gen, Gen, Combiner3)}. */
    @FunctionalInterface
    interface Combiner3<A, B, C, R> {
        R apply(A a, B b, C c);
    }

    // ---- numbers -----------------------------------------------------------------------------

    /** Integers in {@code [min, max]}, both included; shrinks toward the value closest to zero. */
    static Gen<Integer> ints(int min, int max) {
        Gen<Long> longs = longs(min, max);
        return new Gen<>() {
            @Override
            public Integer generate(SplittableRandom random) {
                return longs.generate(random).intValue();
            }

            @Override
            public Stream<Integer> shrink(Integer value) {
                return longs.shrink(value.longValue()).map(Long::intValue);
            }
        };
    }

    /** Any {@code long}; shrinks toward zero. */
    static Gen<Long> longs() {
        return longs(Long.MIN_VALUE, Long.MAX_VALUE);
    }

    /** Longs in {@code [min, max]}, both included; shrinks toward the value closest to zero. */
    static Gen<Long> longs(long min, long max) {
        if (min > max) {
            throw new IllegalArgumentException("need min <= max, got [" + min + ", " + max + "]");
        }
        return new Gen<>() {
            @Override
            public Long generate(SplittableRandom random) {
                return Numbers.drawLong(random, min, max);
            }

            @Override
            public Stream<Long> shrink(Long value) {
                return Shrinks.towards(value, Numbers.clamp(0, min, max));
            }
        };
    }

    /**
     * Doubles in {@code [min, max]} (finite bounds, both included): uniform draws mixed with the
     * bounds, zero and ±1 where they lie inside. Does not shrink.
     */
    static Gen<Double> doubles(double min, double max) {
        if (!Double.isFinite(min) || !Double.isFinite(max) || min > max) {
            throw new IllegalArgumentException("need finite min <= max, got [" + min + ", " + max + "]");
        }
        return random -> Numbers.drawDouble(random, min, max);
    }

    /**
     * Any double, NaN and the infinities included: edge values, random bit patterns (so every
     * exponent, subnormals too), short decimals such as {@code 1.5e-7}, and moderate uniform values.
     * Does not shrink.
     */
    static Gen<Double> doubles() {
        return Numbers::drawAnyDouble;
    }

    /** Like {@link #doubles()} without NaN and the infinities. */
    static Gen<Double> finiteDoubles() {
        return doubles().filter(Double::isFinite);
    }

    /** Any float, NaN and the infinities included, drawn as {@link #doubles()} is. Does not shrink. */
    static Gen<Float> floats() {
        return Numbers::drawAnyFloat;
    }

    // ---- arrays and strings ------------------------------------------------------------------

    /** Arrays of {@code minSize} to {@code maxSize} values of {@code elements}; shrinks like {@link #list}. */
    static Gen<int[]> intArrays(Gen<Integer> elements, int minSize, int maxSize) {
        Gen<List<Integer>> lists = elements.list(minSize, maxSize);
        return new Gen<>() {
            @Override
            public int[] generate(SplittableRandom random) {
                return lists.generate(random).stream()
                        .mapToInt(Integer::intValue)
                        .toArray();
            }

            @Override
            public Stream<int[]> shrink(int[] value) {
                List<Integer> boxed = Arrays.stream(value).boxed().toList();
                return lists.shrink(boxed)
                        .map(list -> list.stream().mapToInt(Integer::intValue).toArray());
            }
        };
    }

    /**
     * Strings of {@code minLength} to {@code maxLength} code points, each one of {@code alphabet}'s
     * code points, evenly. Shrinks by shortening.
     */
    static Gen<String> strings(String alphabet, int minLength, int maxLength) {
        int[] codePoints = alphabet.codePoints().distinct().toArray();
        if (codePoints.length == 0) {
            throw new IllegalArgumentException("the alphabet is empty");
        }
        return CodePoints.strings(random -> codePoints[random.nextInt(codePoints.length)], minLength, maxLength);
    }

    /** Strings of {@code minLength} to {@code maxLength} ASCII characters (0–127, controls included). */
    static Gen<String> asciiStrings(int minLength, int maxLength) {
        return CodePoints.strings(random -> random.nextInt(0x80), minLength, maxLength);
    }

    /**
     * Strings of {@code minLength} to {@code maxLength} printable code points: letters, marks,
     * digits, punctuation, symbols and spaces from ASCII, the rest of the Basic Multilingual Plane
     * and planes 1–2; no controls, format characters, private use, unassigned code points or
     * surrogates. What counts as assigned follows the running JDK's Unicode version.
     */
    static Gen<String> printableStrings(int minLength, int maxLength) {
        return CodePoints.strings(CodePoints::printable, minLength, maxLength);
    }

    /**
     * Well-formed strings of {@code minLength} to {@code maxLength} Unicode scalar values: any code
     * point except the surrogates (controls, private use, noncharacters and unassigned ones
     * included), with 1-, 2-, 3- and 4-byte UTF-8 encodings equally likely. Every such string
     * survives a UTF-8 round trip.
     */
    static Gen<String> unicodeStrings(int minLength, int maxLength) {
        return CodePoints.strings(CodePoints::scalarValue, minLength, maxLength);
    }

    /**
     * Strings of {@code minLength} to {@code maxLength} arbitrary {@code char}s, which Java allows
     * even when they are not well-formed UTF-16: unpaired high and low surrogates are frequent, next
     * to ASCII, other code units and valid surrogate pairs. Shrinks by removing chars (which may
     * unpair a surrogate; the result is still in this domain).
     */
    static Gen<String> anyCharStrings(int minLength, int maxLength) {
        return CodePoints.anyChars(minLength, maxLength);
    }
}
