package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Parses and validates the bodies of {@code POST /generate} (SGLang) and {@code POST
 * /v1/completions} (vLLM). Every refusal is a {@link BadRequestException} whose message names the
 * field in the request's spelling ({@code sampling_params.top_p}, {@code input_ids[3]}, {@code
 * max_tokens}). Fields SGLang or vLLM define but this server does not implement are accepted only
 * at their neutral value ({@code presence_penalty: 0}, {@code stream: false}, …) so that a client
 * relying on them hears about it instead of getting silently different sampling.
 */
final class GenerateRequests {
    private static final int V = TinyLmWeights.VOCAB_SIZE;

    private GenerateRequests() {}

    /**
     * A parsed generation request.
     *
     * @param inputLogprobStart the first prompt position whose logprob is reported (SGLang's {@code
     *     logprob_start_len}; 0 for vLLM's {@code echo} or {@code prompt_logprobs}), or -1 for none
     * @param echo vLLM's {@code echo}: the prompt's tokens and logprobs lead the completion's
     * @param topLogprobs vLLM's {@code logprobs} count: the top alternatives listed per position in
     *     {@code logprobs.top_logprobs} (besides the chosen token); 0 when null, and for SGLang
     * @param promptLogprobs vLLM's {@code prompt_logprobs} count (with {@code echo} and without it,
     *     the {@code logprobs} count, as vLLM takes it): a {@code prompt_logprobs} list with this many
     *     top alternatives per position is returned; -1 for none
     * @param lora the adapter the request names: SGLang's {@code lora_path} (it must be loaded) or
     *     vLLM's {@code model} (an adapter when one of that name is loaded, else the base model); null for none
     * @param loraRequired whether {@code lora} must name a loaded adapter (SGLang)
     */
    record Parsed(
            String rid,
            int[] prompt,
            SamplingParams params,
            boolean returnLogprob,
            boolean textInLogprobs,
            int inputLogprobStart,
            boolean echo,
            int topLogprobs,
            int promptLogprobs,
            String lora,
            boolean loraRequired) {}

    private static final Set<String> SGLANG_TOP = Set.of(
            "rid",
            "input_ids",
            "text",
            "sampling_params",
            "return_logprob",
            "logprob_start_len",
            "top_logprobs_num",
            "token_ids_logprob",
            "return_text_in_logprobs",
            "stream",
            "image_data",
            "return_routed_experts",
            "lora_path",
            "custom_logit_processor",
            "return_hidden_states",
            "input_embeds");

    private static final Set<String> SGLANG_SAMPLING = Set.of(
            "max_new_tokens",
            "min_new_tokens",
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "frequency_penalty",
            "presence_penalty",
            "repetition_penalty",
            "stop",
            "stop_token_ids",
            "ignore_eos",
            "skip_special_tokens",
            "spaces_between_special_tokens",
            "no_stop_trim",
            "n",
            "sampling_seed",
            "json_schema",
            "regex",
            "ebnf",
            "structural_tag",
            "logit_bias",
            "custom_params",
            "stream_interval");

    private static final Set<String> VLLM_TOP = Set.of(
            "model",
            "prompt",
            "max_tokens",
            "min_tokens",
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "frequency_penalty",
            "presence_penalty",
            "repetition_penalty",
            "stop",
            "stop_token_ids",
            "ignore_eos",
            "skip_special_tokens",
            "spaces_between_special_tokens",
            "include_stop_str_in_output",
            "return_tokens_as_token_ids",
            "logprobs",
            "use_beam_search",
            "stream",
            "seed",
            "n",
            "best_of",
            "echo",
            "prompt_logprobs",
            "user",
            "request_id");

