package org.rollout.python;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.rollout.api.GenerationConfig;

/**
 * A {@link GenerationConfig} as the worker channel carries it: the snake_case fields of AReaL's
 * {@code GenerationHyperparameters} (plus the engine's {@code reward_normalization_use_std}), both
 * ways. Stateless.
 */
final class WireGconfig {
    private WireGconfig() {}

    /** Every field of {@code g}, by its configuration key. */
    static ObjectNode toJson(GenerationConfig g) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("n_samples", g.nSamples());
        o.put("max_new_tokens", g.maxNewTokens());
        o.put("min_new_tokens", g.minNewTokens());
        o.put("max_tokens", g.maxTokens());
        o.put("greedy", g.greedy());
        o.put("top_p", g.topP());
        o.put("top_k", g.topK());
        o.put("temperature", g.temperature());
        g.stopTokenIds().forEach(o.putArray("stop_token_ids")::add);
        o.put("ignore_eos", g.ignoreEos());
        o.put("skip_special_tokens", g.skipSpecialTokens());
        if (g.stop() == null) {
            o.putNull("stop");
        } else {
            g.stop().forEach(o.putArray("stop")::add);
        }
        o.put("frequency_penalty", g.frequencyPenalty());
        if (g.seed() == null) {
            o.putNull("seed");
        } else {
            o.put("seed", g.seed());
        }
        o.put("lora_name", g.loraName());
        o.put("use_beam_search", g.useBeamSearch());
        o.put("reward_normalization", g.rewardNormalization());
        o.put("reward_normalization_use_std", g.rewardNormalizationUseStd());
        o.put("drop_incomplete_group", g.dropIncompleteGroup());
        return o;
    }

    /**
     * The configuration a {@code generate} message asks for: the fields it carries over {@code
     * base}'s, which fills what it leaves out.
     *
     * @throws IllegalArgumentException naming the field whose value is not of its type or not allowed
     */
    static GenerationConfig fromJson(JsonNode o, GenerationConfig base) {
        if (o == null || o.isNull() || o.isEmpty()) {
            return base;
        }
        // A workflow sends the same gconfig with every request: the last one read is kept.
        Memo m = last;
        if (m != null && m.base == base && m.json.equals(o)) {
            return m.config;
        }
        GenerationConfig config = read(o, base);
        last = new Memo(o, base, config);
        return config;
    }

    private record Memo(JsonNode json, GenerationConfig base, GenerationConfig config) {}

    private static volatile Memo last;

    private static GenerationConfig read(JsonNode o, GenerationConfig base) {
        if (!o.isObject()) {
            throw new IllegalArgumentException("gconfig must be an object, got " + o.getNodeType());
        }
        GenerationConfig.Builder b = base.toBuilder();
        for (var it = o.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            String k = e.getKey();
            JsonNode v = e.getValue();
            switch (k) {
                case "n_samples" -> b.nSamples(integer(k, v));
                case "max_new_tokens" -> b.maxNewTokens(integer(k, v));
                case "min_new_tokens" -> b.minNewTokens(integer(k, v));
                case "max_tokens" -> b.maxTokens(integer(k, v));
                case "greedy" -> b.greedy(bool(k, v));
                case "top_p" -> b.topP(number(k, v));
                case "top_k" -> b.topK(integer(k, v));
                case "temperature" -> b.temperature(number(k, v));
                case "stop_token_ids" -> b.stopTokenIds(v.isNull() ? List.of() : integers(k, v));
                case "ignore_eos" -> b.ignoreEos(bool(k, v));
                case "skip_special_tokens" -> b.skipSpecialTokens(bool(k, v));
                case "stop" -> b.stop(v.isNull() ? null : strings(k, v));
                case "frequency_penalty" -> b.frequencyPenalty(number(k, v));
                case "seed" -> b.seed(v.isNull() ? null : (Long) v.asLong());
                case "lora_name" -> b.loraName(v.isNull() ? null : v.asText());
                case "use_beam_search" -> b.useBeamSearch(bool(k, v));
                case "reward_normalization" -> b.rewardNormalization(bool(k, v));
                case "reward_normalization_use_std" -> b.rewardNormalizationUseStd(bool(k, v));
                case "drop_incomplete_group" -> b.dropIncompleteGroup(bool(k, v));
                default -> {
                    // AReaL's newer fields (e.g. a processor's options) do not change how the engine generates.
                }
            }
        }
        return b.build();
    }

    private static int integer(String k, JsonNode v) {
        if (!v.canConvertToInt() || !v.isIntegralNumber()) {
            throw new IllegalArgumentException("gconfig." + k + " must be an integer, got " + v);
        }
        return v.asInt();
    }

    private static double number(String k, JsonNode v) {
        if (!v.isNumber()) {
            throw new IllegalArgumentException("gconfig." + k + " must be a number, got " + v);
        }
        return v.asDouble();
    }

    private static boolean bool(String k, JsonNode v) {
        if (!v.isBoolean()) {
            throw new IllegalArgumentException("gconfig." + k + " must be true or false, got " + v);
        }
        return v.asBoolean();
    }

    private static List<Integer> integers(String k, JsonNode v) {
        if (!v.isArray()) {
            throw new IllegalArgumentException("gconfig." + k + " must be a list of integers, got " + v);
        }
        List<Integer> out = new ArrayList<>();
        v.forEach(x -> out.add(integer(k, x)));
        return out;
    }

    private static List<String> strings(String k, JsonNode v) {
        if (!v.isArray()) {
            throw new IllegalArgumentException("gconfig." + k + " must be a list of strings, got " + v);
        }
        List<String> out = new ArrayList<>();
        v.forEach(x -> out.add(x.asText()));
        return out;
    }
}
