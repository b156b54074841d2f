package org.rollout.api;

import java.util.ArrayList;
import java.util.List;

/**
 * Sampling parameters for one generation, AReaL's {@code GenerationHyperparameters} (semantics §1.3): every
 * field, with the same defaults, named in errors and configs by its AReaL key.
 *
 * <table>
 *   <caption>fields</caption>
 *   <tr><th>key</th><th>default</th><th>allowed</th></tr>
 *   <tr><td>n_samples</td><td>1</td><td>≥ 1; the group size. {@code generate} itself needs 1.</td></tr>
 *   <tr><td>max_new_tokens</td><td>16384</td><td>≥ 1; clipped per request to max_tokens − prompt (semantics §2.1)</td></tr>
 *   <tr><td>min_new_tokens</td><td>0</td><td>0 … max_new_tokens; not sent to SGLang or vLLM (as in AReaL)</td></tr>
 *   <tr><td>max_tokens</td><td>32768</td><td>≥ 1; prompt plus generation</td></tr>
 *   <tr><td>greedy</td><td>false</td><td>when true, temperature 0 is sent</td></tr>
 *   <tr><td>top_p</td><td>1.0</td><td>(0, 1]</td></tr>
 *   <tr><td>top_k</td><td>100000000</td><td>≥ 1, or −1 for no limit</td></tr>
 *   <tr><td>temperature</td><td>1.0</td><td>finite, ≥ 0</td></tr>
 *   <tr><td>stop_token_ids</td><td>[]</td><td>token ids ≥ 0</td></tr>
 *   <tr><td>ignore_eos</td><td>false</td><td></td></tr>
 *   <tr><td>skip_special_tokens</td><td>true</td><td></td></tr>
 *   <tr><td>stop</td><td>[]</td><td>non-empty strings; sent only when non-empty</td></tr>
 *   <tr><td>frequency_penalty</td><td>0.0</td><td>[−2, 2]</td></tr>
 *   <tr><td>seed</td><td>null</td><td>any long; sent as SGLang sampling_seed / vLLM seed when set</td></tr>
 *   <tr><td>lora_name</td><td>"default_lora"</td><td>non-null</td></tr>
 *   <tr><td>use_beam_search</td><td>false</td><td>the SGLang backend rejects true</td></tr>
 *   <tr><td>reward_normalization</td><td>false</td><td>rollout-time group normalisation (semantics §5.6)</td></tr>
 *   <tr><td>reward_normalization_use_std</td><td>true</td><td>false: centre only, divisor 1 (semantics §5.6 [C])</td></tr>
 *   <tr><td>drop_incomplete_group</td><td>false</td><td>any unusable slot drops the group (semantics §5.5)</td></tr>
 * </table>
 *
 * <p>A config is valid by construction: the canonical constructor (and so the builder) throws
 * {@link InvalidConfigException} naming the field. Instances are immutable; lists are copied.
 */
