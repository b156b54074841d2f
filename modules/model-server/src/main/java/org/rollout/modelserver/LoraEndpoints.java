package org.rollout.modelserver;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.rollout.http.Http1Server;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The LoRA adapters loaded, by name, and the endpoints that load and unload them (docs/model-server.md, "LoRA adapters"). */
final class LoraEndpoints {
    // Logs under the server's name, as the server's lines always have.
    private static final Logger log = LoggerFactory.getLogger(ModelServer.class);

    private final ModelServer server;
    /** Loaded LoRA adapters by name (docs/model-server.md, "LoRA adapters"). */
    private final ConcurrentHashMap<String, LoraAdapter> adapters = new ConcurrentHashMap<>();

    LoraEndpoints(ModelServer server) {
        this.server = server;
    }

    /** The adapter loaded as {@code name}, or null. */
    LoraAdapter adapter(String name) {
        return adapters.get(name);
    }

    /** The names of the adapters loaded, sorted. */
    Set<String> loaded() {
        return new TreeSet<>(adapters.keySet());
    }

    /** {@code POST /load_lora_adapter} (and vLLM's {@code /v1/load_lora_adapter}): {@code {"lora_name", "lora_path"}}. */
    Http1Server.Response loadLora(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        String name = RequestFields.nonEmpty(body, "lora_name");
        String path = RequestFields.nonEmpty(body, "lora_path");
        LoraAdapter adapter;
        try {
            adapter = LoraAdapter.read(Path.of(path));
        } catch (IOException | InvalidPathException e) {
            throw new BadRequestException("lora_path", e.getMessage());
        }
        adapters.put(name, adapter);
        log.info(
                "model server {}: LoRA adapter '{}' (rank {}) loaded from {}",
                server.baseUrl(),
                name,
                adapter.rank(),
                path);
        return Replies.success("Loaded LoRA adapter '" + name + "' (rank " + adapter.rank() + ") from " + path + ".");
    }

    /** {@code POST /unload_lora_adapter} (and vLLM's {@code /v1/unload_lora_adapter}): {@code {"lora_name"}}. */
    Http1Server.Response unloadLora(Http1Server.Request req) {
        ObjectNode body = Json.parseObject(req.body(), req.path());
        String name = RequestFields.nonEmpty(body, "lora_name");
        if (adapters.remove(name) == null) {
            throw new BadRequestException(
                    "lora_name", "lora_name '" + name + "' is not a loaded LoRA adapter (loaded: " + loaded() + ")");
        }
        return Replies.success("Unloaded LoRA adapter '" + name + "'.");
    }
}
