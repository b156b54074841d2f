package org.rollout.modelserver;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.rollout.http.Http1Server;

/** The model server's success answers: a JSON object with 200, or SGLang's {@code {"success": true, "message"}}. */
final class Replies {
    private Replies() {}

    static Http1Server.Response ok(ObjectNode body) {
        return Http1Server.Response.json(200, Json.bytes(body));
    }

    static Http1Server.Response success(String message) {
        ObjectNode o = Json.object();
        o.put("success", true);
        o.put("message", message);
        return ok(o);
    }
}
