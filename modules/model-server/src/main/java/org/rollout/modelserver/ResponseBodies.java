package org.rollout.modelserver;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.rollout.core.ByteLevelTokenizer;

/** Builds the JSON bodies of generation responses, and breaks them on purpose for fault injection. */
final class ResponseBodies {
    private ResponseBodies() {}

    /** SGLang's {@code /generate} response. */
    static ObjectNode sglang(GenerationResult r, GenerateRequests.Parsed request) {
        ObjectNode root = Json.object();
        root.put("text", StopStrings.responseText(r.outputIds(), r.finishReason(), request.params()));
        ArrayNode ids = root.putArray("output_ids");
        for (int id : r.outputIds()) {
            ids.add(id);
        }
        ObjectNode meta = root.putObject("meta_info");
        meta.put("id", r.rid());
        meta.set("finish_reason", finishReason(r.finishReason()));
        meta.put("prompt_tokens", r.promptTokens());
        meta.put("completion_tokens", r.outputIds().length);
        meta.put("cached_tokens", r.cachedTokens());
        meta.put("weight_version", Integer.toString(r.weightVersion()));
        meta.put("e2e_latency", r.e2eNanos() / 1e9);
        if (request.returnLogprob()) {
            ArrayNode lps = meta.putArray("output_token_logprobs");
            for (int i = 0; i < r.outputIds().length; i++) {
                ArrayNode entry = lps.addArray();
                entry.add(r.logprobs()[i]);
                entry.add(r.outputIds()[i]);
                if (request.textInLogprobs()) {
                    entry.add(tokenText(r.outputIds()[i]));
                } else {
                    entry.addNull();
                }
            }
            if (r.inputLogprobs() != null) {
                // SGLang's input_token_logprobs: one entry per prompt position from logprob_start_len
                // on, the first position of the prompt (nothing to predict it from) with a null logprob.
                ArrayNode input = meta.putArray("input_token_logprobs");
                int[] prompt = request.prompt();
                int first = Math.max(1, request.inputLogprobStart());
                for (int pos = request.inputLogprobStart(); pos < prompt.length; pos++) {
                    ArrayNode entry = input.addArray();
                    if (pos < first) {
                        entry.addNull();
                    } else {
                        entry.add(r.inputLogprobs()[pos - first]);
                    }
                    entry.add(prompt[pos]);
                    if (request.textInLogprobs()) {
                        entry.add(tokenText(prompt[pos]));
                    } else {
                        entry.addNull();
                    }
                }
            }
        }
        return root;
    }

    static ObjectNode finishReason(FinishReason f) {
        ObjectNode o = Json.object();
        o.put("type", f.type());
        switch (f) {
            case FinishReason.MatchedToken m -> o.put("matched", m.token());
            case FinishReason.MatchedString m -> o.put("matched", m.matched());
            case FinishReason.Length l -> o.put("length", l.length());
            case FinishReason.Abort a -> o.put("message", a.message());
        }
        return o;
    }

    /** vLLM's {@code /v1/completions} response (OpenAI completion shape). */
    static ObjectNode vllm(GenerationResult r, GenerateRequests.Parsed request, String model) {
        ObjectNode root = Json.object();
        root.put("id", "cmpl-" + r.rid());
        root.put("object", "text_completion");
        root.put("created", System.currentTimeMillis() / 1000);
        root.put("model", model);
        ObjectNode choice = root.putArray("choices").addObject();
        choice.put("index", 0);
        String completion = StopStrings.responseText(r.outputIds(), r.finishReason(), request.params());
        int[] prompt = request.prompt();
        // echo: the prompt leads the text and the logprobs, its first token with a null logprob
        // (vLLM's echo; with max_tokens = 0 nothing else follows).
        choice.put(
                "text", request.echo() ? ByteLevelTokenizer.INSTANCE.decode(prompt, false) + completion : completion);
        if (request.returnLogprob()) {
            // vLLM's completion logprobs: per token its text offset, its string, its logprob and a
            // {token: logprob} map of the chosen token then its top `logprobs` alternatives.
            ObjectNode logprobs = choice.putObject("logprobs");
            ArrayNode offsets = logprobs.putArray("text_offset");
            ArrayNode values = logprobs.putArray("token_logprobs");
            ArrayNode tokens = logprobs.putArray("tokens");
            ArrayNode top = logprobs.putArray("top_logprobs");
            int offset = 0;
            if (request.echo()) {
                for (int pos = 0; pos < prompt.length; pos++) {
                    String token = tokenString(prompt[pos], request);
                    offsets.add(offset);
                    offset += token.codePointCount(0, token.length());
                    tokens.add(token);
                    if (pos == 0 || r.inputLogprobs() == null) {
                        // The first token has nothing to be predicted from; a request aborted before
                        // its prefill has no prompt logprobs at all.
                        values.addNull();
                        top.addNull();
                    } else {
                        values.add(r.inputLogprobs()[pos - 1]);
                        topLogprobs(top.addObject(), r.inputAlternatives()[pos - 1], request);
                    }
                }
            }
            for (int i = 0; i < r.outputIds().length; i++) {
                int id = r.outputIds()[i];
                String token = tokenString(id, request);
                offsets.add(offset);
                offset += token.codePointCount(0, token.length());
                tokens.add(token);
                values.add(r.logprobs()[i]);
                if (r.outputAlternatives() == null) {
                    top.addObject().put(token, clamp(r.logprobs()[i]));
                } else {
                    topLogprobs(top.addObject(), r.outputAlternatives()[i], request);
                }
            }
        } else {
            choice.putNull("logprobs");
        }
        if (request.promptLogprobs() >= 0 && r.inputAlternatives() != null) {
            // vLLM's prompt_logprobs: null for the first position, then per position
            // {"<id>": {"logprob", "rank", "decoded_token"}}, the prompt's token first, then its alternatives.
            ArrayNode list = choice.putArray("prompt_logprobs");
            list.addNull();
            for (int pos = 1; pos < prompt.length; pos++) {
                TopLogprobs.Position at = r.inputAlternatives()[pos - 1];
                ObjectNode entries = list.addObject();
                for (int i = 0; i < at.size(); i++) {
                    ObjectNode entry = entries.putObject(Integer.toString(at.id(i)));
                    entry.put("logprob", clamp(at.logprob(i)));
                    entry.put("rank", at.rank(i));
                    entry.put("decoded_token", tokenText(at.id(i)));
                }
            }
        } else {
            // Not asked for, or the request was aborted before its prefill scored the prompt.
            choice.putNull("prompt_logprobs");
        }
        choice.put("finish_reason", r.finishReason().type());
        switch (r.finishReason()) {
            case FinishReason.MatchedToken m
            when m.token() != SamplingParams.EOS -> choice.put("stop_reason", m.token());
            case FinishReason.MatchedString m -> choice.put("stop_reason", m.matched());
            default -> choice.putNull("stop_reason");
        }
        ObjectNode usage = root.putObject("usage");
        usage.put("prompt_tokens", r.promptTokens());
        usage.put("completion_tokens", r.outputIds().length);
        usage.put("total_tokens", r.promptTokens() + r.outputIds().length);
        // vLLM fills this in with --enable-prompt-tokens-details; always here, so clients can see the hits.
        usage.putObject("prompt_tokens_details").put("cached_tokens", r.cachedTokens());
        return root;
    }

