package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class GenerationConfigTest {

    private static void rejects(UnaryOperator<GenerationConfig.Builder> change, String key, String message) {
        assertThatThrownBy(() -> change.apply(GenerationConfig.builder()).build())
                .isInstanceOfSatisfying(
                        InvalidConfigException.class, e -> assertThat(e.key()).isEqualTo(key))
                .hasMessage(message);
    }

    @Test
    void defaultsAreThoseOfAReaLsGenerationHyperparameters() {
        GenerationConfig d = GenerationConfig.defaults();
        assertThat(d.nSamples()).isEqualTo(1);
        assertThat(d.maxNewTokens()).isEqualTo(16384);
        assertThat(d.minNewTokens()).isZero();
        assertThat(d.maxTokens()).isEqualTo(32768);
        assertThat(d.greedy()).isFalse();
        assertThat(d.topP()).isEqualTo(1.0);
        assertThat(d.topK()).isEqualTo(100_000_000);
        assertThat(d.temperature()).isEqualTo(1.0);
        assertThat(d.stopTokenIds()).isEmpty();
        assertThat(d.ignoreEos()).isFalse();
        assertThat(d.skipSpecialTokens()).isTrue();
        assertThat(d.stop()).isEmpty(); // AReaL: None; both mean "send no stop strings"
        assertThat(d.frequencyPenalty()).isEqualTo(0.0);
        assertThat(d.seed()).isNull();
        assertThat(d.loraName()).isEqualTo("default_lora");
        assertThat(d.useBeamSearch()).isFalse();
        assertThat(d.rewardNormalization()).isFalse();
        assertThat(d.rewardNormalizationUseStd()).isTrue();
        assertThat(d.dropIncompleteGroup()).isFalse();
        assertThat(GenerationConfig.builder().build()).isEqualTo(d);
    }

    @Test
    void nSamplesMustBePositive() {
        rejects(b -> b.nSamples(0), "n_samples", "invalid value for 'n_samples': 0 (allowed: an integer >= 1)");
    }

    @Test
    void maxNewTokensMustBePositive() {
        rejects(
                b -> b.maxNewTokens(0),
                "max_new_tokens",
                "invalid value for 'max_new_tokens': 0 (allowed: an integer >= 1)");
    }

    @Test
    void minNewTokensMustLieBetweenZeroAndMaxNewTokens() {
        rejects(
                b -> b.minNewTokens(-1),
                "min_new_tokens",
                "invalid value for 'min_new_tokens': -1 (allowed: an integer in [0, max_new_tokens=16384])");
        rejects(
                b -> b.maxNewTokens(8).minNewTokens(9),
                "min_new_tokens",
                "invalid value for 'min_new_tokens': 9 (allowed: an integer in [0, max_new_tokens=8])");
        assertThat(GenerationConfig.builder()
                        .maxNewTokens(8)
                        .minNewTokens(8)
                        .build()
                        .minNewTokens())
                .isEqualTo(8);
    }

    @Test
    void maxTokensMustBePositive() {
        rejects(b -> b.maxTokens(0), "max_tokens", "invalid value for 'max_tokens': 0 (allowed: an integer >= 1)");
    }

    @Test
    void topPMustLieInTheHalfOpenUnitInterval() {
        rejects(b -> b.topP(0.0), "top_p", "invalid value for 'top_p': 0.0 (allowed: a number in (0, 1])");
        rejects(b -> b.topP(1.0001), "top_p", "invalid value for 'top_p': 1.0001 (allowed: a number in (0, 1])");
        rejects(b -> b.topP(Double.NaN), "top_p", "invalid value for 'top_p': NaN (allowed: a number in (0, 1])");
        assertThat(GenerationConfig.builder().topP(1e-9).build().topP()).isEqualTo(1e-9);
    }

    @Test
    void topKIsPositiveOrMinusOneForNoLimit() {
        rejects(b -> b.topK(0), "top_k", "invalid value for 'top_k': 0 (allowed: an integer >= 1, or -1 for no limit)");
        rejects(
                b -> b.topK(-2),
                "top_k",
                "invalid value for 'top_k': -2 (allowed: an integer >= 1, or -1 for no limit)");
        assertThat(GenerationConfig.builder().topK(-1).build().topK()).isEqualTo(-1);
    }

    @Test
    void temperatureMustBeFiniteAndNotNegative() {
        rejects(
                b -> b.temperature(-0.1),
                "temperature",
                "invalid value for 'temperature': -0.1 (allowed: a finite number >= 0)");
        rejects(
                b -> b.temperature(Double.POSITIVE_INFINITY),
                "temperature",
                "invalid value for 'temperature': Infinity (allowed: a finite number >= 0)");
        rejects(
                b -> b.temperature(Double.NaN),
                "temperature",
                "invalid value for 'temperature': NaN (allowed: a finite number >= 0)");
        assertThat(GenerationConfig.builder().temperature(0).build().temperature())
                .isZero();
    }

    @Test
    void frequencyPenaltyMustLieBetweenMinusTwoAndTwo() {
        rejects(
                b -> b.frequencyPenalty(2.5),
                "frequency_penalty",
                "invalid value for 'frequency_penalty': 2.5 (allowed: a number in [-2, 2])");
        rejects(
                b -> b.frequencyPenalty(-2.01),
                "frequency_penalty",
                "invalid value for 'frequency_penalty': -2.01 (allowed: a number in [-2, 2])");
        assertThat(GenerationConfig.builder().frequencyPenalty(-2).build().frequencyPenalty())
                .isEqualTo(-2);
    }

    @Test
    void stopTokenIdsMustBeNonNegative() {
        rejects(
                b -> b.stopTokenIds(List.of(5, -1)),
                "stop_token_ids",
                "invalid value for 'stop_token_ids': [5, -1] (allowed: token ids >= 0)");
    }

    @Test
    void aNullStopTokenIdIsAnInvalidConfigNotANullPointer() {
        rejects(
                b -> b.stopTokenIds(Arrays.asList(5, null)),
                "stop_token_ids",
                "invalid value for 'stop_token_ids': [5, null] (allowed: token ids >= 0)");
    }

    @Test
    void aNullStopTokenIdListIsAnInvalidConfig() {
        rejects(
                b -> b.stopTokenIds(null),
                "stop_token_ids",
                "invalid value for 'stop_token_ids': null (allowed: a list of token ids)");
    }

    @Test
    void stopStringsMustBeNonEmptyAndTheMessageShowsWhichOne() {
        rejects(
                b -> b.stop(List.of("</s>", "")),
                "stop",
                "invalid value for 'stop': [\"</s>\", \"\"] (allowed: non-empty strings)");
        rejects(
                b -> b.stop(Arrays.asList("a", null)),
                "stop",
                "invalid value for 'stop': [\"a\", null] (allowed: non-empty strings)");
    }

    @Test
    void aNullStopListMeansNoStopStrings() {
        assertThat(GenerationConfig.builder().stop(null).build().stop()).isEmpty();
    }

    @Test
    void loraNameMustNotBeNull() {
        rejects(b -> b.loraName(null), "lora_name", "invalid value for 'lora_name': null (allowed: a string)");
    }

    @Test
    void listsAreCopiedAndUnmodifiable() {
        List<Integer> ids = new ArrayList<>(List.of(1, 2));
        List<String> stop = new ArrayList<>(List.of("x"));
        GenerationConfig c =
                GenerationConfig.builder().stopTokenIds(ids).stop(stop).build();
        ids.add(3);
        stop.add("y");
        assertThat(c.stopTokenIds()).containsExactly(1, 2);
        assertThat(c.stop()).containsExactly("x");
        assertThatThrownBy(() -> c.stopTokenIds().add(9)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> c.stop().add("z")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void withStopAndPadTokenIdsAppendsPadThenEos() {
        GenerationConfig c = GenerationConfig.builder().stopTokenIds(List.of(7)).build();
        assertThat(c.withStopAndPadTokenIds(256, 258).stopTokenIds()).containsExactly(7, 256, 258);
    }

    @Test
    void withStopAndPadTokenIdsSkipsIdsAlreadyPresentAndDuplicates() {
        GenerationConfig c =
                GenerationConfig.builder().stopTokenIds(List.of(258)).build();
        assertThat(c.withStopAndPadTokenIds(256, 258).stopTokenIds()).containsExactly(258, 256);
        assertThat(GenerationConfig.defaults().withStopAndPadTokenIds(5, 5).stopTokenIds())
                .containsExactly(5);
    }

    @Test
    void withStopAndPadTokenIdsSkipsAMissingPad() {
        assertThat(GenerationConfig.defaults().withStopAndPadTokenIds(-1, 258).stopTokenIds())
                .containsExactly(258);
    }

    @Test
    void withStopAndPadTokenIdsLeavesTheOriginalUnchanged() {
        GenerationConfig c = GenerationConfig.defaults();
        c.withStopAndPadTokenIds(1, 2);
        assertThat(c.stopTokenIds()).isEmpty();
    }

    @Test
    void toBuilderRoundTripsEveryField() {
        GenerationConfig c = GenerationConfig.builder()
                .nSamples(8)
                .maxNewTokens(100)
                .minNewTokens(3)
                .maxTokens(200)
                .greedy(true)
                .topP(0.9)
                .topK(50)
                .temperature(0.7)
                .stopTokenIds(List.of(1))
                .ignoreEos(true)
                .skipSpecialTokens(false)
                .stop(List.of("###"))
                .frequencyPenalty(0.5)
                .seed(42L)
                .loraName("mine")
                .useBeamSearch(true)
                .rewardNormalization(true)
                .rewardNormalizationUseStd(false)
                .dropIncompleteGroup(true)
                .build();
        assertThat(c.toBuilder().build()).isEqualTo(c).hasSameHashCodeAs(c);
        assertThat(c).isNotEqualTo(GenerationConfig.defaults());
    }

    @Test
    void withNSamplesAndWithMaxNewTokensChangeOneFieldAndValidate() {
        GenerationConfig c = GenerationConfig.defaults().withNSamples(4).withMaxNewTokens(10);
        assertThat(c.nSamples()).isEqualTo(4);
        assertThat(c.maxNewTokens()).isEqualTo(10);
        assertThat(c.toBuilder().nSamples(1).maxNewTokens(16384).build()).isEqualTo(GenerationConfig.defaults());
        assertThatThrownBy(() -> c.withNSamples(0)).isInstanceOf(InvalidConfigException.class);
    }

    @Test
    void effectiveTemperatureIsZeroWhenGreedy() {
        GenerationConfig hot = GenerationConfig.builder().temperature(0.8).build();
        assertThat(hot.effectiveTemperature()).isEqualTo(0.8);
        assertThat(hot.toBuilder().greedy(true).build().effectiveTemperature()).isZero();
    }

    @Test
    void invalidConfigExceptionCanBePlacedUnderAPrefix() {
        InvalidConfigException e = new InvalidConfigException("top_p", 2.0, "a number in (0, 1]");
        InvalidConfigException under = e.under("eval_gconfig");
        assertThat(under.key()).isEqualTo("eval_gconfig.top_p");
        assertThat(under.value()).isEqualTo(2.0);
        assertThat(under.allowed()).isEqualTo("a number in (0, 1]");
        assertThat(under).hasMessage("invalid value for 'eval_gconfig.top_p': 2.0 (allowed: a number in (0, 1])");
        assertThat(under.getStackTrace()).isEqualTo(e.getStackTrace());
    }
}
