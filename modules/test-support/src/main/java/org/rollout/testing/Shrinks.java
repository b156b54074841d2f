package org.rollout.testing;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/** Shrink candidates for numbers and lists, simplest first, never outside the generator's domain. */
final class Shrinks {
    private Shrinks() {}

    /**
     * Candidates between {@code value} and {@code origin}: the origin itself, then halfway, a
     * quarter of the way back, … and finally one step closer. {@code origin} is the in-range value
     * closest to zero, so {@code value - origin} cannot overflow: either the origin is zero, or both
     * lie on the same side of it.
     */
    static Stream<Long> towards(long value, long origin) {
        if (value == origin) {
            return Stream.empty();
        }
        Set<Long> candidates = new LinkedHashSet<>();
        candidates.add(origin);
        long distance = value - origin;
        for (long step = distance / 2; step != 0; step /= 2) {
            candidates.add(value - step);
        }
        candidates.add(value - Long.signum(distance));
        candidates.remove(value);
        return candidates.stream();
    }

    /**
     * Shorter lists first (the shortest allowed prefix, the first half, the second half, each list
     * with one element removed), then lists with one element shrunk by {@code element}.
     */
    static <T> Stream<List<T>> list(List<T> value, int minSize, Gen<T> element) {
        int size = value.size();
        Stream<List<T>> shorter = Stream.empty();
        if (size > minSize) {
            int half = Math.max(minSize, size / 2);
            List<List<T>> cuts = new ArrayList<>();
            cuts.add(value.subList(0, minSize));
            if (half > minSize) {
                cuts.add(value.subList(0, half));
            }
            if (size - half >= minSize && size - half < size) {
                cuts.add(value.subList(half, size));
            }
            Stream<List<T>> removals = IntStream.range(0, size).mapToObj(i -> without(value, i));
            shorter = Stream.concat(cuts.stream().map(ArrayList::new), removals);
        }
        Stream<List<T>> simplerElements = IntStream.range(0, size)
                .boxed()
                .flatMap(i -> element.shrink(value.get(i)).map(candidate -> replaced(value, i, candidate)));
        return Stream.concat(shorter, simplerElements);
    }

    private static <T> List<T> without(List<T> value, int index) {
        List<T> copy = new ArrayList<>(value);
        copy.remove(index);
        return copy;
    }

    private static <T> List<T> replaced(List<T> value, int index, T element) {
        List<T> copy = new ArrayList<>(value);
        copy.set(index, element);
        return copy;
    }
}
