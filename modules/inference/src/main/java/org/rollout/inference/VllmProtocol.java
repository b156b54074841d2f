package org.rollout.inference;

import static org.rollout.inference.WireJson.isNumber;
import static org.rollout.inference.WireJson.next;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.rollout.api.GenerationConfig;
import org.rollout.api.StopReason;
import org.rollout.config.Backend;
import org.rollout.config.ServerAddress;

/**
 * AReaL's vLLM server extension (semantics §9.2, docs/protocol.md "vLLM"): {@code POST /v1/completions} with a
 * flat body and token ids as the prompt, answered with {@code choices[0].finish_reason},
 * {@code choices[0].logprobs.tokens} ({@code "token_id:52"}) and
 * {@code choices[0].logprobs.token_logprobs}.
 *
 * <p>Parsing rules, beyond the shape checks: an {@code abort} with null or missing
 * {@code logprobs} is zero tokens; {@code tokens} and {@code token_logprobs} must have equal
 * lengths; a logprob of exactly −9999.0 is malformed (vLLM writes it both for a missing and for a
 * clamped logprob). Only the first choice is read ({@code n} is always 1).
 *
 * <p>vLLM has no per-request abort: {@link #abortCall} is empty and the engine cancels a request by
 * closing its connection, which vLLM treats as an abort. The weight update carries only
 * {@code model_path} (the extension pauses, reloads and resumes by itself).
 *
 * <p>Stateless and thread-safe.
 */
public final class VllmProtocol implements ServerProtocol {
    /** Driven through AReaL's server extension ({@code /areal_*} control routes). */
    public static final VllmProtocol INSTANCE = new VllmProtocol(false);

    /**
     * Driven through upstream vLLM's own control API (its dev-mode RLHF routes, {@code
     * VLLM_SERVER_DEV_MODE=1}): {@code POST /pause?mode=abort}, {@code POST /collective_rpc
     * {"method": "reload_weights", "kwargs": {"weights_path": …}}}, {@code POST /resume}.
     */
    public static final VllmProtocol UPSTREAM = new VllmProtocol(true);

    private final boolean upstream;

    private static final String TOKEN_PREFIX = "token_id:";
    private static final String TOKENS = "choices[0].logprobs.tokens";
    private static final String LOGPROBS = "choices[0].logprobs.token_logprobs";

    private VllmProtocol(boolean upstream) {
        this.upstream = upstream;
    }

    /** True for {@link #UPSTREAM}. */
    public boolean upstream() {
        return upstream;
    }

    @Override
    public Backend backend() {
        return Backend.VLLM;
    }

    @Override
    public String generatePath() {
        return "/v1/completions";
    }

    /** vLLM forwards every parameter, {@code use_beam_search} included. */
    @Override
    public void checkSupported(GenerationConfig gconfig) {
        // Nothing to reject: AReaL's vLLM backend forwards use_beam_search to the server.
    }

