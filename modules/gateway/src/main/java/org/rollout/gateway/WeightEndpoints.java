package org.rollout.gateway;

import java.io.IOException;
import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.rollout.http.Http1Server.Exchange;
import org.rollout.http.Http1Server.Request;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.WeightPublishException;
import org.rollout.trainer.wire.GatewayJson;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The weight publish endpoint, {@code POST /v1/weights}, in its three forms: a path the servers read
 * ({@code {"version", "path"}}), a tensor manifest for an NCCL broadcast ({@code {"version",
 * "tensors"}}), or the weight file's bytes ({@code ?version=N}, application/octet-stream) spooled on
 * this node. Each answers 200, 409 (refused by fencing) or 502 (not loaded).
 */
final class WeightEndpoints {
    // Logs under the handler's name, as the gateway's lines always have.
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);

    private final RolloutClient engine;

    /** The upload spool: uploaded weight files until a newer upload is published. */
    private final Path spool = Path.of(System.getProperty("java.io.tmpdir"), "rollout-gateway-uploads");

    /** The last upload published, kept: servers that restart are re-synced from it. */
    private Path lastUpload;

    WeightEndpoints(RolloutClient engine) {
        this.engine = engine;
    }

    /** Whether the request is a weight file's bytes (application/octet-stream), not JSON. */
    static boolean isUpload(Request req) {
        String type = req.header("Content-Type");
        return type != null && type.toLowerCase(Locale.ROOT).startsWith("application/octet-stream");
    }

    void publish(Exchange ex, byte[] body) throws Refusal, IOException, InterruptedException {
        GatewayJson.PublishRequest request;
        Path path;
        try {
            request = GatewayJson.parsePublishRequest(body);
            if (request.tensors() != null) {
                publishTensors(ex, request);
                return;
            }
            path = Path.of(request.path());
        } catch (IllegalArgumentException e) { // also InvalidPathException
            throw new Refusal(400, "bad_request", e.getMessage());
        }
        if (!path.isAbsolute()) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "publish request: field 'path' must be absolute, got '" + request.path()
                            + "' (the servers read the file; a relative path would resolve against the engine's"
                            + " working directory)");
        }
        PublishResult result;
        try {
            result = engine.publishWeights(request.version(), path);
        } catch (WeightPublishException e) {
            if (refused(e, request.version())) {
                throw new Refusal(409, "version_refused", e.getMessage());
            }
            throw new Refusal(502, "weights_not_loaded", e.getMessage());
        }
        GatewayHttp.json(ex, 200, GatewayJson.publishResult(result));
    }

    /**
     * {@code POST /v1/weights {"version", "tensors"}} ({@code weight_transfer = nccl}): writes the
     * tensors' names, dtypes and shapes as a manifest file in the spool on this node and publishes
     * that file as the version, with the path publish's fencing and answers; the engine reads the
     * manifest and tells the servers to receive those tensors from the trainer's broadcast.
     */
    private void publishTensors(Exchange ex, GatewayJson.PublishRequest request)
            throws Refusal, IOException, InterruptedException {
        int version = request.version();
        Files.createDirectories(spool);
        Path file = Files.createTempFile(spool, "v" + version + "-", ".tensors.json");
        boolean published = false;
        try {
            Files.write(file, GatewayJson.tensorManifest(request.tensors()));
            PublishResult result = publish(version, file);
            published = true;
            keep(file);
            GatewayHttp.json(ex, 200, GatewayJson.publishResult(result));
        } finally {
            if (!published) {
                Files.deleteIfExists(file);
            }
        }
    }

    /** Publishes {@code file} as {@code version}: 409 when fenced, 502 when no server loaded it. */
    private PublishResult publish(int version, Path file) throws Refusal, InterruptedException {
        try {
            return engine.publishWeights(version, file);
        } catch (WeightPublishException e) {
            if (refused(e, version)) {
                throw new Refusal(409, "version_refused", e.getMessage());
            }
            throw new Refusal(502, "weights_not_loaded", e.getMessage());
        }
    }

    /**
     * {@code POST /v1/weights?version=N} with the weight file's bytes: streams them to a file in the
     * spool on this node and publishes that file as {@code N}, with the path publish's fencing and
     * answers. A failed publish deletes its file; a successful one deletes the previous upload.
     */
    void upload(Request req, Exchange ex) throws Refusal, IOException, InterruptedException {
        int version = versionOf(req.query());
        Files.createDirectories(spool);
        Path file = Files.createTempFile(spool, "v" + version + "-", ".weights");
        boolean published = false;
        try {
            long bytes;
            try (InputStream in = req.bodyStream()) {
                bytes = Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            }
            if (bytes == 0) {
                throw new Refusal(
                        400, "bad_request", "weight upload: the body is empty (send the weight file's bytes)");
            }
            PublishResult result = publish(version, file);
            published = true;
            log.info("weight upload: {} bytes published as version {} from {}", bytes, version, file);
            keep(file);
            GatewayHttp.json(ex, 200, GatewayJson.publishResult(result));
        } finally {
            if (!published) {
                Files.deleteIfExists(file);
            }
        }
    }

    /** Keeps {@code file}, just published, as the last upload, deleting the one before. */
    private synchronized void keep(Path file) throws IOException {
        if (lastUpload != null) {
            Files.deleteIfExists(lastUpload);
        }
        lastUpload = file;
    }

    private static int versionOf(String rawQuery) throws Refusal {
        String value = null;
        for (String pair : rawQuery == null ? new String[0] : rawQuery.split("&")) {
            int eq = pair.indexOf('=');
            String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            if (name.equals("version")) {
                value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            } else if (!name.isEmpty()) {
                throw new Refusal(400, "bad_request", "weight upload: unknown query parameter '" + name + "'");
            }
        }
        if (value == null || !value.matches("\\d{1,9}")) {
            throw new Refusal(
                    400,
                    "bad_request",
                    "weight upload: query parameter 'version' must be an integer >= 0, got "
                            + (value == null ? "none" : "'" + value + "'"));
        }
        return Integer.parseInt(value);
    }

    /**
     * Whether a failed publish was refused by fencing. An engine client that does not say is judged
     * by the engine's version now: versions never go back, so a fencing refusal of {@code version}
     * leaves the engine at {@code version} or above, while a load failure leaves it below (unless
     * another publish overtook it, and then publishing {@code version} can never succeed either).
     */
    private boolean refused(WeightPublishException e, int version) throws InterruptedException {
        return switch (e.kind()) {
            case REFUSED -> true;
            case NOT_LOADED -> false;
            case UNSPECIFIED -> engine.status().version() >= version;
        };
    }
}
