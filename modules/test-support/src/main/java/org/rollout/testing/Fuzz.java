package org.rollout.testing;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Fuzzing on top of {@link Property}: byte inputs made from valid samples (random bytes,
 * truncations, mutations, splices), how many inputs a fuzz property tries, and a watchdog that turns
 * a hang into a failure.
 *
 * <pre>{@code
 * @Test
 * void anyBodyParsesOrFailsWithMalformedResponse() {
 *     try (Fuzz.Watchdog watchdog = new Fuzz.Watchdog(Fuzz.HANG)) {
 *         Property.forAll("sglangBodies", Fuzz.inputs(2_000), Fuzz.bytes(samples, tokens), input -> {
 *             Throwable t = watchdog.run(input, () -> parse(input.bytes()));
 *             ...
 *         });
 *     }
 * }
 * }</pre>
 *
 * <p><b>Inputs.</b> A fuzz property declares the count CI runs (a few thousand inputs over all fuzz
 * properties, a few seconds); {@code -D}{@value #INPUTS_PROPERTY}{@code =1000000} runs that many
 * inputs per fuzz property instead, for a soak. {@link Property}'s own system properties (seed,
 * trials, multiplier) apply on top, as for any property.
 *
 * <p><b>Hangs.</b> {@link Watchdog#run} runs each input on one reused daemon thread and fails when
 * an input takes longer than the watchdog's limit; the limit detects a hang (an endless loop), it
 * is not a speed assertion, so it is generous.
 */
public final class Fuzz {
    /** System property: the inputs of every fuzz property, replacing the counts they declare. */
    public static final String INPUTS_PROPERTY = "rollout.fuzz.inputs";

    /** How long one input may run before it counts as a hang. */
    public static final Duration HANG = Duration.ofSeconds(20);

    private Fuzz() {}

    /** {@code declared} unless {@value #INPUTS_PROPERTY} is set. */
    public static int inputs(int declared) {
        String text = System.getProperty(INPUTS_PROPERTY);
        if (text == null) {
            return declared;
        }
        try {
            int n = Integer.parseInt(text.strip());
            if (n < 1) {
                throw new IllegalArgumentException(INPUTS_PROPERTY + " must be >= 1, got " + n);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(INPUTS_PROPERTY + " must be a whole number >= 1, got '" + text + "'", e);
        }
    }

    /**
     * One fuzz input: how it was made (for the failure report) and its bytes, held as ISO-8859-1
     * text so that the report shows every byte (one char per byte, escaped where not printable).
     */
    public record Input(String how, String latin1) {
        public Input {
            Objects.requireNonNull(how, "how");
            Objects.requireNonNull(latin1, "latin1");
        }

        static Input of(String how, byte[] bytes) {
            return new Input(how, new String(bytes, StandardCharsets.ISO_8859_1));
        }

        /** The bytes (a fresh copy). */
        public byte[] bytes() {
            return latin1.getBytes(StandardCharsets.ISO_8859_1);
        }
    }

    /**
     * Inputs made from {@code samples} (valid inputs of the format under test): a quarter random
     * bytes or random characters from {@code tokens}, the rest one sample truncated, mutated one to
     * eight times (bytes deleted, inserted, replaced or bit-flipped; a token of {@code tokens}
     * inserted or written over; a slice duplicated or removed), or spliced with another sample.
     *
     * @param samples at least one valid input
     * @param tokens fragments of the format that help mutations reach deep (keys, keywords, edge
     *     numbers); at least one
     */
    public static Gen<Input> bytes(List<byte[]> samples, List<String> tokens) {
        if (samples.isEmpty() || tokens.isEmpty()) {
            throw new IllegalArgumentException("need at least one sample and one token");
        }
        List<byte[]> s = samples.stream().map(byte[]::clone).toList();
        List<byte[]> t =
                tokens.stream().map(x -> x.getBytes(StandardCharsets.UTF_8)).toList();
        return random -> {
            int kind = random.nextInt(16);
            if (kind < 2) {
                byte[] b = new byte[random.nextInt(200)];
                random.nextBytes(b);
                return Input.of("random bytes", b);
            }
            if (kind < 4) {
                StringBuilder sb = new StringBuilder();
                int n = random.nextInt(30);
                for (int i = 0; i < n; i++) {
                    sb.append(new String(t.get(random.nextInt(t.size())), StandardCharsets.UTF_8));
                }
                return Input.of("random tokens", sb.toString().getBytes(StandardCharsets.UTF_8));
            }
            int which = random.nextInt(s.size());
            byte[] sample = s.get(which);
            if (kind < 6) {
                int at = random.nextInt(sample.length + 1);
                return Input.of("sample " + which + " cut at " + at, Arrays.copyOf(sample, at));
            }
            if (kind < 7) {
                int other = random.nextInt(s.size());
                byte[] second = s.get(other);
                int a = random.nextInt(sample.length + 1);
                int b = random.nextInt(second.length + 1);
                byte[] out = new byte[a + second.length - b];
                System.arraycopy(sample, 0, out, 0, a);
                System.arraycopy(second, b, out, a, second.length - b);
                return Input.of("sample " + which + "[0," + a + ") + sample " + other + "[" + b + ",)", out);
            }
            List<Byte> bytes = new ArrayList<>(sample.length + 16);
            for (byte x : sample) {
                bytes.add(x);
            }
            int edits = 1 + random.nextInt(8);
            for (int e = 0; e < edits; e++) {
                mutate(bytes, t, random);
            }
            byte[] out = new byte[bytes.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = bytes.get(i);
            }
            return Input.of("sample " + which + " with " + edits + " edit(s)", out);
        };
    }

    private static void mutate(List<Byte> b, List<byte[]> tokens, SplittableRandom random) {
        int at = random.nextInt(b.size() + 1);
        switch (random.nextInt(7)) {
            case 0 -> {
                if (at < b.size()) {
                    b.remove(at);
                }
            }
            case 1 -> b.add(at, (byte) random.nextInt(256));
            case 2 -> {
                if (at < b.size()) {
                    b.set(at, (byte) (b.get(at) ^ (1 << random.nextInt(8))));
                }
            }
            case 3, 4 -> {
                byte[] token = tokens.get(random.nextInt(tokens.size()));
                boolean over = random.nextBoolean();
                for (int i = 0; i < token.length; i++) {
                    if (over && at + i < b.size()) {
                        b.set(at + i, token[i]);
                    } else {
                        b.add(Math.min(at + i, b.size()), token[i]);
                    }
                }
            }
            case 5 -> {
                int end = Math.min(b.size(), at + random.nextInt(64));
                List<Byte> slice = new ArrayList<>(b.subList(at, end));
                b.addAll(random.nextInt(b.size() + 1), slice);
            }
            default -> {
                int end = Math.min(b.size(), at + random.nextInt(64));
                b.subList(at, end).clear();
            }
        }
    }

    /**
     * Runs fuzz inputs one at a time on a reused daemon thread, failing an input that takes longer
     * than its limit. Not thread-safe: one property at a time.
     */
    public static final class Watchdog implements AutoCloseable {
        private final Duration limit;
        private ExecutorService executor = newExecutor();

        public Watchdog(Duration limit) {
            this.limit = Objects.requireNonNull(limit, "limit");
        }

        private static ExecutorService newExecutor() {
            return Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "fuzz-watchdog");
                t.setDaemon(true);
                return t;
            });
        }

        /**
         * Runs {@code action} and returns what it threw, or {@code null} when it returned.
         *
         * @throws AssertionError when it runs longer than the limit (its thread is abandoned)
         */
        public Throwable run(Object input, Callable<?> action) throws InterruptedException {
            Future<?> f = executor.submit(action);
            try {
                f.get(limit.toNanos(), TimeUnit.NANOSECONDS);
                return null;
            } catch (ExecutionException e) {
                return e.getCause();
            } catch (TimeoutException e) {
                f.cancel(true);
                executor.shutdownNow();
                executor = newExecutor();
                throw new AssertionError("no answer within " + limit + " (a hang) for input " + ValueText.of(input));
            }
        }

        @Override
        public void close() {
            executor.shutdownNow();
        }
    }
}
