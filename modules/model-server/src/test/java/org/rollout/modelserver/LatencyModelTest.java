package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.modelserver.ServerClient.generate;

import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class LatencyModelTest {
    private static final LatencyModel MODEL =
            new LatencyModel(Duration.ofNanos(2_000), Duration.ofMillis(4), Duration.ofNanos(250_000));

    @Test
    void stepTimeIsPrefillPerTokenPlusBasePlusPerSequenceTimesRunning() {
        assertThat(MODEL.stepNanos(0, 1)).isEqualTo(4_000_000 + 250_000);
        assertThat(MODEL.stepNanos(0, 64)).isEqualTo(4_000_000 + 64 * 250_000);
        assertThat(MODEL.stepNanos(100, 2)).isEqualTo(100 * 2_000 + 4_000_000 + 2 * 250_000);
        assertThat(MODEL.stepNanos(100, 0))
                .as("a prefill-only step has no decode cost")
                .isEqualTo(200_000);
        assertThat(LatencyModel.NONE.isNone()).isTrue();
        assertThat(LatencyModel.NONE.stepNanos(1000, 64)).isZero();
    }

    @Test
    void negativeDurationsAreRefusedNamingTheTerm() {
        assertThatThrownBy(() -> new LatencyModel(Duration.ZERO, Duration.ofMillis(-1), Duration.ZERO))
                .hasMessageContaining("latency decode_base must be a non-negative duration");
    }

    @Test
    void aGenerationTakesAtLeastItsModelledStepsAndTheServerCountsThatTimeAsBusy() throws IOException {
        try (ModelServer server = ModelServer.start(ModelServerConfig.defaults().withLatency(MODEL))) {
            ServerClient client = new ServerClient(server);
            int[] prompt = new int[50];
            java.util.Arrays.fill(prompt, 'a');
            long t0 = System.nanoTime();
            ServerClient.Reply r =
                    client.post("/generate", generate(null, prompt, "\"max_new_tokens\":25,\"ignore_eos\":true"));
            Duration elapsed = Duration.ofNanos(System.nanoTime() - t0);
            assertThat(r.json().at("/meta_info/completion_tokens").asInt()).isEqualTo(25);
            // 25 decode steps of 4.25 ms, plus 50 prompt tokens of 2 µs in the first.
            assertThat(elapsed).isGreaterThanOrEqualTo(Duration.ofNanos(25 * MODEL.stepNanos(0, 1) + 100_000));
            assertThat(r.json().at("/meta_info/e2e_latency").asDouble()).isGreaterThanOrEqualTo(0.106);
            assertThat(server.stats().busyFraction()).isPositive();
        }
    }
}