    /**
     * One {@code top_logprobs} map: the first {@code logprobs + 1} entries of {@code at} (the chosen
     * token, then the alternatives by rank), keyed as {@code tokens} are. An echoed prompt position
     * carries its {@code prompt_logprobs} entries, cut to that length as vLLM cuts them.
     */
    private static void topLogprobs(ObjectNode into, TopLogprobs.Position at, GenerateRequests.Parsed request) {
        int n = Math.min(at.size(), request.topLogprobs() + 1);
        for (int i = 0; i < n; i++) {
            into.put(tokenString(at.id(i), request), clamp(at.logprob(i)));
        }
    }

    /** A token as {@code logprobs.tokens} names it: {@code token_id:N} or its text. */
    private static String tokenString(int id, GenerateRequests.Parsed request) {
        return request.textInLogprobs() ? tokenText(id) : "token_id:" + id;
    }

    /** vLLM reports an impossible token's logprob (−∞, not JSON) as −9999. */
    private static double clamp(double logprob) {
        return Math.max(logprob, -9999.0);
    }

    private static String tokenText(int id) {
        return ByteLevelTokenizer.INSTANCE.decode(new int[] {id}, false);
    }

    /** The body broken the {@code kind} way; {@code sglang} selects which shape to break. */
    static byte[] malformed(ObjectNode body, FaultPlan.MalformedKind kind, boolean sglang) {
        switch (kind) {
            case NOT_JSON -> {
                return "<html><body>upstream hiccup: this is not JSON</body></html>".getBytes(StandardCharsets.UTF_8);
            }
            case TRUNCATED_JSON -> {
                byte[] whole = Json.bytes(body);
                return Arrays.copyOf(whole, whole.length / 2);
            }
            case COUNT_MISMATCH -> {
                ArrayNode list = sglang
                        ? (ArrayNode) body.path("meta_info").get("output_token_logprobs")
                        : (ArrayNode)
                                body.path("choices").path(0).path("logprobs").get("token_logprobs");
                if (list == null) {
                    // The client asked for no logprobs: the counts that can disagree are the ids and completion_tokens.
                    if (sglang) {
                        ObjectNode meta = (ObjectNode) body.get("meta_info");
                        meta.put(
                                "completion_tokens",
                                meta.get("completion_tokens").asInt() + 1);
                    } else {
                        ObjectNode usage = (ObjectNode) body.get("usage");
                        usage.put(
                                "completion_tokens",
                                usage.get("completion_tokens").asInt() + 1);
                    }
                } else if (list.isEmpty()) {
                    if (sglang) {
                        list.addArray().add(-0.5).add(0).addNull();
                    } else {
                        list.add(-0.5);
                    }
                } else {
                    list.remove(list.size() - 1);
                }
            }
            case UNKNOWN_FINISH_REASON -> {
                if (sglang) {
                    ((ObjectNode) body.path("meta_info").get("finish_reason")).put("type", "cancelled");
                } else {
                    ((ObjectNode) body.path("choices").get(0)).put("finish_reason", "cancelled");
                }
            }
            case MISSING_META_INFO -> {
                if (sglang) {
                    body.remove("meta_info");
                } else {
                    ((ObjectNode) body.path("choices").get(0)).remove("logprobs");
                }
            }
        }
        return Json.bytes(body);
    }
}
