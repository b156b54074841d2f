package org.rollout.config;

import java.util.List;
import java.util.Map;
import org.rollout.api.GenerationConfig;

/** The gconfig keys, their types and what is allowed (as GenerationConfig words it). */
enum GenerationKey {
    N_SAMPLES("n_samples", Kind.INT, "an integer >= 1"),
    MAX_NEW_TOKENS("max_new_tokens", Kind.INT, "an integer >= 1"),
    MIN_NEW_TOKENS("min_new_tokens", Kind.INT, "an integer in [0, max_new_tokens]"),
    MAX_TOKENS("max_tokens", Kind.INT, "an integer >= 1"),
    GREEDY("greedy", Kind.BOOL, "true or false"),
    TOP_P("top_p", Kind.NUMBER, "a number in (0, 1]"),
    TOP_K("top_k", Kind.INT, "an integer >= 1, or -1 for no limit"),
    TEMPERATURE("temperature", Kind.NUMBER, "a finite number >= 0"),
    STOP_TOKEN_IDS("stop_token_ids", Kind.INT_LIST, "a list of token ids >= 0"),
    IGNORE_EOS("ignore_eos", Kind.BOOL, "true or false"),
    SKIP_SPECIAL_TOKENS("skip_special_tokens", Kind.BOOL, "true or false"),
    STOP("stop", Kind.STRING_LIST_OR_NULL, "a list of non-empty strings, or null"),
    FREQUENCY_PENALTY("frequency_penalty", Kind.NUMBER, "a number in [-2, 2]"),
    SEED("seed", Kind.LONG_OR_NULL, "an integer, or null"),
    LORA_NAME("lora_name", Kind.STRING, "a string"),
    USE_BEAM_SEARCH("use_beam_search", Kind.BOOL, "true or false"),
    REWARD_NORMALIZATION("reward_normalization", Kind.BOOL, "true or false"),
    REWARD_NORMALIZATION_USE_STD("reward_normalization_use_std", Kind.BOOL, "true or false"),
    DROP_INCOMPLETE_GROUP("drop_incomplete_group", Kind.BOOL, "true or false");

    enum Kind {
        INT,
        NUMBER,
        BOOL,
        INT_LIST,
        STRING_LIST_OR_NULL,
        LONG_OR_NULL,
        STRING
    }

    final String key;
    final Kind kind;
    final String allowed;

    GenerationKey(String key, Kind kind, String allowed) {
        this.key = key;
        this.kind = kind;
        this.allowed = allowed;
    }

    /** The value at {@code path} read as this key's type; {@link #ABSENT} after an error. */
    Object read(ConfigReader r, String path) {
        Object v = switch (kind) {
            case INT -> r.integer(path, Integer.MIN_VALUE, Integer.MAX_VALUE, false, allowed);
            case NUMBER -> r.number(path, allowed);
            case BOOL -> r.bool(path);
            case INT_LIST -> r.integers(path, allowed);
            case STRING_LIST_OR_NULL -> r.strings(path, true, false, allowed);
            case LONG_OR_NULL -> r.integer(path, Long.MIN_VALUE, Long.MAX_VALUE, true, allowed);
            case STRING -> r.string(path, false, allowed);
        };
        if (!r.ok(path)) {
            return ABSENT;
        }
        return kind == Kind.INT ? (Object) ((Long) v).intValue() : v;
    }

    static final Object ABSENT = new Object();

    void apply(GenerationConfig.Builder b, Object v) {
        switch (this) {
            case N_SAMPLES -> b.nSamples((Integer) v);
            case MAX_NEW_TOKENS -> b.maxNewTokens((Integer) v);
            case MIN_NEW_TOKENS -> b.minNewTokens((Integer) v);
            case MAX_TOKENS -> b.maxTokens((Integer) v);
            case GREEDY -> b.greedy((Boolean) v);
            case TOP_P -> b.topP((Double) v);
            case TOP_K -> b.topK((Integer) v);
            case TEMPERATURE -> b.temperature((Double) v);
            case STOP_TOKEN_IDS -> {
                @SuppressWarnings("unchecked")
                List<Integer> ids = (List<Integer>) v;
                b.stopTokenIds(ids);
            }
            case IGNORE_EOS -> b.ignoreEos((Boolean) v);
            case SKIP_SPECIAL_TOKENS -> b.skipSpecialTokens((Boolean) v);
            case STOP -> {
                @SuppressWarnings("unchecked")
                List<String> stop = (List<String>) v;
                b.stop(stop);
            }
            case FREQUENCY_PENALTY -> b.frequencyPenalty((Double) v);
            case SEED -> b.seed((Long) v);
            case LORA_NAME -> b.loraName((String) v);
            case USE_BEAM_SEARCH -> b.useBeamSearch((Boolean) v);
            case REWARD_NORMALIZATION -> b.rewardNormalization((Boolean) v);
            case REWARD_NORMALIZATION_USE_STD -> b.rewardNormalizationUseStd((Boolean) v);
            case DROP_INCOMPLETE_GROUP -> b.dropIncompleteGroup((Boolean) v);
        }
    }

    static GenerationConfig build(Map<GenerationKey, Object> values) {
        GenerationConfig.Builder b = GenerationConfig.builder();
        values.forEach((k, v) -> k.apply(b, v));
        return b.build();
    }

    static GenerationKey of(String key) {
        for (GenerationKey k : values()) {
            if (k.key.equals(key)) {
                return k;
            }
        }
        return null;
    }
}
