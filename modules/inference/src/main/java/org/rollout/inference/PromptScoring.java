package org.rollout.inference;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.OptionalInt;
import org.rollout.api.GenerationConfig;
import org.rollout.config.Backend;
import org.rollout.config.ServerAddress;

/**
 * The scoring call of {@link RemoteInferenceEngine#score} (docs/protocol.md, "Scoring"): the
 * logprobs of a sequence's own tokens, computed in one prefill, nothing generated.
 *
 * <ul>
 *   <li>SGLang: {@code POST /generate} with {@code sampling_params.max_new_tokens = 0}, {@code
 *       return_logprob: true} and {@code logprob_start_len: 0}; the answer's {@code
 *       meta_info.input_token_logprobs} holds {@code [logprob, token_id, text]} per position, the
 *       first with a null logprob.
 *   <li>vLLM: {@code POST /v1/completions} with {@code max_tokens: 0}, {@code echo: true} (vLLM's
 *       echo without generation), {@code logprobs: 0} and {@code prompt_logprobs: 0}; the answer's
 *       {@code choices[0].prompt_logprobs} holds null and then one {@code {"<token id>": {"logprob":
 *       …}}} per position; the sent token's entry is read, any other (a server's top alternatives,
 *       as vLLM lists them for {@code prompt_logprobs} above 0) is ignored.
 * </ul>
 *
 * <p>Parsing is strict as for generation: every position is present, names the token sent, and
 * carries a finite logprob (not −9999); otherwise a {@link MalformedResponseException}. Stateless.
 */
final class PromptScoring {
    private static final ObjectMapper JSON = new ObjectMapper();

    private PromptScoring() {}

    /** The request body scoring {@code tokens} at {@code gconfig}'s effective temperature. */
    static byte[] body(Backend backend, String rid, int[] tokens, GenerationConfig gconfig) {
        ObjectNode o = JSON.createObjectNode();
        ArrayNode ids;
        switch (backend) {
            case SGLANG -> {
                o.put("rid", rid);
                ids = o.putArray("input_ids");
                ObjectNode sp = o.putObject("sampling_params");
                sp.put("max_new_tokens", 0);
                sp.put("temperature", gconfig.effectiveTemperature());
                o.put("return_logprob", true);
                o.put("logprob_start_len", 0);
                o.put("stream", false);
            }
            case VLLM -> {
                ids = o.putArray("prompt");
                o.put("max_tokens", 0);
                o.put("temperature", gconfig.effectiveTemperature());
                o.put("echo", true);
                o.put("logprobs", 0);
                o.put("prompt_logprobs", 0);
                o.put("return_tokens_as_token_ids", true);
                o.put("stream", false);
            }
            default -> throw new IllegalStateException("no scoring call for " + backend);
        }
        for (int t : tokens) {
            ids.add(t);
        }
        try {
            return JSON.writeValueAsBytes(o);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("writing a tree to memory cannot fail", e);
        }
    }

    /** A parsed scoring answer: {@code tokens.length − 1} logprobs and the server's weight version, if it says. */
    record Scores(float[] logprobs, OptionalInt serverVersion) {}

    static Scores parse(Backend backend, byte[] body, ServerAddress server, String rid, int[] tokens) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            throw new MalformedResponseException(server, rid, "body", "is not valid JSON", body);
        }
        if (root == null || !root.isObject()) {
            throw new MalformedResponseException(server, rid, "body", "is not a JSON object", body);
        }
        return switch (backend) {
            case SGLANG -> sglang(root, body, server, rid, tokens);
            case VLLM -> vllm(root, body, server, rid, tokens);
        };
    }

    private static Scores sglang(JsonNode root, byte[] body, ServerAddress server, String rid, int[] tokens) {
        String field = "meta_info.input_token_logprobs";
        JsonNode list = root.path("meta_info").get("input_token_logprobs");
        if (list == null || !list.isArray()) {
            throw new MalformedResponseException(server, rid, field, "is missing or not a list", body);
        }
        if (list.size() != tokens.length) {
            throw new MalformedResponseException(
                    server, rid, field, "has " + list.size() + " entries for " + tokens.length + " tokens", body);
        }
        float[] out = new float[tokens.length - 1];
        for (int i = 0; i < tokens.length; i++) {
            JsonNode e = list.get(i);
            String at = field + "[" + i + "]";
            if (!e.isArray() || e.size() < 2 || !e.get(1).isIntegralNumber()) {
                throw new MalformedResponseException(server, rid, at, "is not [logprob, token_id, …]", body);
            }
            if (e.get(1).asLong() != tokens[i]) {
                throw new MalformedResponseException(
                        server, rid, at + "[1]", "is token " + e.get(1) + ", but " + tokens[i] + " was sent", body);
            }
            if (i > 0) {
                out[i - 1] = logprob(e.get(0), at + "[0]", server, rid, body);
            }
        }
        JsonNode v = root.path("meta_info").get("weight_version");
        OptionalInt version = OptionalInt.empty();
        if (v != null && v.isTextual() && v.asText().matches("\\d{1,9}")) {
            version = OptionalInt.of(Integer.parseInt(v.asText()));
        }
        return new Scores(out, version);
    }

    private static Scores vllm(JsonNode root, byte[] body, ServerAddress server, String rid, int[] tokens) {
        String field = "choices[0].prompt_logprobs";
        JsonNode list = root.path("choices").path(0).get("prompt_logprobs");
        if (list == null || !list.isArray()) {
            throw new MalformedResponseException(server, rid, field, "is missing or not a list", body);
        }
        if (list.size() != tokens.length) {
            throw new MalformedResponseException(
                    server, rid, field, "has " + list.size() + " entries for " + tokens.length + " tokens", body);
        }
        float[] out = new float[tokens.length - 1];
        for (int i = 1; i < tokens.length; i++) {
            String at = field + "[" + i + "]";
            JsonNode entry = list.get(i);
            JsonNode chosen = entry == null || !entry.isObject() ? null : entry.get(Integer.toString(tokens[i]));
            if (chosen == null) {
                throw new MalformedResponseException(
                        server, rid, at, "has no entry for the token sent (" + tokens[i] + ")", body);
            }
            JsonNode lp = chosen.isObject() ? chosen.get("logprob") : chosen;
            out[i - 1] = logprob(lp, at + "." + tokens[i] + ".logprob", server, rid, body);
        }
        return new Scores(out, OptionalInt.empty());
    }

    private static float logprob(JsonNode n, String at, ServerAddress server, String rid, byte[] body) {
        if (n == null || !n.isNumber()) {
            throw new MalformedResponseException(server, rid, at, "is not a number", body);
        }
        double d = n.asDouble();
        if (d == SglangProtocol.AMBIGUOUS_LOGPROB || Double.isNaN(d) || d > 1e-6) {
            throw new MalformedResponseException(server, rid, at, "is " + d + ", not a log-probability", body);
        }
        return (float) d;
    }
}
