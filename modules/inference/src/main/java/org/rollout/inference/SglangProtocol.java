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
 * SGLang's native protocol (semantics §9.1, docs/protocol.md "SGLang"): {@code POST /generate} with
 * {@code input_ids} and {@code sampling_params}, answered with {@code meta_info.finish_reason} and
 * {@code meta_info.output_token_logprobs} ({@code [logprob, token_id, text]} per token).
 *
 * <p>Parsing rules, beyond the shape checks:
 *
 * <ul>
 *   <li>{@code finish_reason.type = "abort"} with a message starting "Abort before prefill" is zero
 *       tokens, whatever else the body carries (as AReaL);
 *   <li>an {@code abort} without {@code output_token_logprobs} is zero tokens; any other finish
 *       reason without them is malformed (the engine always asks for logprobs);
 *   <li>when {@code meta_info.completion_tokens} is present, it must equal the number of logprob
 *       entries (docs/protocol.md: a response whose counts differ is malformed), and so must the
 *       length of {@code output_ids} when that is present;
 *   <li>a logprob of exactly −9999.0 is malformed (ambiguous: missing or clamped).
 * </ul>
 *
 * <p>Stateless and thread-safe.
 */
public final class SglangProtocol implements ServerProtocol {
    public static final SglangProtocol INSTANCE = new SglangProtocol();

    static final double AMBIGUOUS_LOGPROB = -9999.0;
    private static final String ABORT_BEFORE_PREFILL = "Abort before prefill";
    private static final String ENTRIES = "meta_info.output_token_logprobs";

    private SglangProtocol() {}

    @Override
    public Backend backend() {
        return Backend.SGLANG;
    }

    @Override
    public String generatePath() {
        return "/generate";
    }

    @Override
    public void checkSupported(GenerationConfig gconfig) {
        if (gconfig.useBeamSearch()) {
            throw new IllegalArgumentException(
                    "use_beam_search is not supported by the sglang backend; set use_beam_search=false");
        }
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
            g.writeStringField("rid", rid);
            g.writeFieldName("input_ids");
            WireJson.writeIds(g, prompt, generated, generatedCount);
            g.writeObjectFieldStart("sampling_params");
            WireJson.writeCommonSampling(g, c, "max_new_tokens", maxNewTokens);
            if (!c.stop().isEmpty()) {
                WireJson.writeStop(g, c.stop());
            }
            if (c.seed() != null) {
                g.writeNumberField("sampling_seed", c.seed());
            }
            g.writeEndObject();
            g.writeBooleanField("return_logprob", true);
            g.writeBooleanField("stream", false);
            if (lora != null) {
                g.writeStringField("lora_path", lora);
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
                ControlCall.post("/pause_generation", "{}"),
                ControlCall.post("/pause_generation", WireJson.object("mode", "in_place")));
    }

    /**
     * True: {@code update_weights_from_disk} with {@code "abort_all_requests": true} (as {@link
     * #updateWeightsCall} sends it) first aborts every request in flight — they return their partial
     * output with {@code finish_reason: abort}, exactly as an abort-mode pause makes them — and then
     * loads under the tokenizer manager's model-update writer lock. Every generate request holds that
     * lock's reader side for its whole run and the lock admits no new reader while a writer waits, so
     * a request arriving during the load waits and then runs wholly on the new weights; a request
     * that slipped in before the abort reached the scheduler finishes wholly on the old weights
     * before the load starts. The separate pause ({@code {}} then {@code {"mode":"in_place"}}) adds
     * nothing to a disk update: its in-place flag matters for memory release and colocated transfer,
     * which this update does not do. The built-in model server does the same: the abort and the swap
     * are one scheduler command, between two decode steps.
     */
    @Override
    public boolean updateHoldsGeneration() {
        return true;
    }

    @Override
    public ControlCall continueCall() {
        return ControlCall.post("/continue_generation", "{}");
    }

    @Override
    public Optional<ControlCall> abortCall(String rid) {
        return Optional.of(ControlCall.post("/abort_request", WireJson.object("rid", rid)));
    }

    @Override
    public ControlCall updateWeightsCall(Path modelPath, int version) {
        return ControlCall.post(
                "/update_weights_from_disk",
                WireJson.object(
                        "model_path",
                        modelPath.toString(),
                        "abort_all_requests",
                        true,
                        "weight_version",
                        Integer.toString(version)));
    }

    @Override
    public String toString() {
        return "sglang";
    }

    /** The state of one parse; not shared. */
    private static final class Parse {
        private final byte[] body;
        private final ServerAddress server;
        private final String rid;
        private final int maxNewTokens;

