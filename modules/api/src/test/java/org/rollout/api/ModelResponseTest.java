package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ModelResponseTest {
    private static final int EOS = 258;
    private static final int PAD = 256;

    private static ModelResponse response(StopReason reason, int... output) {
        float[] logprobs = new float[output.length];
        int[] versions = new int[output.length];
        return ModelResponse.of(new int[] {1, 2}, output, logprobs, versions, reason, Duration.ofMillis(5));
    }

    @Test
    void lengthsOfTokensLogprobsAndVersionsMustAgree() {
        assertThatThrownBy(() -> ModelResponse.of(
                        new int[] {1}, new int[] {5, 6, 7}, new float[2], new int[3], StopReason.STOP, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("output lengths differ: 3 tokens, 2 logprobs, 3 versions");
        assertThatThrownBy(() -> ModelResponse.of(
                        new int[] {1}, new int[] {5}, new float[1], new int[0], StopReason.STOP, Duration.ZERO))
                .hasMessage("output lengths differ: 1 tokens, 1 logprobs, 0 versions");
    }

    @Test
    void arraysAreCopiedInAndOut() {
        int[] out = {5, 6};
        float[] lp = {-0.5f, -1f};
        int[] ver = {3, 4};
        ModelResponse r = ModelResponse.of(new int[] {1}, out, lp, ver, StopReason.LENGTH, Duration.ofSeconds(1));
        out[0] = 0;
        lp[0] = 0;
        ver[0] = 0;
        r.outputTokens()[1] = 0;
        assertThat(r.outputTokens()).containsExactly(5, 6);
        assertThat(r.outputLogprobs()).containsExactly(-0.5f, -1f);
        assertThat(r.outputVersions()).containsExactly(3, 4);
        assertThat(r.outputToken(1)).isEqualTo(6);
        assertThat(r.outputLogprob(0)).isEqualTo(-0.5f);
        assertThat(r.outputVersion(1)).isEqualTo(4);
        assertThat(r.inputLength()).isEqualTo(1);
        assertThat(r.outputLength()).isEqualTo(2);
        assertThat(r.ttft()).isEqualTo(r.latency()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void headAndTailVersionAreThoseOfTheFirstAndLastToken() {
        int[] versions = new int[100];
        java.util.Arrays.fill(versions, 0, 40, 3);
        java.util.Arrays.fill(versions, 40, 100, 4);
        ModelResponse r = ModelResponse.of(
                new int[] {1}, new int[100], new float[100], versions, StopReason.LENGTH, Duration.ZERO);
        assertThat(r.headVersion()).isEqualTo(3);
        assertThat(r.tailVersion()).isEqualTo(4);
        assertThat(response(StopReason.LENGTH).headVersion()).isEqualTo(-1);
        assertThat(response(StopReason.LENGTH).tailVersion()).isEqualTo(-1);
    }

    @Test
    void endsWithStopChecksTheLastToken() {
        assertThat(response(StopReason.STOP, 5, EOS).endsWithStop(EOS, PAD)).isTrue();
        assertThat(response(StopReason.STOP, 5, PAD).endsWithStop(EOS, PAD)).isTrue();
        assertThat(response(StopReason.STOP, EOS, 5).endsWithStop(EOS, PAD)).isFalse();
        assertThat(response(StopReason.STOP).endsWithStop(EOS, PAD)).isFalse();
    }

    @Test
    void withoutStopStripsTheTrailingRunOfEosAndPad() {
        assertThat(response(StopReason.STOP, 5, 6, EOS, PAD, EOS).outputTokensWithoutStop(EOS, PAD))
                .containsExactly(5, 6);
        assertThat(response(StopReason.STOP, 5, EOS, 6, EOS).outputTokensWithoutStop(EOS, PAD))
                .containsExactly(5, EOS, 6);
    }

    @Test
    void withoutStopAppliesToToolCallsToo() {
        assertThat(response(StopReason.TOOL_CALLS, 5, EOS).outputTokensWithoutStop(EOS, PAD))
                .containsExactly(5);
    }

    @Test
    void withoutStopLeavesLengthAndAbortOutputsUnchanged() {
        assertThat(response(StopReason.LENGTH, 5, EOS).outputTokensWithoutStop(EOS, PAD))
                .containsExactly(5, EOS);
        assertThat(response(StopReason.LENGTH, 5, 6).outputTokensWithoutStop(EOS, PAD))
                .containsExactly(5, 6);
        assertThat(response(StopReason.ABORT, 5, 6).outputTokensWithoutStop(EOS, PAD))
                .containsExactly(5, 6);
    }

    @Test
    void withoutStopOfAnEmptyOutputIsEmpty() {
        assertThat(response(StopReason.STOP).outputTokensWithoutStop(EOS, PAD)).isEmpty();
    }

    @Test
    void aStopOutputThatDoesNotEndInAStopIdIsAnError() {
        assertThatThrownBy(() -> response(StopReason.STOP, 5, 6).outputTokensWithoutStop(EOS, PAD))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("stop reason is stop but the output does not end in one of [258, 256]");
    }

    @Test
    void aStopOutputOfOnlyStopIdsIsAnError() {
        assertThatThrownBy(() -> response(StopReason.STOP, EOS, PAD).outputTokensWithoutStop(EOS, PAD))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the output consists of stop ids only");
    }

    @Test
    void equalityIgnoresTiming() {
        ModelResponse a = response(StopReason.STOP, 5, EOS);
        ModelResponse b = ModelResponse.of(
                new int[] {1, 2}, new int[] {5, EOS}, new float[2], new int[2], StopReason.STOP, Duration.ofHours(1));
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a).isNotEqualTo(response(StopReason.LENGTH, 5, EOS));
    }

    @Test
    void toStringSummarises() {
        assertThat(response(StopReason.STOP, 5, EOS))
                .hasToString("ModelResponse{input_len=2, output_len=2, stop_reason=stop, versions=0..0,"
                        + " latency=PT0.005S}");
    }
}
