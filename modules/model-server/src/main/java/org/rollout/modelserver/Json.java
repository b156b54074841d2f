package org.rollout.modelserver;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;

/** The server's one ObjectMapper and the shapes of its error bodies. Thread-safe. */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}

    static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    static byte[] bytes(JsonNode node) {
        try {
            return MAPPER.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree always serialises", e);
        }
    }

    /** {@code {"error": {"message": …, "code": status}}}, SGLang's error shape for /generate. */
    static byte[] errorBody(int status, String message) {
        ObjectNode root = object();
        ObjectNode error = root.putObject("error");
        error.put("message", message);
        error.put("code", status);
        return bytes(root);
    }

    /** {@code {"success": false, "message": …}}, the shape of a failed control request. */
    static byte[] failureBody(String message) {
        ObjectNode root = object();
        root.put("success", false);
        root.put("message", message);
        return bytes(root);
    }

    /**
     * Parses a request body that must be a JSON object; an empty body is {@code {}}.
     *
     * @throws BadRequestException naming the path when it is not JSON or not an object
     */
    static ObjectNode parseObject(byte[] body, String path) {
        if (body.length == 0) {
            return object();
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(body);
        } catch (IOException e) {
            throw new BadRequestException(
                    "body",
                    "the body of " + path + " is not valid JSON: "
                            + (e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.toString()));
        }
        if (node == null || node.isMissingNode()) {
            return object();
        }
        if (!(node instanceof ObjectNode o)) {
            throw new BadRequestException(
                    "body", "the body of " + path + " must be a JSON object, got " + node.getNodeType());
        }
        return o;
    }
}
