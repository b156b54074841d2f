package org.rollout.inference;

import java.nio.file.Path;
import java.util.Objects;

/**
 * One control-plane HTTP call to a server: pause, continue, abort, health, weight update
 * (docs/protocol.md). Built by a {@link ServerProtocol}; sent by {@link WeightUpdater} and the engine.
 *
 * @param method {@code GET} or {@code POST}
 * @param path the endpoint, starting with {@code /}
 * @param body the JSON body for {@code POST}, empty for {@code GET} and for a file's bytes
 * @param file for a {@code POST} of a file's bytes ({@code application/octet-stream}, streamed from
 *     disk as sent), else null
 */
public record ControlCall(String method, String path, String body, Path file) {

    public ControlCall {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(body, "body");
        if (!method.equals("GET") && !method.equals("POST")) {
            throw new IllegalArgumentException("method must be GET or POST, not " + method);
        }
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("path must start with /: " + path);
        }
    }

    /** A {@code POST} of the JSON text {@code body}. */
    public static ControlCall post(String path, String body) {
        return new ControlCall("POST", path, body, null);
    }

    /** A {@code POST} of the bytes of {@code file}, read as the request is sent. */
    public static ControlCall postFile(String path, Path file) {
        return new ControlCall("POST", path, "", Objects.requireNonNull(file, "file"));
    }

    /** A {@code GET} without a body. */
    public static ControlCall get(String path) {
        return new ControlCall("GET", path, "", null);
    }

    /** {@code POST /path {body}}, for logs and error messages. */
    @Override
    public String toString() {
        return method + " " + path + (file != null ? " <bytes of " + file + ">" : body.isEmpty() ? "" : " " + body);
    }
}
