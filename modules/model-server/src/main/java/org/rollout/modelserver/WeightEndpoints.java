package org.rollout.modelserver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;
import org.rollout.http.Http1Server;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The weight update endpoints that load a weight file: {@code /update_weights_from_disk} (SGLang),
 * {@code /areal_update_weights} (AReaL's vLLM extension), {@code /update_weights_from_bytes} (the
 * file's bytes in the body) and upstream vLLM's {@code /collective_rpc reload_weights}. A refused
 * file is a 400 naming its defect; the served weights are then unchanged.
 */
final class WeightEndpoints {
    // Logs under the server's name, as the server's lines always have.
    private static final Logger log = LoggerFactory.getLogger(ModelServer.class);

    private final ModelServer server;

    WeightEndpoints(ModelServer server) {
        this.server = server;
    }

    Http1Server.Response updateWeights(Http1Server.Request req, boolean vllm) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        JsonNode pathNode = body.get("model_path");
        if (pathNode == null || !pathNode.isTextual() || pathNode.asText().isEmpty()) {
            throw new BadRequestException("model_path", "model_path must be a non-empty string (a weight file)");
        }
        boolean abortAll = vllm;
        JsonNode abortNode = body.get("abort_all_requests");
        if (abortNode != null && !abortNode.isNull()) {
            if (!abortNode.isBoolean()) {
                throw new BadRequestException("abort_all_requests", "abort_all_requests must be true or false");
            }
            abortAll = abortNode.asBoolean();
        }
        OptionalInt version = OptionalInt.empty();
        JsonNode v = body.get("weight_version");
        if (v != null && !v.isNull()) {
            version = OptionalInt.of(RequestFields.parseVersion(v));
        }
        Path path = Path.of(pathNode.asText());
        TinyLmWeights served;
        try {
            served = server.updateWeightsFromDisk(path, version, abortAll);
        } catch (WeightFileException e) {
            log.warn("model server {}: weight update refused: {}", server.baseUrl(), e.getMessage());
            return Http1Server.Response.json(400, Json.failureBody(e.getMessage()));
        } catch (IOException e) {
            return Http1Server.Response.json(500, Json.failureBody(e.getMessage()));
        }
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put(
                "message",
                "Succeeded to update model weights from " + path.toAbsolutePath() + " (weight version "
                        + served.version() + ").");
        o.put("num_paused_requests", 0);
        return Replies.ok(o);
    }

    /**
     * {@code POST /update_weights_from_bytes?weight_version=N&abort_all_requests=true}: the body is
     * a weight file's bytes (docs/model-server.md). They are written to a file of this server's own
     * (under the JVM's temporary directory), loaded as from disk, and the file deleted: the sender
     * needs no disk in common with the server.
     */
    Http1Server.Response updateWeightsFromBytes(Http1Server.Request req) {
        OptionalInt version = OptionalInt.empty();
        boolean abortAll = false;
        for (String pair : req.query().isEmpty() ? new String[0] : req.query().split("&")) {
            int eq = pair.indexOf('=');
            String name = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            switch (name) {
                case "weight_version" -> version = OptionalInt.of(RequestFields.parseVersion(TextNode.valueOf(value)));
                case "abort_all_requests" -> {
                    if (!value.equals("true") && !value.equals("false")) {
                        throw new BadRequestException("abort_all_requests", "abort_all_requests must be true or false");
                    }
                    abortAll = Boolean.parseBoolean(value);
                }
                default -> throw new BadRequestException(name, "unknown query parameter '" + name + "'");
            }
        }
        if (req.body().length == 0) {
            throw new BadRequestException("body", "the body must be a weight file's bytes, got none");
        }
        TinyLmWeights served;
        try {
            served = loadWeightBytes(req.body(), "weights-", "uploaded weights", version, abortAll);
        } catch (BytesRefused r) {
            return r.response;
        }
        server.setModelPath("upload:" + req.body().length + "-bytes");
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put(
                "message",
                "Succeeded to update model weights from " + req.body().length + " uploaded bytes (weight version "
                        + served.version() + ").");
        o.put("num_paused_requests", 0);
        return Replies.ok(o);
    }

    /** A reply that refuses weights received as bytes, in place of the weights. */
    static final class BytesRefused extends Exception {
        final Http1Server.Response response;

        BytesRefused(Http1Server.Response response) {
            super(null, null, false, false);
            this.response = response;
        }
    }

    /**
     * Weights received as bytes (an upload, a group's broadcast), stored in a temporary file and
     * loaded as a weight file is; {@code what} names them in the log and in the refusal.
     */
    TinyLmWeights loadWeightBytes(byte[] bytes, String filePrefix, String what, OptionalInt version, boolean abortAll)
            throws BytesRefused {
        Path file;
        try {
            Path dir = Files.createDirectories(
                    Path.of(System.getProperty("java.io.tmpdir"), "rollout-model-server-uploads"));
            file = Files.createTempFile(dir, filePrefix, ".rlm");
            Files.write(file, bytes);
        } catch (IOException e) {
            throw new BytesRefused(
                    Http1Server.Response.json(500, Json.failureBody("cannot store the " + what + ": " + e)));
        }
        try {
            return server.updateWeightsFromDisk(file, version, abortAll);
        } catch (WeightFileException e) {
            log.warn("model server {}: {} refused: {}", server.baseUrl(), what, e.getMessage());
            throw new BytesRefused(Http1Server.Response.json(400, Json.failureBody(what + ": " + e.getMessage())));
        } catch (IOException e) {
            throw new BytesRefused(Http1Server.Response.json(500, Json.failureBody(e.getMessage())));
        } finally {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                log.warn("model server {}: could not delete {}: {}", server.baseUrl(), file, e.toString());
            }
        }
    }

    /**
     * Upstream vLLM {@code POST /collective_rpc}: of the worker methods, {@code reload_weights}
     * with {@code kwargs.weights_path} (the weight file, loaded as from disk, nothing aborted).
     */
    Http1Server.Response collectiveRpc(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        JsonNode method = body.get("method");
        if (method == null || !method.isTextual()) {
            throw new BadRequestException("method", "Missing 'method' in request body");
        }
        if (!method.asText().equals("reload_weights")) {
            throw new BadRequestException(
                    "method", "method '" + method.asText() + "' is not served by the built-in server: reload_weights");
        }
        JsonNode path = body.path("kwargs").get("weights_path");
        if (path == null || !path.isTextual() || path.asText().isEmpty()) {
            throw new BadRequestException("kwargs.weights_path", "kwargs.weights_path must be a non-empty string");
        }
        try {
            server.updateWeightsFromDisk(Path.of(path.asText()), OptionalInt.empty(), false);
        } catch (WeightFileException e) {
            log.warn("model server {}: weight reload refused: {}", server.baseUrl(), e.getMessage());
            return Http1Server.Response.json(400, Json.failureBody(e.getMessage()));
        } catch (IOException e) {
            return Http1Server.Response.json(500, Json.failureBody(e.getMessage()));
        }
        ObjectNode o = Json.object();
        o.putArray("results").addNull();
        return Replies.ok(o);
    }
}
