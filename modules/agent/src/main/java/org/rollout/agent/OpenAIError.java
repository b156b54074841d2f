package org.rollout.agent;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * An error the proxy answers with, in OpenAI's shape: an HTTP status and the body {@code {"error":
 * {"message", "type", "param", "code"}}}.
 *
 * <pre>
 *   status  type                    code                      when
 *   400     invalid_request_error   (none) / unsupported_…   a malformed body; param names the field
 *   400     invalid_request_error   context_length_exceeded   the prompt leaves no token budget
 *   401     invalid_request_error   invalid_api_key           missing or wrong Bearer key
 *   404     invalid_request_error   session_not_found         unknown or closed session
 *   404     invalid_request_error   unknown_url               no such route
 *   405     invalid_request_error   method_not_allowed        wrong HTTP method for the route
 *   409     invalid_request_error   reward_already_set        a second reward for an online session
 *   413     invalid_request_error   request_too_large         body over max_request_bytes
 *   500     server_error            engine_error              the inference engine failed
 *   503     server_error            shutting_down             the proxy is closing
 * </pre>
 *
 * <p>Immutable. The message names what is wrong and never embeds a whole request body.
 */
public final class OpenAIError extends Exception {
    private final int status;
    private final String type;
    private final String param;
    private final String code;

    public OpenAIError(int status, String type, String param, String code, String message) {
        super(Objects.requireNonNull(message, "message"));
        this.status = status;
        this.type = Objects.requireNonNull(type, "type");
        this.param = param;
        this.code = code;
    }

    /** 400 {@code invalid_request_error} about {@code param} (null when no single field is at fault). */
    public static OpenAIError invalid(String param, String message) {
        return new OpenAIError(400, "invalid_request_error", param, null, message);
    }

    /** 400 {@code invalid_request_error} with a code, e.g. {@code unsupported_value}. */
    public static OpenAIError invalid(String param, String code, String message) {
        return new OpenAIError(400, "invalid_request_error", param, code, message);
    }

    public int status() {
        return status;
    }

    public String type() {
        return type;
    }

    /** The request field at fault, or null. */
    public String param() {
        return param;
    }

    /** A machine-readable code, or null. */
    public String code() {
        return code;
    }

    /** {@code {"error": {"message", "type", "param", "code"}}}. */
    public Map<String, Object> body() {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("message", getMessage());
        error.put("type", type);
        error.put("param", param);
        error.put("code", code);
        return Map.of("error", error);
    }

    @Override
    public String toString() {
        return "OpenAIError{" + status + " " + type + (code == null ? "" : "/" + code)
                + (param == null ? "" : " param=" + param) + ": " + getMessage() + "}";
    }
}
