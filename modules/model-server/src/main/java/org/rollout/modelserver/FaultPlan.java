package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Faults the model server injects into its generation endpoints ({@code /generate} and {@code
 * /v1/completions}), for tests and the chaos suite. Off by default ({@link #NONE}); set at start-up
 * ({@link ModelServerConfig#withFaults}), at runtime with {@link ModelServer#setFaults} or {@code
 * POST /_admin/faults} (clients on this host only). Setting a plan restarts its random stream and its
 * request count, so the same plan over the same sequence of requests injects the same faults.
 *
 * <p>Per generation request, in this order: crash (the request that finds {@code crashAfter}
 * requests already counted makes the server stop listening and reset every connection; nothing in
 * flight is answered), error (HTTP 500 with probability {@code errorRate}), hang (the request is
 * held unanswered until a plan without hang is set, its client leaves, or the server stops), then
 * the normal generation, then slow (the response waits {@code slow} more) and malformed (with
 * probability {@code malformedRate} the body is broken the {@code malformedKind} way). Two uniform
 * draws per request decide error and malformed, whatever the rates.
 *
 * @param errorRate probability of an HTTP 500, in [0, 1]
 * @param hang hold every generation request unanswered
 * @param crashAfter crash when a request arrives after this many (−1: never; 0: on the first)
 * @param slow extra delay before each generation response
 * @param malformedRate probability of a malformed body, in [0, 1]
 * @param malformedKind how the body is malformed
 * @param seed the seed of the random draws
 */
public record FaultPlan(
        double errorRate,
        boolean hang,
        int crashAfter,
        Duration slow,
        double malformedRate,
        MalformedKind malformedKind,
        long seed) {

    /** No faults. */
    public static final FaultPlan NONE = new FaultPlan(0, false, -1, Duration.ZERO, 0, MalformedKind.NOT_JSON, 0);

    /** How a malformed generation response is broken. */
    public enum MalformedKind {
        /** The body is not JSON at all (still labelled {@code application/json}). */
        NOT_JSON,
        /** The JSON body is cut in half. */
        TRUNCATED_JSON,
        /**
         * Token and logprob counts disagree: SGLang's {@code output_token_logprobs} has one entry fewer
         * than {@code output_ids} and {@code completion_tokens} (one spurious entry when there are no
         * tokens); vLLM's {@code token_logprobs} one fewer than {@code tokens}.
         */
        COUNT_MISMATCH,
        /** The finish reason is {@code "cancelled"}, a type neither SGLang nor vLLM sends. */
        UNKNOWN_FINISH_REASON,
        /** SGLang: no {@code meta_info}; vLLM: no {@code choices[0].logprobs}. */
        MISSING_META_INFO;

        /** The snake_case name used on the wire and on the command line, e.g. {@code not_json}. */
        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** Parses {@link #wireName()} (case-insensitive). */
        public static MalformedKind parse(String s) {
            for (MalformedKind k : values()) {
                if (k.wireName().equalsIgnoreCase(s)) {
                    return k;
                }
            }
            throw new IllegalArgumentException(
                    "malformed_kind '" + s
                            + "' is not one of not_json, truncated_json, count_mismatch, unknown_finish_reason, missing_meta_info");
        }
    }

    public FaultPlan {
        if (!(errorRate >= 0 && errorRate <= 1)) {
            throw new IllegalArgumentException("error_rate must be in [0, 1], got " + errorRate);
        }
        if (!(malformedRate >= 0 && malformedRate <= 1)) {
            throw new IllegalArgumentException("malformed_rate must be in [0, 1], got " + malformedRate);
        }
        if (crashAfter < -1) {
            throw new IllegalArgumentException("crash_after must be -1 (never) or >= 0, got " + crashAfter);
        }
        if (slow == null || slow.isNegative()) {
            throw new IllegalArgumentException("slow must be a non-negative duration, got " + slow);
        }
        if (malformedKind == null) {
            throw new IllegalArgumentException("malformed_kind must be set");
        }
    }

    /** This plan with HTTP 500 at probability {@code rate}. */
    public FaultPlan withErrorRate(double rate) {
        return new FaultPlan(rate, hang, crashAfter, slow, malformedRate, malformedKind, seed);
    }

    /** This plan holding every generation request unanswered while {@code on}. */
    public FaultPlan withHang(boolean on) {
        return new FaultPlan(errorRate, on, crashAfter, slow, malformedRate, malformedKind, seed);
    }

    /** This plan crashing the server when a request arrives after {@code requests} (−1: never). */
    public FaultPlan withCrashAfter(int requests) {
        return new FaultPlan(errorRate, hang, requests, slow, malformedRate, malformedKind, seed);
    }

    /** This plan delaying every generation response by {@code delay}. */
    public FaultPlan withSlow(Duration delay) {
        return new FaultPlan(errorRate, hang, crashAfter, delay, malformedRate, malformedKind, seed);
    }

    /** This plan breaking responses the {@code kind} way at probability {@code rate}. */
    public FaultPlan withMalformed(double rate, MalformedKind kind) {
        return new FaultPlan(errorRate, hang, crashAfter, slow, rate, kind, seed);
    }

    /** This plan with another seed for its random draws. */
    public FaultPlan withSeed(long newSeed) {
        return new FaultPlan(errorRate, hang, crashAfter, slow, malformedRate, malformedKind, newSeed);
    }

    /** True when no fault is active. */
    public boolean isNone() {
        return errorRate == 0 && !hang && crashAfter < 0 && slow.isZero() && malformedRate == 0;
    }

    private static final Set<String> FIELDS =
            Set.of("error_rate", "hang", "crash_after", "slow_ms", "malformed_rate", "malformed_kind", "seed");

    /** The JSON form served and accepted by {@code /_admin/faults}. */
    ObjectNode toJson() {
        ObjectNode o = Json.object();
        o.put("error_rate", errorRate);
        o.put("hang", hang);
        if (crashAfter >= 0) {
            o.put("crash_after", crashAfter);
        } else {
            o.putNull("crash_after");
        }
        o.put("slow_ms", slow.toMillis());
        o.put("malformed_rate", malformedRate);
        o.put("malformed_kind", malformedKind.wireName());
        o.put("seed", seed);
        return o;
    }

    /** Parses the JSON form; absent fields are off. Refusals name the field. */
    static FaultPlan fromJson(ObjectNode o) {
        for (Map.Entry<String, JsonNode> field : o.properties()) {
            String name = field.getKey();
            if (!FIELDS.contains(name)) {
                throw new BadRequestException(name, "unknown field '" + name + "'; known: " + FIELDS);
            }
        }
        try {
            return new FaultPlan(
                    number(o, "error_rate", 0),
                    bool(o, "hang"),
                    (int) integer(o, "crash_after", -1),
                    Duration.ofMillis(integer(o, "slow_ms", 0)),
                    number(o, "malformed_rate", 0),
                    o.hasNonNull("malformed_kind")
                            ? MalformedKind.parse(text(o, "malformed_kind"))
                            : MalformedKind.NOT_JSON,
                    integer(o, "seed", 0));
        } catch (IllegalArgumentException e) {
            String msg = e.getMessage();
            String field = msg.contains(" ") ? msg.substring(0, msg.indexOf(' ')) : "faults";
            throw new BadRequestException(field, msg);
        }
    }

    private static double number(ObjectNode o, String name, double dflt) {
        JsonNode v = o.get(name);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isNumber()) {
            throw new BadRequestException(name, name + " must be a number, got " + v);
        }
        return v.asDouble();
    }

    private static long integer(ObjectNode o, String name, long dflt) {
        JsonNode v = o.get(name);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isIntegralNumber()) {
            throw new BadRequestException(name, name + " must be an integer, got " + v);
        }
        return v.asLong();
    }

    private static boolean bool(ObjectNode o, String name) {
        JsonNode v = o.get(name);
        if (v == null || v.isNull()) {
            return false;
        }
        if (!v.isBoolean()) {
            throw new BadRequestException(name, name + " must be true or false, got " + v);
        }
        return v.asBoolean();
    }

    private static String text(ObjectNode o, String name) {
        JsonNode v = o.get(name);
        if (!v.isTextual()) {
            throw new BadRequestException(name, name + " must be a string, got " + v);
        }
        return v.asText();
    }
}