    /** Parses an SGLang {@code /generate} body. */
    static Parsed sglang(ObjectNode body) {
        unknownFields(body, SGLANG_TOP, "");
        if (body.has("text") && !body.get("text").isNull()) {
            throw new BadRequestException(
                    "text", "text prompts are not supported: send input_ids (token ids of the byte-level tokenizer)");
        }
        neutral(body, "", "stream", false);
        neutral(body, "", "return_routed_experts", false);
        neutral(body, "", "return_hidden_states", false);
        JsonNode loraNode = body.get("lora_path");
        String lora = null;
        if (loraNode != null && !loraNode.isNull()) {
            if (!loraNode.isTextual() || loraNode.asText().isEmpty()) {
                throw new BadRequestException(
                        "lora_path", "lora_path must be the name of a loaded LoRA adapter (a non-empty string)");
            }
            lora = loraNode.asText();
        }
        mustBeAbsent(body, "", "custom_logit_processor", "custom logit processors are not supported");
        mustBeAbsent(body, "", "token_ids_logprob", "logprobs of chosen token ids are not supported");
        mustBeAbsent(body, "", "input_embeds", "input embeddings are not supported");
        JsonNode images = body.get("image_data");
        if (images != null && !images.isNull() && !(images.isArray() && images.isEmpty())) {
            throw new BadRequestException("image_data", "image_data must be empty: the built-in model reads no images");
        }
        int topLogprobs = intField(body, "top_logprobs_num", 0, 0, Integer.MAX_VALUE);
        if (topLogprobs != 0) {
            throw new BadRequestException(
                    "top_logprobs_num", "top_logprobs_num must be 0: top alternatives are not reported");
        }
        int start = intField(body, "logprob_start_len", -1, -1, Integer.MAX_VALUE);
        String rid = rid(body.get("rid"), "rid");
        int[] prompt = tokenIds(body.get("input_ids"), "input_ids");
        boolean returnLogprob = boolField(body, "return_logprob", false);
        if (start >= prompt.length) {
            throw new BadRequestException(
                    "logprob_start_len",
                    "logprob_start_len (" + start + ") must be below the prompt length (" + prompt.length + ")");
        }
        boolean textInLogprobs = boolField(body, "return_text_in_logprobs", false);

        JsonNode spNode = body.get("sampling_params");
        ObjectNode sp;
        if (spNode == null || spNode.isNull()) {
            sp = Json.object();
        } else if (spNode instanceof ObjectNode o) {
            sp = o;
        } else {
            throw new BadRequestException(
                    "sampling_params", "sampling_params must be an object, got " + spNode.getNodeType());
        }
        String p = "sampling_params.";
        unknownFields(sp, SGLANG_SAMPLING, p);
        for (String name : List.of("json_schema", "regex", "ebnf", "structural_tag", "logit_bias", "custom_params")) {
            mustBeAbsent(sp, p, name, "constrained decoding and logit bias are not supported");
        }
        neutralNumber(sp, p, "min_p", 0.0);
        neutralNumber(sp, p, "presence_penalty", 0.0);
        neutralNumber(sp, p, "repetition_penalty", 1.0);
        int n = intField(sp, p, "n", 1, 1, Integer.MAX_VALUE);
        if (n != 1) {
            throw new BadRequestException(p + "n", p + "n must be 1: send one request per sample");
        }
        boolField(sp, p, "spaces_between_special_tokens", true);
        intField(sp, p, "stream_interval", 1, 0, Integer.MAX_VALUE);
        int maxNew = intField(sp, p, "max_new_tokens", 128, 0, Integer.MAX_VALUE);
        int minNew = intField(sp, p, "min_new_tokens", 0, 0, Integer.MAX_VALUE);
        if (minNew > maxNew) {
            throw new BadRequestException(
                    p + "min_new_tokens",
                    p + "min_new_tokens (" + minNew + ") exceeds max_new_tokens (" + maxNew + ")");
        }
        double temperature = doubleField(sp, p, "temperature", 1.0);
        if (temperature < 0) {
            throw new BadRequestException(p + "temperature", p + "temperature must be >= 0, got " + temperature);
        }
        double topP = topP(sp, p + "top_p", "top_p");
        int topK = topK(sp, p, "top_k", false);
        double frequencyPenalty = frequencyPenalty(sp, p + "frequency_penalty", "frequency_penalty");
        List<String> stop = stopStrings(sp.get("stop"), p + "stop");
        int[] stopIds = stopIds(sp.get("stop_token_ids"), p + "stop_token_ids");
        boolean ignoreEos = boolField(sp, p, "ignore_eos", false);
        boolean skipSpecial = boolField(sp, p, "skip_special_tokens", true);
        boolean noStopTrim = boolField(sp, p, "no_stop_trim", false);
        Long seed = optionalLong(sp.get("sampling_seed"), p + "sampling_seed");
        SamplingParams params = new SamplingParams(
                SamplingParams.Dialect.SGLANG,
                maxNew,
                minNew,
                temperature,
                topP,
                topK,
                frequencyPenalty,
                stop,
                stopIds,
                ignoreEos,
                skipSpecial,
                noStopTrim,
                seed);
        return new Parsed(
                rid,
                prompt,
                params,
                returnLogprob,
                textInLogprobs,
                returnLogprob ? start : -1,
                false,
                0,
                -1,
                lora,
                true);
    }