public record GenerationConfig(
        int nSamples,
        int maxNewTokens,
        int minNewTokens,
        int maxTokens,
        boolean greedy,
        double topP,
        int topK,
        double temperature,
        List<Integer> stopTokenIds,
        boolean ignoreEos,
        boolean skipSpecialTokens,
        List<String> stop,
        double frequencyPenalty,
        Long seed,
        String loraName,
        boolean useBeamSearch,
        boolean rewardNormalization,
        boolean rewardNormalizationUseStd,
        boolean dropIncompleteGroup) {

    public static final int DEFAULT_MAX_NEW_TOKENS = 16384;
    public static final int DEFAULT_MAX_TOKENS = 32768;
    public static final int DEFAULT_TOP_K = 100_000_000;
    public static final String DEFAULT_LORA_NAME = "default_lora";

    private static final GenerationConfig DEFAULTS = builder().build();

    public GenerationConfig {
        require(nSamples >= 1, "n_samples", nSamples, "an integer >= 1");
        require(maxNewTokens >= 1, "max_new_tokens", maxNewTokens, "an integer >= 1");
        require(
                minNewTokens >= 0 && minNewTokens <= maxNewTokens,
                "min_new_tokens",
                minNewTokens,
                "an integer in [0, max_new_tokens=" + maxNewTokens + "]");
        require(maxTokens >= 1, "max_tokens", maxTokens, "an integer >= 1");
        require(topP > 0 && topP <= 1, "top_p", topP, "a number in (0, 1]");
        require(topK >= 1 || topK == -1, "top_k", topK, "an integer >= 1, or -1 for no limit");
        require(Double.isFinite(temperature) && temperature >= 0, "temperature", temperature, "a finite number >= 0");
        require(
                frequencyPenalty >= -2 && frequencyPenalty <= 2,
                "frequency_penalty",
                frequencyPenalty,
                "a number in [-2, 2]");
        require(stopTokenIds != null, "stop_token_ids", null, "a list of token ids");
        // Checked before copying: List.copyOf would reject a null element without naming the key.
        for (Integer id : stopTokenIds) {
            require(id != null && id >= 0, "stop_token_ids", stopTokenIds, "token ids >= 0");
        }
        stopTokenIds = List.copyOf(stopTokenIds);
        stop = stop == null ? List.of() : stop;
        for (String s : stop) {
            require(s != null && !s.isEmpty(), "stop", stop, "non-empty strings");
        }
        stop = List.copyOf(stop);
        require(loraName != null, "lora_name", null, "a string");
    }

    /** The defaults of semantics §1.3. */
    public static GenerationConfig defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder(this);
    }

    /** A copy with {@code n_samples} replaced; the engine calls generate with {@code withNSamples(1)}. */
    public GenerationConfig withNSamples(int n) {
        return toBuilder().nSamples(n).build();
    }

    public GenerationConfig withMaxNewTokens(int n) {
        return toBuilder().maxNewTokens(n).build();
    }

    /**
     * A copy with the pad id and then the EOS id appended to {@code stop_token_ids}, each only if
     * not already present (AReaL's {@code new_with_stop_and_pad_token_ids}). A negative id means the
     * tokenizer has none and is skipped, where AReaL would append {@code None}.
     */
    public GenerationConfig withStopAndPadTokenIds(int padTokenId, int eosTokenId) {
        List<Integer> ids = new ArrayList<>(stopTokenIds);
        for (int id : new int[] {padTokenId, eosTokenId}) {
            if (id >= 0 && !ids.contains(id)) {
                ids.add(id);
            }
        }
        return toBuilder().stopTokenIds(ids).build();
    }

    /** The temperature to send: 0 when greedy. */
    public double effectiveTemperature() {
        return greedy ? 0.0 : temperature;
    }

    private static void require(boolean ok, String key, Object value, String allowed) {
        if (!ok) {
            throw new InvalidConfigException(key, value, allowed);
        }
    }

    /** Builds a {@link GenerationConfig}; starts from the defaults of semantics §1.3. */
    public static final class Builder {
        private int nSamples = 1;
        private int maxNewTokens = DEFAULT_MAX_NEW_TOKENS;
        private int minNewTokens = 0;
        private int maxTokens = DEFAULT_MAX_TOKENS;
        private boolean greedy = false;
        private double topP = 1.0;
        private int topK = DEFAULT_TOP_K;
        private double temperature = 1.0;
        private List<Integer> stopTokenIds = List.of();
        private boolean ignoreEos = false;
        private boolean skipSpecialTokens = true;
        private List<String> stop = List.of();
        private double frequencyPenalty = 0.0;
        private Long seed = null;
        private String loraName = DEFAULT_LORA_NAME;
        private boolean useBeamSearch = false;
        private boolean rewardNormalization = false;
        private boolean rewardNormalizationUseStd = true;
        private boolean dropIncompleteGroup = false;

        private Builder() {}

        private Builder(GenerationConfig c) {
            nSamples = c.nSamples;
            maxNewTokens = c.maxNewTokens;
            minNewTokens = c.minNewTokens;
            maxTokens = c.maxTokens;
            greedy = c.greedy;
            topP = c.topP;
            topK = c.topK;
            temperature = c.temperature;
            stopTokenIds = c.stopTokenIds;
            ignoreEos = c.ignoreEos;
            skipSpecialTokens = c.skipSpecialTokens;
            stop = c.stop;
            frequencyPenalty = c.frequencyPenalty;
            seed = c.seed;
            loraName = c.loraName;
            useBeamSearch = c.useBeamSearch;
            rewardNormalization = c.rewardNormalization;
            rewardNormalizationUseStd = c.rewardNormalizationUseStd;
            dropIncompleteGroup = c.dropIncompleteGroup;
        }

        public Builder nSamples(int v) {
            nSamples = v;
            return this;
        }

        public Builder maxNewTokens(int v) {
            maxNewTokens = v;
            return this;
        }

        public Builder minNewTokens(int v) {
            minNewTokens = v;
            return this;
        }

        public Builder maxTokens(int v) {
            maxTokens = v;
            return this;
        }

        public Builder greedy(boolean v) {
            greedy = v;
            return this;
        }

        public Builder topP(double v) {
            topP = v;
            return this;
        }

        public Builder topK(int v) {
            topK = v;
            return this;
        }

        public Builder temperature(double v) {
            temperature = v;
            return this;
        }

        /** A null list is refused by {@link #build()} as an {@link InvalidConfigException}. */
        public Builder stopTokenIds(List<Integer> v) {
            stopTokenIds = v;
            return this;
        }

        public Builder ignoreEos(boolean v) {
            ignoreEos = v;
            return this;
        }

        public Builder skipSpecialTokens(boolean v) {
            skipSpecialTokens = v;
            return this;
        }

        public Builder stop(List<String> v) {
            stop = v;
            return this;
        }

        public Builder frequencyPenalty(double v) {
            frequencyPenalty = v;
            return this;
        }

        public Builder seed(Long v) {
            seed = v;
            return this;
        }

        public Builder loraName(String v) {
            loraName = v;
            return this;
        }

        public Builder useBeamSearch(boolean v) {
            useBeamSearch = v;
            return this;
        }

        public Builder rewardNormalization(boolean v) {
            rewardNormalization = v;
            return this;
        }

        public Builder rewardNormalizationUseStd(boolean v) {
            rewardNormalizationUseStd = v;
            return this;
        }

        public Builder dropIncompleteGroup(boolean v) {
            dropIncompleteGroup = v;
            return this;
        }

        /** @throws InvalidConfigException naming the first field that is not allowed */
        public GenerationConfig build() {
            return new GenerationConfig(
                    nSamples,
                    maxNewTokens,
                    minNewTokens,
                    maxTokens,
                    greedy,
                    topP,
                    topK,
                    temperature,
                    stopTokenIds,
                    ignoreEos,
                    skipSpecialTokens,
                    stop,
                    frequencyPenalty,
                    seed,
                    loraName,
                    useBeamSearch,
                    rewardNormalization,
                    rewardNormalizationUseStd,
                    dropIncompleteGroup);
        }
    }
}
