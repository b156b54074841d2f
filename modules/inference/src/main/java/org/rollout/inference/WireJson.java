package org.rollout.inference;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.io.JsonEOFException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.List;
import org.rollout.api.GenerationConfig;

/**
 * JSON plumbing shared by both protocols: one thread-safe {@link JsonFactory}, streaming writers for
 * token arrays and small control bodies, and the growable arrays the parsers fill. Streaming (no
 * tree, no data binding) keeps the per-segment path to one pass over the bytes.
 */
final class WireJson {
    /** Parsers refuse duplicate keys: a repeated field would otherwise be read twice, or half-replaced. */
    static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    /** Known finish reasons, for messages. */
    static final String KNOWN_REASONS = "stop, length, tool_calls, abort";

    private WireJson() {}

    /** A generator over a buffer sized for a body carrying {@code tokens} token ids. */
    static ByteArrayOutputStream bufferFor(int tokens) {
        return new ByteArrayOutputStream(256 + tokens * 7);
    }

    static JsonGenerator generator(ByteArrayOutputStream out) {
        try {
            return FACTORY.createGenerator(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes {@code prompt ++ generated[0, count)} as one JSON array. */
    static void writeIds(JsonGenerator g, int[] prompt, int[] generated, int count) throws IOException {
        g.writeStartArray();
        for (int id : prompt) {
            g.writeNumber(id);
        }
        for (int i = 0; i < count; i++) {
            g.writeNumber(generated[i]);
        }
        g.writeEndArray();
    }

    /** Writes the sampling fields both backends share, in protocol.md's order. */
    static void writeCommonSampling(JsonGenerator g, GenerationConfig c, String maxKey, int maxNewTokens)
            throws IOException {
        g.writeNumberField("top_p", c.topP());
        g.writeNumberField("top_k", c.topK());
        g.writeNumberField(maxKey, maxNewTokens);
        g.writeNumberField("temperature", c.effectiveTemperature());
        g.writeArrayFieldStart("stop_token_ids");
        for (int id : c.stopTokenIds()) {
            g.writeNumber(id);
        }
        g.writeEndArray();
        g.writeBooleanField("ignore_eos", c.ignoreEos());
        g.writeBooleanField("skip_special_tokens", c.skipSpecialTokens());
        g.writeNumberField("frequency_penalty", c.frequencyPenalty());
    }

    static void writeStop(JsonGenerator g, List<String> stop) throws IOException {
        g.writeArrayFieldStart("stop");
        for (String s : stop) {
            g.writeString(s);
        }
        g.writeEndArray();
    }

    /** A JSON object of alternating keys and values (strings, numbers, booleans). */
    static String object(Object... keysAndValues) {
        StringWriter w = new StringWriter();
        try (JsonGenerator g = FACTORY.createGenerator(w)) {
            g.writeStartObject();
            for (int i = 0; i < keysAndValues.length; i += 2) {
                g.writeFieldName((String) keysAndValues[i]);
                Object v = keysAndValues[i + 1];
                if (v instanceof String s) {
                    g.writeString(s);
                } else if (v instanceof Boolean b) {
                    g.writeBoolean(b);
                } else if (v instanceof Integer n) {
                    g.writeNumber(n);
                } else {
                    throw new IllegalArgumentException("unsupported JSON value " + v);
                }
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return w.toString();
    }

    /** The next token, treating the end of input inside a structure as the error it is. */
    static JsonToken next(JsonParser p) throws IOException {
        JsonToken t = p.nextToken();
        if (t == null) {
            throw new JsonEOFException(p, null, "unexpected end of input");
        }
        return t;
    }

    /**
     * Whether only whitespace follows the value just read; a parser calls it after the root
     * object, so a body with anything after its object is refused rather than half-read.
     */
    static boolean atEnd(JsonParser p) throws IOException {
        return p.nextToken() == null;
    }

    /** {@code s} cut at 40 chars, so that a message can quote server text without carrying a payload. */
    /**
     * A count the server reports for information only (such as {@code cached_tokens}): its value
     * when it is a non-negative integer, else -1 (absent); a malformed count never fails a segment.
     */
    static int optionalCount(JsonParser p, JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NUMBER_INT && p.getNumberType() == JsonParser.NumberType.INT && p.getIntValue() >= 0) {
            return p.getIntValue();
        }
        p.skipChildren();
        return -1;
    }

    static String clip(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "…";
    }

    static boolean isNumber(JsonToken t) {
        return t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT;
    }

    /** An initial capacity for the token arrays of a segment of at most {@code max} tokens. */
    static int initialCapacity(int max) {
        return Math.max(8, Math.min(max, 1024));
    }

    static int[] grow(int[] a, int needed) {
        return needed <= a.length ? a : Arrays.copyOf(a, Math.max(needed, a.length * 2));
    }

    static float[] grow(float[] a, int needed) {
        return needed <= a.length ? a : Arrays.copyOf(a, Math.max(needed, a.length * 2));
    }
}
