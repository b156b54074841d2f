package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.rollout.http.Http1Server;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NCCL control plane's endpoints (SGLang's routes, AReaL's vLLM extension routes): joining a
 * weight-update group, and receiving the tensors its rank 0 broadcasts (over the group's TCP
 * stand-in, {@link WeightGroup}) as the next weights.
 */
final class WeightGroupEndpoints {
    // Logs under the server's name, as the server's lines always have.
    private static final Logger log = LoggerFactory.getLogger(ModelServer.class);

    private final ModelServer server;
    private final WeightEndpoints weights;

    WeightGroupEndpoints(ModelServer server, WeightEndpoints weights) {
        this.server = server;
        this.weights = weights;
    }

    /** Leaves every group joined (the server is closing). */
    void closeAll() {
        for (WeightGroup g : groups.values()) {
            try {
                g.close();
            } catch (IOException e) {
                log.debug("model server {}: closing weight group {}: {}", server.baseUrl(), g.name(), e.toString());
            }
        }
    }

    /** How long joining a weight-update group, and waiting for one tensor's bytes, may take. */
    private static final int GROUP_TIMEOUT_MILLIS = 120_000;

    /** The weight-update groups joined, by name. */
    private final Map<String, WeightGroup> groups = new ConcurrentHashMap<>();

    /** vLLM: the tensors announced by {@code /areal_set_update_weight_meta} for the next xccl update. */
    private volatile PendingUpdate pendingMeta;

    private record PendingUpdate(String group, List<WeightGroup.Tensor> tensors) {}

    /**
     * {@code POST /init_weights_update_group} (SGLang) and {@code /areal_init_weights_update_group}
     * (AReaL's vLLM extension): {@code {"master_address", "master_port", "rank_offset",
     * "world_size", "backend", "group_name"}}. Joins the group's TCP stand-in at
     * master_address:master_port as rank {@code rank_offset} (a server of one rank); joining a group
     * of the same name again replaces the old connection.
     */
    Http1Server.Response initWeightsUpdateGroup(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        String address = RequestFields.nonEmpty(body, "master_address");
        int port = RequestFields.intField(body, "master_port", 1, 65535);
        int rank = RequestFields.intField(body, "rank_offset", 1, Integer.MAX_VALUE);
        int worldSize = RequestFields.intField(body, "world_size", 2, Integer.MAX_VALUE);
        String group = RequestFields.nonEmpty(body, "group_name");
        JsonNode backend = body.get("backend");
        if (backend != null && !backend.isNull() && !backend.isTextual()) {
            throw new BadRequestException("backend", "backend must be a string such as nccl");
        }
        if (rank >= worldSize) {
            throw new BadRequestException(
                    "rank_offset", "rank_offset " + rank + " must be below world_size " + worldSize);
        }
        WeightGroup joined;
        try {
            joined = WeightGroup.join(address, port, group, rank, worldSize, GROUP_TIMEOUT_MILLIS);
        } catch (IOException e) {
            log.warn("model server {}: joining weight group '{}' failed: {}", server.baseUrl(), group, e.toString());
            return Http1Server.Response.json(
                    500,
                    Json.failureBody("Failed to init weights update group '" + group + "' at " + address + ":" + port
                            + ": " + e.getMessage()));
        }
        WeightGroup old = groups.put(group, joined);
        if (old != null) {
            try {
                old.close();
            } catch (IOException e) {
                log.debug("model server {}: closing replaced group: {}", server.baseUrl(), e.toString());
            }
        }
        log.info(
                "model server {}: joined weight group '{}' as rank {} of {}", server.baseUrl(), group, rank, worldSize);
        return Replies.success("Succeeded to init weights update group '" + group + "' as rank " + rank + ".");
    }

    /**
     * {@code POST /update_weights_from_distributed} (SGLang): {@code {"names", "dtypes", "shapes",
     * "group_name", "flush_cache", "abort_all_requests", "weight_version"}}. Receives the tensors
     * rank 0 broadcasts and loads their bytes as a weight file.
     */
    Http1Server.Response updateWeightsFromDistributed(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        List<WeightGroup.Tensor> tensors = tensors(body);
        String group = RequestFields.nonEmpty(body, "group_name");
        boolean abortAll = false;
        JsonNode abortNode = body.get("abort_all_requests");
        if (abortNode != null && !abortNode.isNull()) {
            if (!abortNode.isBoolean()) {
                throw new BadRequestException("abort_all_requests", "abort_all_requests must be true or false");
            }
            abortAll = abortNode.asBoolean();
        }
        JsonNode flush = body.get("flush_cache");
        if (flush != null && !flush.isNull() && !flush.isBoolean()) {
            throw new BadRequestException("flush_cache", "flush_cache must be true or false");
        }
        OptionalInt version = OptionalInt.empty();
        JsonNode v = body.get("weight_version");
        if (v != null && !v.isNull()) {
            version = OptionalInt.of(RequestFields.parseVersion(v));
        }
        return receiveAndLoad(group, tensors, version, abortAll);
    }