        private boolean metaSeen;
        private boolean finishSeen;
        private String finishType;
        private String finishMessage = "";
        private boolean entriesSeen;
        private int[] tokens;
        private float[] logprobs;
        private int count;
        private int outputIds = -1;
        private int completionTokens = -1;
        private int serverVersion = -1;
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
                if (name.equals("meta_info")) {
                    if (t != JsonToken.START_OBJECT) {
                        throw malformed("meta_info", "is not an object");
                    }
                    metaSeen = true;
                    readMeta(p);
                } else if (name.equals("output_ids") && t == JsonToken.START_ARRAY) {
                    outputIds = 0;
                    while (next(p) != JsonToken.END_ARRAY) {
                        p.skipChildren();
                        outputIds++;
                    }
                } else {
                    p.skipChildren();
                }
            }
        }

        private void readMeta(JsonParser p) throws IOException {
            while (next(p) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = next(p);
                switch (name) {
                    case "finish_reason" -> readFinishReason(p, t);
                    case "completion_tokens" -> readCompletionTokens(p, t);
                    case "weight_version" -> readWeightVersion(p, t);
                    case "cached_tokens" -> cachedTokens = WireJson.optionalCount(p, t);
                    case "output_token_logprobs" -> {
                        if (t == JsonToken.START_ARRAY) {
                            entriesSeen = true;
                            readEntries(p);
                        } else if (t != JsonToken.VALUE_NULL) {
                            throw malformed(ENTRIES, "is not an array");
                        }
                    }
                    default -> p.skipChildren();
                }
            }
        }

        /**
         * {@code meta_info.weight_version}: kept when it is a non-negative integer (as a number or a
         * string, as SGLang sends it); anything else (SGLang's {@code "default"} before any update)
         * counts as absent, and the engine's pinned version labels the segment.
         */
        private void readWeightVersion(JsonParser p, JsonToken t) throws IOException {
            String text = switch (t) {
                case VALUE_STRING, VALUE_NUMBER_INT -> p.getText();
                default -> {
                    p.skipChildren();
                    yield null;
                }
            };
            if (text != null
                    && !text.isEmpty()
                    && text.length() <= 9
                    && text.chars().allMatch(Character::isDigit)) {
                serverVersion = Integer.parseInt(text);
            }
        }

        /** {@code meta_info.completion_tokens}: null counts as absent (nothing to check against). */
        private void readCompletionTokens(JsonParser p, JsonToken t) throws IOException {
            if (t == JsonToken.VALUE_NULL) {
                return;
            }
            if (t != JsonToken.VALUE_NUMBER_INT
                    || p.getNumberType() != JsonParser.NumberType.INT
                    || p.getIntValue() < 0) {
                throw malformed("meta_info.completion_tokens", "is not a non-negative integer");
            }
            completionTokens = p.getIntValue();
        }

        private void readFinishReason(JsonParser p, JsonToken t) throws IOException {
            if (t == JsonToken.VALUE_NULL) {
                return;
            }
            if (t != JsonToken.START_OBJECT) {
                throw malformed("meta_info.finish_reason", "is not an object");
            }
            finishSeen = true;
            while (next(p) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken v = next(p);
                if (name.equals("type")) {
                    if (v != JsonToken.VALUE_STRING) {
                        throw malformed("meta_info.finish_reason.type", "is not a string");
                    }
                    finishType = p.getText();
                } else if (name.equals("message") && v == JsonToken.VALUE_STRING) {
                    finishMessage = p.getText();
                } else {
                    p.skipChildren();
                }
            }
        }

        private void readEntries(JsonParser p) throws IOException {
            int capacity = WireJson.initialCapacity(maxNewTokens);
            tokens = new int[capacity];
            logprobs = new float[capacity];
            JsonToken t;
            while ((t = next(p)) != JsonToken.END_ARRAY) {
                String field = ENTRIES + "[" + count + "]";
                if (t != JsonToken.START_ARRAY) {
                    throw malformed(field, "is not an array [logprob, token_id, ...]");
                }
                if (!isNumber(next(p))) {
                    throw malformed(field + "[0]", "is not a number (the logprob)");
                }
                double logprob = p.getDoubleValue();
                if (logprob == AMBIGUOUS_LOGPROB) {
                    throw malformed(field + "[0]", "is -9999.0, which means a missing or clamped logprob");
                }
                if (next(p) != JsonToken.VALUE_NUMBER_INT || p.getNumberType() != JsonParser.NumberType.INT) {
                    throw malformed(field + "[1]", "is not an integer token id");
                }
                int token = p.getIntValue();
                if (token < 0) {
                    throw malformed(field + "[1]", "is a negative token id " + token);
                }
                while (next(p) != JsonToken.END_ARRAY) {
                    p.skipChildren();
                }
                tokens = WireJson.grow(tokens, count + 1);
                logprobs = WireJson.grow(logprobs, count + 1);
                tokens[count] = token;
                logprobs[count] = (float) logprob;
                count++;
            }
        }

        GeneratedSegment result() {
            if (!metaSeen) {
                throw malformed("meta_info", "is missing");
            }
            if (!finishSeen) {
                throw malformed("meta_info.finish_reason", "is missing or null");
            }
            if (finishType == null) {
                throw malformed("meta_info.finish_reason.type", "is missing");
            }
            StopReason reason = stopReason(finishType);
            if (reason == StopReason.ABORT && (finishMessage.startsWith(ABORT_BEFORE_PREFILL) || !entriesSeen)) {
                return new GeneratedSegment(new int[0], new float[0], 0, reason, serverVersion, cachedTokens);
            }
            if (!entriesSeen) {
                throw malformed(ENTRIES, "is missing (return_logprob was requested)");
            }
            if (completionTokens >= 0 && completionTokens != count) {
                throw malformed(
                        ENTRIES, "has " + count + " entries but meta_info.completion_tokens is " + completionTokens);
            }
            if (outputIds >= 0 && outputIds != count) {
                throw malformed("output_ids", "has " + outputIds + " tokens but " + ENTRIES + " has " + count);
            }
            if (count > maxNewTokens) {
                throw malformed(ENTRIES, "has " + count + " tokens, more than max_new_tokens " + maxNewTokens);
            }
            return new GeneratedSegment(tokens, logprobs, count, reason, serverVersion, cachedTokens);
        }

        private StopReason stopReason(String type) {
            try {
                return StopReason.fromWire(type);
            } catch (IllegalArgumentException e) {
                throw malformed(
                        "meta_info.finish_reason.type",
                        "is an unknown finish reason \"" + WireJson.clip(type) + "\" (known: " + WireJson.KNOWN_REASONS
                                + ")");
            }
        }
    }
}
