package org.rollout.testing;

import java.util.Iterator;
import java.util.Objects;
import java.util.SplittableRandom;
import org.junit.jupiter.api.function.ThrowingConsumer;

/**
 * Runs a property: a check that must hold for every value of a {@link Gen}, tried on many seeded
 * random values inside an ordinary JUnit {@code @Test}.
 *
 * <pre>{@code
 * @Test
 * void decodeInvertsEncode() {
 *     Property.forAll("decodeInvertsEncode", 1_000, Gen.intArrays(Gen.ints(-1, 3), 0, 40),
 *             versions -> assertThat(VersionRle.decode(VersionRle.encode(versions))).containsExactly(versions));
 * }
 * }</pre>
 *
 * <p><b>Determinism.</b> Trial {@code i} of property {@code name} draws from a {@link
 * SplittableRandom} whose seed derives from the base seed, the name and {@code i} alone, so a run is
 * the same on every machine and every time, and adding or reordering other properties changes
 * nothing. The base seed is {@value #DEFAULT_SEED} unless the system property {@value
 * #SEED_PROPERTY} says otherwise; give another seed to explore new values.
 *
 * <p><b>Trials.</b> A property runs the trials it declares ({@value #DEFAULT_TRIALS} if it declares
 * none). The system property {@value #TRIALS_PROPERTY} replaces every declared count (a quick run, or
 * a long one), and {@value #MULTIPLIER_PROPERTY} multiplies the count for soak runs. Maven passes
 * {@code -D} options through to the test JVM, e.g. {@code mvn verify -Drollout.property.multiplier=50}.
 *
 * <p><b>Failure.</b> The first failing trial stops the run. Its value is regenerated from its seed
 * (so a check that mutates its input does not garble the report) and, where the generator can,
 * shrunk to a simpler value that still fails. The {@link AssertionError} thrown names the property,
 * the trial, the {@code -D} option that reproduces it, the generated value and the shrunk one
 * (strings escaped, everything cut at a few hundred characters); its cause is the failure of the
 * reported smallest value, and the first failure is attached as suppressed when shrinking replaced
 * it. A check fails by throwing anything, assertion or exception; a JUnit assumption that aborts is
 * a failure too, since there is no discarding of trials. On success nothing is printed.
 *
 * <p><b>Threading.</b> A property runs its trials one after another on the calling thread. It reads
 * the system properties when it starts. It holds no state between calls, so properties may run in
 * parallel test classes.
 */
public final class Property {
    /** System property: the base seed, a decimal {@code long}. */
    public static final String SEED_PROPERTY = "rollout.property.seed";

    /** System property: the trial count of every property, replacing the declared counts. */
    public static final String TRIALS_PROPERTY = "rollout.property.trials";

    /** System property: a factor (> 0, fractions allowed) applied to every property's trial count. */
    public static final String MULTIPLIER_PROPERTY = "rollout.property.multiplier";

    /** The base seed when {@value #SEED_PROPERTY} is not set; fixed so that CI is deterministic. */
    public static final long DEFAULT_SEED = 20_250_917L;

    /** Trials of a property that declares no count. */
    public static final int DEFAULT_TRIALS = 200;

    /** Candidate values tried while shrinking one failure, at most. */
    static final int MAX_SHRINK_ATTEMPTS = 1_000;

    private Property() {}

    /** Checks {@code check} on {@value #DEFAULT_TRIALS} values of {@code gen}; see the class comment. */
    public static <T> void forAll(String name, Gen<T> gen, ThrowingConsumer<? super T> check) {
        forAll(name, DEFAULT_TRIALS, gen, check);
    }

    /**
     * Checks {@code check} on {@code trials} values of {@code gen} (subject to the system
     * properties); see the class comment.
     *
     * @throws AssertionError naming the property, trial, seed and value, when a trial fails
     * @throws IllegalStateException when {@code gen} itself throws, naming the property, trial and seed
     * @throws IllegalArgumentException when {@code trials < 1} or a system property is malformed
     */
    public static <T> void forAll(String name, int trials, Gen<T> gen, ThrowingConsumer<? super T> check) {
        run(PropertySettings.fromSystemProperties(), name, trials, gen, check);
    }