    /** Parses a vLLM {@code /v1/completions} body (token-id prompt only). */
    static Parsed vllm(ObjectNode body) {
        unknownFields(body, VLLM_TOP, "");
        neutral(body, "", "stream", false);
        neutral(body, "", "use_beam_search", false);
        boolean echo = boolField(body, "echo", false);
        int promptLogprobs = logprobCount(body, "prompt_logprobs", "prompt");
        neutralNumber(body, "", "min_p", 0.0);
        neutralNumber(body, "", "presence_penalty", 0.0);
        neutralNumber(body, "", "repetition_penalty", 1.0);
        int n = intField(body, "n", 1, 1, Integer.MAX_VALUE);
        if (n != 1) {
            throw new BadRequestException("n", "n must be 1: send one request per sample");
        }
        if (body.has("best_of") && !body.get("best_of").isNull() && intField(body, "best_of", 1, 1, 1) != 1) {
            throw new BadRequestException("best_of", "best_of must be 1");
        }
        int topLogprobs = logprobCount(body, "logprobs", "sampled");
        boolean returnLogprob = topLogprobs >= 0;
        if (promptLogprobs < 0 && echo && returnLogprob) {
            promptLogprobs = topLogprobs; // vLLM: echo scores the prompt with the logprobs count
        }
        JsonNode model = body.get("model");
        if (model != null && !model.isNull() && !model.isTextual()) {
            throw new BadRequestException("model", "model must be a string");
        }
        JsonNode promptNode = body.get("prompt");
        if (promptNode != null && promptNode.isTextual()) {
            throw new BadRequestException(
                    "prompt",
                    "text prompts are not supported: send prompt as a list of token ids of the byte-level tokenizer");
        }
        int[] prompt = tokenIds(promptNode, "prompt");
        String rid = rid(body.get("request_id"), "request_id");
        int maxNew = intField(body, "max_tokens", 16, 0, Integer.MAX_VALUE);
        int minNew = intField(body, "min_tokens", 0, 0, Integer.MAX_VALUE);
        if (minNew > maxNew) {
            throw new BadRequestException(
                    "min_tokens", "min_tokens (" + minNew + ") exceeds max_tokens (" + maxNew + ")");
        }
        double temperature = doubleField(body, "", "temperature", 1.0);
        if (temperature < 0) {
            throw new BadRequestException("temperature", "temperature must be >= 0, got " + temperature);
        }
        double topP = topP(body, "top_p", "top_p");
        int topK = topK(body, "", "top_k", true);
        double frequencyPenalty = frequencyPenalty(body, "frequency_penalty", "frequency_penalty");
        List<String> stop = stopStrings(body.get("stop"), "stop");
        int[] stopIds = stopIds(body.get("stop_token_ids"), "stop_token_ids");
        boolean ignoreEos = boolField(body, "ignore_eos", false);
        boolean skipSpecial = boolField(body, "skip_special_tokens", true);
        boolField(body, "", "spaces_between_special_tokens", true);
        boolean includeStop = boolField(body, "include_stop_str_in_output", false);
        boolean tokenIdsAsTokens = boolField(body, "return_tokens_as_token_ids", false);
        Long seed = optionalLong(body.get("seed"), "seed");
        SamplingParams params = new SamplingParams(
                SamplingParams.Dialect.VLLM,
                maxNew,
                minNew,
                temperature,
                topP,
                topK,
                frequencyPenalty,
                stop,
                stopIds,
                ignoreEos,
                skipSpecial,
                includeStop,
                seed);
        int inputStart = promptLogprobs >= 0 ? 0 : -1;
        String lora = model == null || model.isNull() ? null : model.asText();
        return new Parsed(
                rid,
                prompt,
                params,
                returnLogprob,
                !tokenIdsAsTokens,
                inputStart,
                echo,
                Math.max(topLogprobs, 0),
                promptLogprobs,
                lora,
                false);
    }