    /** {@code POST /areal_set_update_weight_meta} (AReaL's vLLM extension): the next update's tensors. */
    Http1Server.Response setUpdateWeightMeta(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        pendingMeta = new PendingUpdate(RequestFields.nonEmpty(body, "group_name"), tensors(body));
        return Replies.success("Set the meta of " + pendingMeta.tensors().size() + " tensors.");
    }

    /** {@code POST /areal_update_weights_xccl {}}: receives the tensors announced by the meta call. */
    Http1Server.Response updateWeightsXccl() {
        PendingUpdate meta = pendingMeta;
        if (meta == null) {
            return Http1Server.Response.json(
                    400, Json.failureBody("no tensors announced: send /areal_set_update_weight_meta first"));
        }
        pendingMeta = null;
        return receiveAndLoad(meta.group(), meta.tensors(), OptionalInt.empty(), true);
    }

    Http1Server.Response receiveAndLoad(
            String group, List<WeightGroup.Tensor> tensors, OptionalInt version, boolean abortAll) {
        WeightGroup g = groups.get(group);
        if (g == null) {
            return Http1Server.Response.json(
                    400,
                    Json.failureBody("this server has not joined weight update group '" + group
                            + "' (send /init_weights_update_group first; joined: " + new TreeSet<>(groups.keySet())
                            + ")"));
        }
        byte[] bytes;
        synchronized (g) {
            try {
                bytes = g.receive(tensors);
            } catch (IllegalArgumentException e) {
                log.warn("model server {}: distributed update refused: {}", server.baseUrl(), e.getMessage());
                return Http1Server.Response.json(400, Json.failureBody("distributed weights: " + e.getMessage()));
            } catch (IOException e) {
                groups.remove(group, g);
                try {
                    g.close();
                } catch (IOException closing) {
                    log.debug("model server {}: closing broken group: {}", server.baseUrl(), closing.toString());
                }
                return Http1Server.Response.json(
                        500,
                        Json.failureBody("receiving the broadcast of group '" + group + "' failed (the group is"
                                + " left; join it again): " + e));
            }
        }
        TinyLmWeights served;
        try {
            served = weights.loadWeightBytes(bytes, "distributed-", "distributed weights", version, abortAll);
        } catch (WeightEndpoints.BytesRefused r) {
            return r.response;
        }
        server.setModelPath("distributed:" + group + ":" + bytes.length + "-bytes");
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put(
                "message",
                "Succeeded to update model weights from " + tensors.size() + " tensors of group '" + group
                        + "' (weight version " + served.version() + ").");
        return Replies.ok(o);
    }

    /** The parallel arrays {@code names}, {@code dtypes}, {@code shapes} of a distributed update. */
    private static List<WeightGroup.Tensor> tensors(ObjectNode body) {
        JsonNode names = body.get("names");
        JsonNode dtypes = body.get("dtypes");
        JsonNode shapes = body.get("shapes");
        if (names == null || !names.isArray() || names.isEmpty()) {
            throw new BadRequestException("names", "names must be a non-empty array of tensor names");
        }
        if (dtypes == null || !dtypes.isArray() || dtypes.size() != names.size()) {
            throw new BadRequestException("dtypes", "dtypes must be an array as long as names (" + names.size() + ")");
        }
        if (shapes == null || !shapes.isArray() || shapes.size() != names.size()) {
            throw new BadRequestException("shapes", "shapes must be an array as long as names (" + names.size() + ")");
        }
        List<WeightGroup.Tensor> out = new ArrayList<>(names.size());
        for (int i = 0; i < names.size(); i++) {
            if (!names.get(i).isTextual() || !dtypes.get(i).isTextual()) {
                throw new BadRequestException("names", "names[" + i + "] and dtypes[" + i + "] must be strings");
            }
            try {
                WeightGroup.dtypeSize(dtypes.get(i).asText());
            } catch (IllegalArgumentException e) {
                throw new BadRequestException("dtypes", "dtypes[" + i + "]: " + e.getMessage());
            }
            JsonNode shape = shapes.get(i);
            if (!shape.isArray()) {
                throw new BadRequestException("shapes", "shapes[" + i + "] must be an array of integers >= 0");
            }
            List<Long> dims = new ArrayList<>();
            for (JsonNode d : shape) {
                if (!d.isIntegralNumber() || d.asLong() < 0) {
                    throw new BadRequestException("shapes", "shapes[" + i + "] must be an array of integers >= 0");
                }
                dims.add(d.asLong());
            }
            out.add(new WeightGroup.Tensor(names.get(i).asText(), dtypes.get(i).asText(), dims));
        }
        return out;
    }
}