    static <T> void run(
            PropertySettings settings, String name, int declaredTrials, Gen<T> gen, ThrowingConsumer<? super T> check) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(gen, "gen");
        Objects.requireNonNull(check, "check");
        if (declaredTrials < 1) {
            throw new IllegalArgumentException("property '" + name + "' needs trials >= 1, got " + declaredTrials);
        }
        int trials = settings.trialsFor(declaredTrials);
        SplittableRandom trialSeeds = new SplittableRandom(settings.seed() ^ nameHash(name));
        for (int trial = 1; trial <= trials; trial++) {
            long trialSeed = trialSeeds.nextLong();
            T value = generate(gen, trialSeed, name, trial, settings.seed());
            Throwable failure = failureOf(check, value);
            if (failure != null) {
                T asGenerated = generate(gen, trialSeed, name, trial, settings.seed());
                throw report(name, trial, trials, settings.seed(), gen, check, asGenerated, failure);
            }
        }
    }

    private static <T> T generate(Gen<T> gen, long trialSeed, String name, int trial, long seed) {
        try {
            return gen.generate(new SplittableRandom(trialSeed));
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "property '" + name + "': its generator failed on trial " + trial + "; reproduce with "
                            + reproduceOption(seed),
                    e);
        }
    }

    private static <T> AssertionError report(
            String name,
            int trial,
            int trials,
            long seed,
            Gen<T> gen,
            ThrowingConsumer<? super T> check,
            T value,
            Throwable firstFailure) {
        StringBuilder message = new StringBuilder()
                .append("property '")
                .append(name)
                .append("' failed on trial ")
                .append(trial)
                .append(" of ")
                .append(trials)
                .append("; reproduce with ")
                .append(reproduceOption(seed))
                .append("\n  value: ")
                .append(ValueText.of(value));

        String smallestText = null;
        Throwable smallestFailure = firstFailure;
        int steps = 0;
        int attempts = 0;
        RuntimeException shrinkError = null;
        T smallest = value;
        boolean improved = canShrink(firstFailure);
        while (improved && attempts < MAX_SHRINK_ATTEMPTS) {
            improved = false;
            try {
                Iterator<T> candidates = gen.shrink(smallest).iterator();
                while (candidates.hasNext() && attempts < MAX_SHRINK_ATTEMPTS) {
                    T candidate = candidates.next();
                    attempts++;
                    // Described before the check runs, so a check that mutates its input cannot change it.
                    String candidateText = ValueText.of(candidate);
                    Throwable failure = failureOf(check, candidate);
                    if (failure != null) {
                        smallest = candidate;
                        smallestText = candidateText;
                        smallestFailure = failure;
                        steps++;
                        improved = canShrink(failure);
                        break;
                    }
                }
            } catch (RuntimeException e) {
                shrinkError = e;
            }
        }
        if (steps > 0) {
            message.append("\n  shrunk in ")
                    .append(steps)
                    .append(steps == 1 ? " step" : " steps")
                    .append(" (")
                    .append(attempts)
                    .append(" candidates tried) to: ")
                    .append(smallestText);
        }
        message.append("\n  failure: ").append(oneLine(smallestFailure));

        AssertionError error = new AssertionError(message.toString(), smallestFailure);
        if (smallestFailure != firstFailure) {
            error.addSuppressed(firstFailure);
        }
        if (shrinkError != null) {
            error.addSuppressed(shrinkError);
        }
        return error;
    }

    /** Shrinking reruns the check; pointless once the thread is being interrupted (a timeout). */
    private static boolean canShrink(Throwable failure) {
        return !(failure instanceof InterruptedException)
                && !Thread.currentThread().isInterrupted();
    }

    private static <T> Throwable failureOf(ThrowingConsumer<? super T> check, T value) {
        try {
            check.accept(value);
            return null;
        } catch (Throwable failure) {
            // Every kind of throwable is the property's verdict; it is reported, never dropped.
            return failure;
        }
    }

    static String reproduceOption(long seed) {
        return "-D" + SEED_PROPERTY + "=" + seed;
    }

    /** The failure on one line (AssertJ messages start with a line break), cut at the value limit. */
    private static String oneLine(Throwable failure) {
        String line = failure.toString().strip().replaceAll("\\s*\\R\\s*", " ");
        return line.length() <= ValueText.LIMIT ? line : line.substring(0, ValueText.LIMIT) + "…";
    }

    /** FNV-1a over the name's chars: stable across JVMs, unlike identity hashes. */
    private static long nameHash(String name) {
        long hash = 0xcbf29ce484222325L;
        for (int i = 0; i < name.length(); i++) {
            hash ^= name.charAt(i);
            hash *= 0x100000001b3L;
        }
        return hash;
    }
}