    /**
     * vLLM's {@code logprobs} or {@code prompt_logprobs}: null is -1 (none), else a count of top
     * alternatives in [0, {@link TopLogprobs#MAX}]. Refused as vLLM refuses them, naming the field
     * and the limit: a negative count other than -1, and a count above the limit (-1, vLLM's "the
     * whole vocabulary", is above it, as under vLLM's default limit).
     *
     * @param kind what the count is of ({@code sampled} or {@code prompt}), for the message
     */
    private static int logprobCount(ObjectNode body, String field, String kind) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) {
            return -1;
        }
        if (!isIntegral(v)) {
            throw new BadRequestException(field, field + " must be an integer, got " + v);
        }
        long k = v.asLong();
        if (k < -1) {
            throw new BadRequestException(
                    field, field + " must be -1 or a count in [0, " + TopLogprobs.MAX + "], got " + k);
        }
        if (k == -1 || k > TopLogprobs.MAX) {
            throw new BadRequestException(
                    field,
                    field + " = " + k + (k == -1 ? " (the whole vocabulary, " + V + " tokens)" : "")
                            + " exceeds the limit of " + TopLogprobs.MAX + " " + kind
                            + " logprobs per position (vLLM's default max_logprobs)");
        }
        return (int) k;
    }

    /** The seed of a request: its own, or a fresh random one. */
    static long seedOf(SamplingParams params) {
        return params.seed() != null
                ? params.seed()
                : ThreadLocalRandom.current().nextLong();
    }

    private static void unknownFields(ObjectNode node, Set<String> known, String prefix) {
        for (Map.Entry<String, JsonNode> field : node.properties()) {
            String name = field.getKey();
            if (!known.contains(name)) {
                throw new BadRequestException(prefix + name, "unknown field '" + prefix + name + "'");
            }
        }
    }

    private static String rid(JsonNode node, String field) {
        if (node == null || node.isNull()) {
            return UUID.randomUUID().toString().replace("-", "");
        }
        if (node.isArray()) {
            throw new BadRequestException(field, field + " must be a string: batched requests are not supported");
        }
        if (!node.isTextual() || node.asText().isEmpty()) {
            throw new BadRequestException(field, field + " must be a non-empty string");
        }
        return node.asText();
    }

    private static int[] tokenIds(JsonNode node, String field) {
        if (node == null || node.isNull()) {
            throw new BadRequestException(field, field + " is required (a list of token ids)");
        }
        if (!node.isArray()) {
            throw new BadRequestException(field, field + " must be a list of token ids, got " + node.getNodeType());
        }
        if (node.isEmpty()) {
            throw new BadRequestException(field, field + " must not be empty: the model needs at least one token");
        }
        int[] ids = new int[node.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode t = node.get(i);
            if (t.isArray()) {
                throw new BadRequestException(
                        field, field + " must be one flat list: batched requests are not supported");
            }
            ids[i] = tokenId(t, field + "[" + i + "]");
        }
        return ids;
    }

    private static int tokenId(JsonNode t, String field) {
        if (!isIntegral(t)) {
            throw new BadRequestException(field, field + " must be an integer token id, got " + t);
        }
        long id = t.asLong();
        if (id < 0 || id >= V) {
            throw new BadRequestException(field, field + " = " + id + " is outside the vocabulary [0, " + V + ")");
        }
        return (int) id;
    }

    private static boolean isIntegral(JsonNode t) {
        return t.isIntegralNumber() || (t.isNumber() && t.asDouble() == Math.rint(t.asDouble()));
    }

    private static List<String> stopStrings(JsonNode node, String field) {
        List<String> out = new ArrayList<>();
        if (node == null || node.isNull()) {
            return out;
        }
        if (node.isTextual()) {
            if (node.asText().isEmpty()) {
                throw new BadRequestException(field, field + " must not be an empty string");
            }
            out.add(node.asText());
            return out;
        }
        if (!node.isArray()) {
            throw new BadRequestException(field, field + " must be a string or a list of strings");
        }
        for (int i = 0; i < node.size(); i++) {
            JsonNode s = node.get(i);
            if (!s.isTextual() || s.asText().isEmpty()) {
                throw new BadRequestException(field + "[" + i + "]", field + "[" + i + "] must be a non-empty string");
            }
            out.add(s.asText());
        }
        return out;
    }

    private static int[] stopIds(JsonNode node, String field) {
        if (node == null || node.isNull()) {
            return new int[0];
        }
        if (!node.isArray()) {
            throw new BadRequestException(field, field + " must be a list of token ids");
        }
        int[] ids = new int[node.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = tokenId(node.get(i), field + "[" + i + "]");
        }
        return ids;
    }

    private static double topP(ObjectNode node, String field, String name) {
        JsonNode v = node.get(name);
        double topP = v == null || v.isNull() ? 1.0 : number(v, field);
        if (!(topP > 0 && topP <= 1)) {
            throw new BadRequestException(field, field + " must be in (0, 1], got " + topP);
        }
        return topP;
    }

    /** SGLang: −1 disables, else ≥ 1. vLLM additionally takes 0 as disabled. */
    private static int topK(ObjectNode node, String prefix, String name, boolean zeroDisables) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return -1;
        }
        if (!isIntegral(v)) {
            throw new BadRequestException(prefix + name, prefix + name + " must be an integer, got " + v);
        }
        long k = v.asLong();
        if (k == -1 || (zeroDisables && k == 0)) {
            return -1;
        }
        if (k < 1) {
            throw new BadRequestException(
                    prefix + name, prefix + name + " must be -1 (disabled) or at least 1, got " + k);
        }
        return (int) Math.min(k, Integer.MAX_VALUE);
    }

    private static double frequencyPenalty(ObjectNode node, String field, String name) {
        JsonNode v = node.get(name);
        double f = v == null || v.isNull() ? 0.0 : number(v, field);
        if (!(f >= -2 && f <= 2)) {
            throw new BadRequestException(field, field + " must be in [-2, 2], got " + f);
        }
        return f;
    }

    private static double number(JsonNode v, String field) {
        if (!v.isNumber()) {
            throw new BadRequestException(field, field + " must be a number, got " + v);
        }
        double d = v.asDouble();
        if (!Double.isFinite(d)) {
            throw new BadRequestException(field, field + " must be finite, got " + d);
        }
        return d;
    }

    private static double doubleField(ObjectNode node, String prefix, String name, double dflt) {
        JsonNode v = node.get(name);
        return v == null || v.isNull() ? dflt : number(v, prefix + name);
    }

    private static int intField(ObjectNode node, String name, int dflt, int min, int max) {
        return intField(node, "", name, dflt, min, max);
    }

    private static int intField(ObjectNode node, String prefix, String name, int dflt, int min, int max) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return dflt;
        }
        String field = prefix + name;
        if (!isIntegral(v)) {
            throw new BadRequestException(field, field + " must be an integer, got " + v);
        }
        long x = v.asLong();
        if (x < min || x > max) {
            throw new BadRequestException(
                    field,
                    field + " must be in [" + min + ", " + (max == Integer.MAX_VALUE ? "2^31-1" : max) + "], got " + x);
        }
        return (int) x;
    }

    private static boolean boolField(ObjectNode node, String name, boolean dflt) {
        return boolField(node, "", name, dflt);
    }

    private static boolean boolField(ObjectNode node, String prefix, String name, boolean dflt) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isBoolean()) {
            throw new BadRequestException(prefix + name, prefix + name + " must be true or false, got " + v);
        }
        return v.asBoolean();
    }

    private static Long optionalLong(JsonNode v, String field) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (!isIntegral(v)) {
            throw new BadRequestException(field, field + " must be an integer, got " + v);
        }
        return v.asLong();
    }

    private static void neutral(ObjectNode node, String prefix, String name, boolean neutralValue) {
        boolean value = boolField(node, prefix, name, neutralValue);
        if (value != neutralValue) {
            throw new BadRequestException(
                    prefix + name, prefix + name + " = " + value + " is not supported by the built-in model server");
        }
    }

    private static void neutralNumber(ObjectNode node, String prefix, String name, double neutralValue) {
        double value = doubleField(node, prefix, name, neutralValue);
        if (value != neutralValue) {
            throw new BadRequestException(
                    prefix + name,
                    prefix + name + " = " + value + " is not supported by the built-in model server (only "
                            + neutralValue + ")");
        }
    }

    private static void mustBeAbsent(ObjectNode node, String prefix, String name, String why) {
        JsonNode v = node.get(name);
        if (v != null && !v.isNull()) {
            throw new BadRequestException(prefix + name, prefix + name + ": " + why);
        }
    }
}
