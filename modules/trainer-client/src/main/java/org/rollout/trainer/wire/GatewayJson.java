package org.rollout.trainer.wire;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.rollout.trainer.BatchLease;
import org.rollout.trainer.HeldBatch;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutStatus;
import org.rollout.trainer.StatsPage;
import org.rollout.trainer.TensorSpec;
import org.rollout.trainer.VersionStats;

/**
 * The JSON bodies of the trainer gateway (docs/protocol.md, "Trainer gateway"), written and parsed
 * by hand over Jackson's tree model so that the public records carry no annotations. Keys are
 * snake_case, as AReaL spells its fields.
 *
 * <p>Numbers: statistics that are not finite travel as {@code null} (JSON has no NaN) and come back
 * as NaN. Durations travel as milliseconds with a fractional part.
 *
 * <p>Parsing errors are {@link IllegalArgumentException}s naming the body and the field. Stateless
 * and thread-safe.
 */
public final class GatewayJson {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Reads {@code stats.jsonl} lines, which may hold NaN (JSON has none; Jackson writes it bare). */
    private static final ObjectMapper LINES =
            new ObjectMapper().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS.mappedFeature());
    /** The keys of a statistics line that are not scalars. */
    private static final Set<String> LINE_FIELDS =
            Set.of("version", "scope", "groups", "accepted", "rejected", "rejected_reasons", "tokens");

    private GatewayJson() {}

    /**
     * {@code POST /v1/weights}: the version to publish and where the weights are ({@code path}), or,
     * under {@code weight_transfer = nccl}, the tensors the trainer broadcasts ({@code tensors};
     * exactly one of the two is set).
     */
    public record PublishRequest(int version, String path, List<TensorSpec> tensors) {
        public PublishRequest(int version, String path) {
            this(version, path, null);
        }
    }

    /** {@code POST /v1/batches/{id}/ack}'s answer: whether the gateway knew the batch as handed out. */
    public record AckReply(long batchId, boolean known) {}

    /** An error body: a stable code and a message for people. */
    public record ErrorBody(String code, String message) {}

    public static byte[] status(RolloutStatus s) {
        ObjectNode o = JSON.createObjectNode();
        o.put("version", s.version());
        o.put("running", s.running());
        o.put("accepted", s.accepted());
        o.put("rejected", s.rejected());
        o.put("capacity", s.capacity());
        o.put("buffered_groups", s.bufferedGroups());
        o.put("unacknowledged_batches", s.unacknowledgedBatches());
        o.put("eval_running", s.evalRunning());
        o.put("tokens_generated", s.tokensGenerated());
        o.put("held_outcomes", s.heldOutcomes());
        var held = o.putArray("held_batches");
        for (HeldBatch b : s.heldBatches()) {
            ObjectNode h = held.addObject();
            h.put("batch_id", b.batchId());
            h.put("groups", b.groups());
            h.put("holder", b.holder());
            h.put("leased", b.leased());
            h.put("returns_in_s", b.returnsInMillis() / 1000.0);
        }
        ObjectNode reasons = o.putObject("rejected_by_reason");
        s.rejectedByReason().forEach(reasons::put);
        ObjectNode stats = o.putObject("last_stats");
        s.lastStats().forEach((scope, means) -> {
            ObjectNode m = stats.putObject(scope);
            means.forEach((k, v) -> {
                if (Double.isFinite(v)) {
                    m.put(k, v);
                } else {
                    m.putNull(k);
                }
            });
        });
        return bytes(o);
    }

    public static RolloutStatus parseStatus(byte[] body) {
        JsonNode o = object(body, "status");
        Map<String, Long> reasons = new LinkedHashMap<>();
        object(o, "rejected_by_reason", "status")
                .properties()
                .forEach(e ->
                        reasons.put(e.getKey(), integral(e.getValue(), "rejected_by_reason." + e.getKey(), "status")));
        Map<String, Map<String, Double>> stats = new LinkedHashMap<>();
        object(o, "last_stats", "status").properties().forEach(scope -> {
            Map<String, Double> means = new LinkedHashMap<>();
            if (!scope.getValue().isObject()) {
                throw new IllegalArgumentException(
                        "status: field 'last_stats." + scope.getKey() + "' must be an object");
            }
            scope.getValue()
                    .properties()
                    .forEach(e -> means.put(
                            e.getKey(),
                            real(e.getValue(), "last_stats." + scope.getKey() + "." + e.getKey(), "status")));
            stats.put(scope.getKey(), means);
        });
        return new RolloutStatus(
                (int) integralField(o, "version", "status"),
                integralField(o, "running", "status"),
                integralField(o, "accepted", "status"),
                integralField(o, "rejected", "status"),
                integralField(o, "capacity", "status"),
                (int) integralField(o, "buffered_groups", "status"),
                (int) integralField(o, "unacknowledged_batches", "status"),
                integralField(o, "eval_running", "status"),
                integralField(o, "tokens_generated", "status"),
                reasons,
                stats,
                // Absent from a gateway older than the field.
                o.has("held_outcomes") ? (int) integralField(o, "held_outcomes", "status") : 0,
                heldBatches(o.get("held_batches")));
    }

    private static List<HeldBatch> heldBatches(JsonNode list) {
        if (list == null || list.isNull()) {
            return List.of(); // a gateway older than the field
        }
        if (!list.isArray()) {
            throw new IllegalArgumentException("status: field 'held_batches' must be an array, got " + list);
        }
        List<HeldBatch> out = new ArrayList<>(list.size());
        for (JsonNode h : list) {
            if (!h.isObject()
                    || !h.path("holder").isTextual()
                    || !h.path("leased").isBoolean()) {
                throw new IllegalArgumentException(
                        "status: each of 'held_batches' must be an object with a 'holder' text and 'leased', got " + h);
            }
            out.add(new HeldBatch(
                    integralField(h, "batch_id", "status held_batches"),
                    (int) integralField(h, "groups", "status held_batches"),
                    h.get("holder").textValue(),
                    h.get("leased").booleanValue(),
                    Math.round(real(h.get("returns_in_s"), "returns_in_s", "status held_batches") * 1000)));
        }
        return out;
    }

    /** {@code POST /v1/leases/renew}'s body: {@code {"holder": …, "lease": seconds}}. */
    public static byte[] renewRequest(BatchLease lease) {
        ObjectNode o = JSON.createObjectNode();
        o.put("holder", lease.holder());
        o.put("lease", lease.duration().toMillis() / 1000.0);
        return bytes(o);
    }

    /**
     * The lease of a renewal request's body.
     *
     * @throws IllegalArgumentException naming the field at fault
     */
    public static BatchLease parseRenewRequest(byte[] body) {
        JsonNode o = object(body, "lease renewal");
        JsonNode holder = o.get("holder");
        if (holder == null || !holder.isTextual()) {
            throw new IllegalArgumentException("lease renewal: field 'holder' must be a string, got " + holder);
        }
        double seconds = real(o.get("lease"), "lease", "lease renewal");
        if (!(seconds > 0) || seconds > BatchLease.MAX.toSeconds()) {
            throw new IllegalArgumentException("lease renewal: field 'lease' must be seconds above 0 and at most "
                    + BatchLease.MAX.toSeconds() + ", got " + o.get("lease"));
        }
        try {
            return new BatchLease(holder.textValue(), Duration.ofMillis(Math.max(1, Math.round(seconds * 1000))));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("lease renewal: field 'holder': " + e.getMessage(), e);
        }
    }

    /** A renewal's answer: the holder, the lease and the batches it now covers. */
    public static byte[] renewed(BatchLease lease, List<Long> batchIds) {
        ObjectNode o = JSON.createObjectNode();
        o.put("holder", lease.holder());
        o.put("lease_seconds", lease.duration().toMillis() / 1000.0);
        var ids = o.putArray("batch_ids");
        batchIds.forEach(ids::add);
        return bytes(o);
    }

    /** The batch ids of a renewal's answer. */
    public static List<Long> parseRenewed(byte[] body) {
        JsonNode o = object(body, "lease renewal answer");
        JsonNode ids = o.get("batch_ids");
        if (ids == null || !ids.isArray()) {
            throw new IllegalArgumentException("lease renewal answer: field 'batch_ids' must be an array, got " + ids);
        }
        List<Long> out = new ArrayList<>(ids.size());
        for (JsonNode id : ids) {
            out.add(integral(id, "batch_ids", "lease renewal answer"));
        }
        return List.copyOf(out);
    }

    /**
     * {@code GET /v1/stats}'s body: {@code {"lines": [line, …], "complete_below": N}}, each line
     * with the keys and numbers of its {@code stats.jsonl} line ({@code staleness_max} an integer,
     * other scalars reals, NaN as null).
     */
    public static byte[] stats(StatsPage page) {
        ObjectNode o = JSON.createObjectNode();
        var lines = o.putArray("lines");
        for (VersionStats l : page.lines()) {
            ObjectNode n = lines.addObject();
            n.put("version", l.version());
            n.put("scope", l.scope());
            n.put("groups", l.groups());
            n.put("accepted", l.accepted());
            n.put("rejected", l.rejected());
            ObjectNode reasons = n.putObject("rejected_reasons");
            l.rejectedReasons().forEach(reasons::put);
            n.put("tokens", l.tokens());
            l.scalars().forEach((k, v) -> {
                if (!Double.isFinite(v)) {
                    n.putNull(k);
                } else if (k.equals("staleness_max") && v == Math.rint(v)) {
                    n.put(k, v.longValue());
                } else {
                    n.put(k, v);
                }
            });
        }
        o.put("complete_below", page.completeBelow());
        return bytes(o);
    }

    public static StatsPage parseStats(byte[] body) {
        JsonNode o = object(body, "stats");
        JsonNode lines = o.get("lines");
        if (lines == null || !lines.isArray()) {
            throw new IllegalArgumentException("stats: field 'lines' must be an array");
        }
        List<VersionStats> out = new ArrayList<>(lines.size());
        for (JsonNode line : lines) {
            out.add(statsLine(line, "stats line"));
        }
        return new StatsPage(out, (int) integralField(o, "complete_below", "stats"));
    }

    /** One line of {@code stats.jsonl} as written by the engine, typed. */
    public static VersionStats parseStatsLine(String line) {
        JsonNode o;
        try {
            o = LINES.readTree(line);
        } catch (IOException e) {
            throw new IllegalArgumentException("stats line: not JSON: " + e.getMessage(), e);
        }
        return statsLine(o, "stats line");
    }

    private static VersionStats statsLine(JsonNode o, String what) {
        if (o == null || !o.isObject()) {
            throw new IllegalArgumentException(what + ": must be a JSON object, got " + o);
        }
        JsonNode scope = o.get("scope");
        if (scope == null || !scope.isTextual()) {
            throw new IllegalArgumentException(what + ": field 'scope' must be a string, got " + scope);
        }
        Map<String, Long> reasons = new LinkedHashMap<>();
        object(o, "rejected_reasons", what)
                .properties()
                .forEach(e -> reasons.put(e.getKey(), integral(e.getValue(), "rejected_reasons." + e.getKey(), what)));
        Map<String, Double> scalars = new LinkedHashMap<>();
        o.properties().forEach(e -> {
            if (!LINE_FIELDS.contains(e.getKey())) {
                scalars.put(e.getKey(), real(e.getValue(), e.getKey(), what));
            }
        });
        return new VersionStats(
                (int) integralField(o, "version", what),
                scope.textValue(),
                integralField(o, "groups", what),
                integralField(o, "accepted", what),
                integralField(o, "rejected", what),
                reasons,
                integralField(o, "tokens", what),
                scalars);
    }

    public static byte[] publishRequest(int version, String path) {
        ObjectNode o = JSON.createObjectNode();
        o.put("version", version);
        o.put("path", path);
        return bytes(o);
    }

    /** {@code {"version": N, "tensors": [{"name", "dtype", "shape": [..]}, ..]}}. */
    public static byte[] publishTensorsRequest(int version, List<TensorSpec> tensors) {
        ObjectNode o = JSON.createObjectNode();
        o.put("version", version);
        putTensors(o, tensors);
        return bytes(o);
    }

    /** {@code {"tensors": [..]}}: the tensor manifest the engine reads under {@code weight_transfer = nccl}. */
    public static byte[] tensorManifest(List<TensorSpec> tensors) {
        ObjectNode o = JSON.createObjectNode();
        putTensors(o, tensors);
        return bytes(o);
    }

    private static void putTensors(ObjectNode o, List<TensorSpec> tensors) {
        var list = o.putArray("tensors");
        for (TensorSpec t : tensors) {
            ObjectNode e = list.addObject();
            e.put("name", t.name());
            e.put("dtype", t.dtype());
            var shape = e.putArray("shape");
            t.shape().forEach(shape::add);
        }
    }

    /**
     * Parses and checks a publish request: an integer version ≥ 0 and either a non-blank path or a
     * non-empty {@code tensors} array of {@code {"name", "dtype", "shape"}}.
     */
    public static PublishRequest parsePublishRequest(byte[] body) {
        JsonNode o = object(body, "publish request");
        long version = integralField(o, "version", "publish request");
        if (version < 0 || version > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "publish request: field 'version' must be an integer in [0, 2^31), got " + version);
        }
        JsonNode tensors = o.get("tensors");
        JsonNode path = o.get("path");
        if (tensors != null && path != null) {
            throw new IllegalArgumentException(
                    "publish request: give either 'path' (a weights file) or 'tensors' (an NCCL broadcast), not both");
        }
        if (tensors != null) {
            return new PublishRequest((int) version, null, tensors(tensors));
        }
        if (path == null || !path.isTextual() || path.textValue().isBlank()) {
            throw new IllegalArgumentException(
                    "publish request: field 'path' must be a non-blank string (the weights file the servers load)");
        }
        return new PublishRequest((int) version, path.textValue());
    }

    private static List<TensorSpec> tensors(JsonNode list) {
        if (!list.isArray() || list.isEmpty()) {
            throw new IllegalArgumentException(
                    "publish request: field 'tensors' must be a non-empty array of {\"name\", \"dtype\", \"shape\"}");
        }
        List<TensorSpec> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            JsonNode t = list.get(i);
            String at = "publish request: tensors[" + i + "]";
            JsonNode name = t.get("name");
            JsonNode dtype = t.get("dtype");
            JsonNode shape = t.get("shape");
            if (name == null || !name.isTextual() || name.textValue().isBlank()) {
                throw new IllegalArgumentException(at + ".name must be a non-blank string");
            }
            if (dtype == null || !dtype.isTextual() || dtype.textValue().isBlank()) {
                throw new IllegalArgumentException(at + ".dtype must be a non-blank string such as bfloat16");
            }
            if (shape == null || !shape.isArray()) {
                throw new IllegalArgumentException(at + ".shape must be an array of integers >= 0");
            }
            List<Long> dims = new ArrayList<>(shape.size());
            for (JsonNode d : shape) {
                if (!d.isIntegralNumber() || d.asLong() < 0) {
                    throw new IllegalArgumentException(at + ".shape must be an array of integers >= 0, got " + shape);
                }
                dims.add(d.asLong());
            }
            out.add(new TensorSpec(name.textValue(), dtype.textValue(), dims));
        }
        return out;
    }

    public static byte[] publishResult(PublishResult r) {
        ObjectNode o = JSON.createObjectNode();
        o.put("version", r.version());
        o.put("update_time_ms", r.updateTime().toNanos() / 1e6);
        o.put("servers_updated", r.serversUpdated());
        ObjectNode failures = o.putObject("server_failures");
        r.serverFailures().forEach(failures::put);
        return bytes(o);
    }

    public static PublishResult parsePublishResult(byte[] body) {
        JsonNode o = object(body, "publish result");
        Map<String, String> failures = new LinkedHashMap<>();
        object(o, "server_failures", "publish result")
                .properties()
                .forEach(e -> failures.put(e.getKey(), e.getValue().asText()));
        double ms = real(o.get("update_time_ms"), "update_time_ms", "publish result");
        return new PublishResult(
                (int) integralField(o, "version", "publish result"),
                Duration.ofNanos(Math.round(ms * 1e6)),
                (int) integralField(o, "servers_updated", "publish result"),
                failures);
    }

    /**
     * The optional body of {@code POST /v1/batches/{id}/ack}: {@code {"task_ids": [..]}}, the task
     * ids of the batch's groups, so that any gateway (not only the one that handed the batch out)
     * can retire its tasks on an engine whose collector was lost with its node.
     */
    public static byte[] ackRequest(List<Long> taskIds) {
        ObjectNode o = JSON.createObjectNode();
        var a = o.putArray("task_ids");
        taskIds.forEach(a::add);
        return bytes(o);
    }

    /** The task ids of an acknowledgement's body; an empty body, or one without {@code task_ids}, has none. */
    public static List<Long> parseAckRequest(byte[] body) {
        if (body.length == 0) {
            return List.of();
        }
        JsonNode o = object(body, "acknowledgement request");
        JsonNode ids = o.get("task_ids");
        if (ids == null || ids.isNull()) {
            return List.of();
        }
        if (!ids.isArray()) {
            throw new IllegalArgumentException(
                    "acknowledgement request: field 'task_ids' must be an array of task ids, got " + ids);
        }
        List<Long> out = new ArrayList<>(ids.size());
        for (JsonNode id : ids) {
            long v = integral(id, "task_ids", "acknowledgement request");
            if (v < 0) {
                throw new IllegalArgumentException(
                        "acknowledgement request: field 'task_ids' must hold task ids >= 0, got " + v);
            }
            out.add(v);
        }
        return List.copyOf(out);
    }

    public static byte[] ack(long batchId, boolean known) {
        ObjectNode o = JSON.createObjectNode();
        o.put("batch_id", batchId);
        o.put("known", known);
        return bytes(o);
    }

    public static AckReply parseAck(byte[] body) {
        JsonNode o = object(body, "acknowledgement");
        JsonNode known = o.get("known");
        if (known == null || !known.isBoolean()) {
            throw new IllegalArgumentException("acknowledgement: field 'known' must be true or false");
        }
        return new AckReply(integralField(o, "batch_id", "acknowledgement"), known.booleanValue());
    }

    /** {@code {"error": {"message": …, "code": …}}}. */
    /**
     * The body of a pull's {@code 307} answer: {@code {"read_from": base URL of the gateway of the
     * node that holds the batches, "location": the URL to pull}}.
     */
    public static byte[] readFrom(String gateway, String location) {
        ObjectNode o = JSON.createObjectNode();
        o.put("read_from", gateway);
        o.put("location", location);
        return bytes(o);
    }

    public static byte[] error(String code, String message) {
        ObjectNode o = JSON.createObjectNode();
        ObjectNode e = o.putObject("error");
        e.put("message", message);
        e.put("code", code);
        return bytes(o);
    }

    /**
     * The error in a gateway's error body; a body that is not one (a proxy's HTML page) gives code
     * {@code unknown} and its first 200 characters as the message.
     */
    public static ErrorBody parseError(byte[] body) {
        try {
            JsonNode o = JSON.readTree(body);
            JsonNode e = o == null ? null : o.get("error");
            if (e != null
                    && e.isObject()
                    && e.path("message").isTextual()
                    && e.path("code").isTextual()) {
                return new ErrorBody(e.get("code").textValue(), e.get("message").textValue());
            }
        } catch (IOException notJson) {
            // Not a gateway's body: described below by its text.
        }
        String text = new String(body, StandardCharsets.UTF_8).strip();
        return new ErrorBody("unknown", text.length() > 200 ? text.substring(0, 200) + "…" : text);
    }

    /** {@code GET /health}'s body. */
    public static byte[] health() {
        ObjectNode o = JSON.createObjectNode();
        o.put("status", "ok");
        return bytes(o);
    }

    private static byte[] bytes(JsonNode node) {
        try {
            return JSON.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write a JSON tree: " + e.getOriginalMessage(), e);
        }
    }

    private static JsonNode object(byte[] body, String what) {
        JsonNode o;
        try {
            o = JSON.readTree(body);
        } catch (IOException e) {
            throw new IllegalArgumentException(what + ": the body is not JSON: " + e.getMessage(), e);
        }
        if (o == null || !o.isObject()) {
            throw new IllegalArgumentException(what + ": the body must be a JSON object");
        }
        return o;
    }

    private static JsonNode object(JsonNode parent, String field, String what) {
        JsonNode o = parent.get(field);
        if (o == null || !o.isObject()) {
            throw new IllegalArgumentException(what + ": field '" + field + "' must be an object");
        }
        return o;
    }

    private static long integralField(JsonNode parent, String field, String what) {
        return integral(parent.get(field), field, what);
    }

    private static long integral(JsonNode v, String field, String what) {
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new IllegalArgumentException(what + ": field '" + field + "' must be an integer, got " + v);
        }
        return v.longValue();
    }

    private static double real(JsonNode v, String field, String what) {
        if (v != null && v.isNull()) {
            return Double.NaN;
        }
        if (v == null || !v.isNumber()) {
            throw new IllegalArgumentException(what + ": field '" + field + "' must be a number, got " + v);
        }
        return v.doubleValue();
    }
}
