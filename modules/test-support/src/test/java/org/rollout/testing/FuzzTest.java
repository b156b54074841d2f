package org.rollout.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class FuzzTest {
    private static final List<byte[]> SAMPLES = List.of("{\"a\": [1, 2]}".getBytes(StandardCharsets.UTF_8));
    private static final List<String> TOKENS = List.of("null", "{");

    @Test
    void inputsAreTheDeclaredCountUnlessTheSystemPropertySaysOtherwise() {
        String before = System.getProperty(Fuzz.INPUTS_PROPERTY);
        try {
            System.clearProperty(Fuzz.INPUTS_PROPERTY);
            assertThat(Fuzz.inputs(2_000)).isEqualTo(2_000);
            System.setProperty(Fuzz.INPUTS_PROPERTY, "1000000");
            assertThat(Fuzz.inputs(2_000)).isEqualTo(1_000_000);
            System.setProperty(Fuzz.INPUTS_PROPERTY, "lots");
            assertThatThrownBy(() -> Fuzz.inputs(2_000))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("rollout.fuzz.inputs must be a whole number >= 1, got 'lots'");
            System.setProperty(Fuzz.INPUTS_PROPERTY, "0");
            assertThatThrownBy(() -> Fuzz.inputs(2_000)).hasMessage("rollout.fuzz.inputs must be >= 1, got 0");
        } finally {
            if (before == null) {
                System.clearProperty(Fuzz.INPUTS_PROPERTY);
            } else {
                System.setProperty(Fuzz.INPUTS_PROPERTY, before);
            }
        }
    }

    @Test
    void theSameSeedMakesTheSameInput() {
        Gen<Fuzz.Input> gen = Fuzz.bytes(SAMPLES, TOKENS);
        for (long seed = 0; seed < 50; seed++) {
            assertThat(gen.generate(new SplittableRandom(seed))).isEqualTo(gen.generate(new SplittableRandom(seed)));
        }
    }

    @Test
    void inputsCoverEveryKindAndMostDifferFromTheSample() {
        Gen<Fuzz.Input> gen = Fuzz.bytes(SAMPLES, TOKENS);
        Set<String> kinds = new HashSet<>();
        int changed = 0;
        for (long seed = 0; seed < 2_000; seed++) {
            Fuzz.Input in = gen.generate(new SplittableRandom(seed));
            kinds.add(in.how().replaceAll("[0-9]+", "N"));
            if (!java.util.Arrays.equals(in.bytes(), SAMPLES.getFirst())) {
                changed++;
            }
        }
        assertThat(kinds)
                .contains(
                        "random bytes",
                        "random tokens",
                        "sample N cut at N",
                        "sample N[N,N) + sample N[N,)",
                        "sample N with N edit(s)");
        assertThat(changed).isGreaterThan(1_500);
    }

    @Test
    void bytesSurviveTheLatin1RoundTrip() {
        byte[] all = new byte[256];
        for (int i = 0; i < 256; i++) {
            all[i] = (byte) i;
        }
        Fuzz.Input in = new Fuzz.Input("all", new String(all, StandardCharsets.ISO_8859_1));
        assertThat(in.bytes()).isEqualTo(all);
    }

    @Test
    void theWatchdogReturnsWhatTheActionThrew() throws Exception {
        try (Fuzz.Watchdog w = new Fuzz.Watchdog(Fuzz.HANG)) {
            assertThat(w.run("ok", () -> 1)).isNull();
            assertThat(w.run("bad", () -> {
                        throw new IllegalStateException("boom");
                    }))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("boom");
        }
    }

    @Test
    void theWatchdogFailsAnInputThatNeverReturns() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        try (Fuzz.Watchdog w = new Fuzz.Watchdog(Duration.ofMillis(200))) {
            assertThatThrownBy(() -> w.run("stuck", () -> {
                        never.await();
                        return null;
                    }))
                    .isInstanceOf(AssertionError.class)
                    .hasMessage("no answer within PT0.2S (a hang) for input \"stuck\"");
        }
    }
}