    @Override
    public byte[] generateBody(
            String rid,
            int[] prompt,
            int[] generated,
            int generatedCount,
            GenerationConfig c,
            int maxNewTokens,
            String lora) {
        ByteArrayOutputStream out = WireJson.bufferFor(prompt.length + generatedCount);
        try (JsonGenerator g = WireJson.generator(out)) {
            g.writeStartObject();
            g.writeFieldName("prompt");
            WireJson.writeIds(g, prompt, generated, generatedCount);
            WireJson.writeCommonSampling(g, c, "max_tokens", maxNewTokens);
            g.writeBooleanField("return_tokens_as_token_ids", true);
            g.writeNumberField("logprobs", 0);
            g.writeBooleanField("use_beam_search", c.useBeamSearch());
            g.writeBooleanField("stream", false);
            if (lora != null) {
                g.writeStringField("model", lora);
            }
            if (!c.stop().isEmpty()) {
                WireJson.writeStop(g, c.stop());
            }
            if (c.seed() != null) {
                g.writeNumberField("seed", c.seed());
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException("writing to memory cannot fail", e);
        }
        return out.toByteArray();
    }

    @Override
    public GeneratedSegment parseGenerate(byte[] body, ServerAddress server, String rid, int maxNewTokens) {
        Parse r = new Parse(body, server, rid, maxNewTokens);
        try (JsonParser p = WireJson.FACTORY.createParser(body)) {
            r.read(p);
            if (!WireJson.atEnd(p)) {
                throw r.malformed("body", "has content after the JSON object");
            }
        } catch (JsonProcessingException e) {
            throw r.malformed("body", "is not valid JSON (" + e.getOriginalMessage() + ")");
        } catch (IOException e) {
            throw new UncheckedIOException("reading from memory cannot fail", e);
        }
        return r.result();
    }

    @Override
    public List<ControlCall> pauseCalls() {
        return List.of(
                upstream
                        ? ControlCall.post("/pause?mode=abort", "{}")
                        : ControlCall.post("/areal_pause_generation", "{}"));
    }

    /**
     * False: AReaL's {@code /areal_update_weights} pauses and resumes the engine around the load, but
     * semantics §9.2 does not say that it aborts the requests in flight (only {@code /areal_pause_generation}
     * clears the cache), so the update keeps its pause before the load.
     */
    @Override
    public boolean updateHoldsGeneration() {
        return false;
    }

    @Override
    public ControlCall continueCall() {
        return upstream ? ControlCall.post("/resume", "{}") : ControlCall.post("/areal_continue_generation", "{}");
    }

    @Override
    public Optional<ControlCall> abortCall(String rid) {
        return Optional.empty();
    }

    @Override
    public ControlCall updateWeightsCall(Path modelPath, int version) {
        if (upstream) {
            return ControlCall.post(
                    "/collective_rpc",
                    "{\"method\":\"reload_weights\",\"kwargs\":" + WireJson.object("weights_path", modelPath.toString())
                            + "}");
        }
        return ControlCall.post("/areal_update_weights", WireJson.object("model_path", modelPath.toString()));
    }

    @Override
    public String toString() {
        return "vllm";
    }

    /** The state of one parse; not shared. */
    private static final class Parse {
        private final byte[] body;
        private final ServerAddress server;
        private final String rid;
        private final int maxNewTokens;

        private boolean choicesSeen;
        private boolean firstChoiceSeen;
        private String finishReason;
        private boolean logprobsSeen;
        private boolean tokensSeen;
        private boolean logprobListSeen;
        private int[] tokens = new int[0];
        private int tokenCount;
        private float[] logprobs = new float[0];
        private int logprobCount;
        private int cachedTokens = -1;

        Parse(byte[] body, ServerAddress server, String rid, int maxNewTokens) {
            this.body = body;
            this.server = server;
            this.rid = rid;
            this.maxNewTokens = maxNewTokens;
        }

        MalformedResponseException malformed(String field, String problem) {
            return new MalformedResponseException(server, rid, field, problem, body);
        }

        void read(JsonParser p) throws IOException {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw malformed("body", "is not a JSON object");
            }
            while (next(p) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = next(p);
                if (name.equals("choices")) {
                    if (t != JsonToken.START_ARRAY) {
                        throw malformed("choices", "is not an array");
                    }
                    choicesSeen = true;
                    JsonToken c;
                    while ((c = next(p)) != JsonToken.END_ARRAY) {
                        if (firstChoiceSeen) {
                            p.skipChildren();
                        } else if (c != JsonToken.START_OBJECT) {
                            throw malformed("choices[0]", "is not an object");
                        } else {
                            firstChoiceSeen = true;
                            readChoice(p);
                        }
                    }
                } else if (name.equals("usage") && t == JsonToken.START_OBJECT) {
                    readUsage(p);
                } else {
                    p.skipChildren();
                }
            }
        }

        /** {@code usage.prompt_tokens_details.cached_tokens}, when the server reports it; the rest is skipped. */
        private void readUsage(JsonParser p) throws IOException {
            while (next(p) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = next(p);
                if (name.equals("prompt_tokens_details") && t == JsonToken.START_OBJECT) {
                    while (next(p) == JsonToken.FIELD_NAME) {
                        String detail = p.currentName();
                        JsonToken d = next(p);
                        if (detail.equals("cached_tokens")) {
                            cachedTokens = WireJson.optionalCount(p, d);
                        } else {
                            p.skipChildren();
                        }
                    }
                } else {
                    p.skipChildren();
                }
            }
        }

        private void readChoice(JsonParser p) throws IOException {
            while (next(p) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = next(p);
                switch (name) {
                    case "finish_reason" -> {
                        if (t == JsonToken.VALUE_STRING) {
                            finishReason = p.getText();
                        } else if (t != JsonToken.VALUE_NULL) {
                            throw malformed("choices[0].finish_reason", "is not a string");
                        }
                    }
                    case "logprobs" -> {
                        if (t == JsonToken.START_OBJECT) {
                            logprobsSeen = true;
                            readLogprobs(p);
                        } else if (t != JsonToken.VALUE_NULL) {
                            throw malformed("choices[0].logprobs", "is not an object");
                        }
                    }
                    default -> p.skipChildren();
                }
            }
        }

        private void readLogprobs(JsonParser p) throws IOException {
            while (next(p) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = next(p);
                if (name.equals("tokens") && t == JsonToken.START_ARRAY) {
                    tokensSeen = true;
                    readTokens(p);
                } else if (name.equals("token_logprobs") && t == JsonToken.START_ARRAY) {
                    logprobListSeen = true;
                    readLogprobValues(p);
                } else if (name.equals("tokens") || name.equals("token_logprobs")) {
                    if (t != JsonToken.VALUE_NULL) {
                        throw malformed("choices[0].logprobs." + name, "is not an array");
                    }
                } else {
                    p.skipChildren();
                }
            }
        }

        private void readTokens(JsonParser p) throws IOException {
            tokens = new int[WireJson.initialCapacity(maxNewTokens)];
            JsonToken t;
            while ((t = next(p)) != JsonToken.END_ARRAY) {
                String field = TOKENS + "[" + tokenCount + "]";
                if (t != JsonToken.VALUE_STRING) {
                    throw malformed(field, "is not a string \"token_id:<n>\"");
                }
                String text = p.getText();
                int token = parseToken(text);
                if (token < 0) {
                    throw malformed(
                            field, "is \"" + WireJson.clip(text) + "\", not \"token_id:<n>\" with a token id >= 0");
                }
                tokens = WireJson.grow(tokens, tokenCount + 1);
                tokens[tokenCount++] = token;
            }
        }

        private void readLogprobValues(JsonParser p) throws IOException {
            logprobs = new float[WireJson.initialCapacity(maxNewTokens)];
            JsonToken t;
            while ((t = next(p)) != JsonToken.END_ARRAY) {
                String field = LOGPROBS + "[" + logprobCount + "]";
                if (!isNumber(t)) {
                    throw malformed(field, "is not a number");
                }
                double v = p.getDoubleValue();
                if (v == SglangProtocol.AMBIGUOUS_LOGPROB) {
                    throw malformed(field, "is -9999.0, which means a missing or clamped logprob");
                }
                logprobs = WireJson.grow(logprobs, logprobCount + 1);
                logprobs[logprobCount++] = (float) v;
            }
        }

        /** The id in {@code token_id:<n>}, or -1 when the text is not of that form. */
        private static int parseToken(String text) {
            if (!text.startsWith(TOKEN_PREFIX) || text.length() == TOKEN_PREFIX.length()) {
                return -1;
            }
            long v = 0;
            for (int i = TOKEN_PREFIX.length(); i < text.length(); i++) {
                char ch = text.charAt(i);
                if (ch < '0' || ch > '9') {
                    return -1;
                }
                v = v * 10 + (ch - '0');
                if (v > Integer.MAX_VALUE) {
                    return -1;
                }
            }
            return (int) v;
        }

        GeneratedSegment result() {
            if (!choicesSeen) {
                throw malformed("choices", "is missing");
            }
            if (!firstChoiceSeen) {
                throw malformed("choices", "is empty");
            }
            if (finishReason == null) {
                throw malformed("choices[0].finish_reason", "is missing or null");
            }
            StopReason reason;
            try {
                reason = StopReason.fromWire(finishReason);
            } catch (IllegalArgumentException e) {
                throw malformed(
                        "choices[0].finish_reason",
                        "is an unknown finish reason \"" + WireJson.clip(finishReason) + "\" (known: "
                                + WireJson.KNOWN_REASONS + ")");
            }
            if (!logprobsSeen) {
                if (reason == StopReason.ABORT) {
                    return new GeneratedSegment(new int[0], new float[0], 0, reason, -1, cachedTokens);
                }
                throw malformed("choices[0].logprobs", "is missing or null (logprobs=0 was requested)");
            }
            if (!tokensSeen) {
                throw malformed(TOKENS, "is missing");
            }
            if (!logprobListSeen) {
                throw malformed(LOGPROBS, "is missing");
            }
            if (tokenCount != logprobCount) {
                throw malformed(LOGPROBS, "has " + logprobCount + " entries but " + TOKENS + " has " + tokenCount);
            }
            if (tokenCount > maxNewTokens) {
                throw malformed(TOKENS, "has " + tokenCount + " tokens, more than max_tokens " + maxNewTokens);
            }
            return new GeneratedSegment(tokens, logprobs, tokenCount, reason, -1, cachedTokens);
        }
    }
}
