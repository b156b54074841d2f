package org.rollout.agent;

/**
 * The proxy's own refusals, in OpenAI's shape ({@link OpenAIError}): an unknown URL, a wrong method, a
 * session that is not open or closed mid-request, a body over {@code max_request_bytes}, shutdown.
 */
final class ProxyErrors {
    private ProxyErrors() {}

    static OpenAIError unknownUrl(String method, String path) {
        return new OpenAIError(
                404,
                "invalid_request_error",
                null,
                "unknown_url",
                "Unknown request URL: " + method + " " + path + ". Completions are served under /s/{session}/v1/.");
    }

    static void requireMethod(String method, String allowed, String path) throws OpenAIError {
        if (!method.equals(allowed)) {
            throw new OpenAIError(
                    405,
                    "invalid_request_error",
                    null,
                    "method_not_allowed",
                    "Method " + method + " is not allowed on " + path + "; use " + allowed + ".");
        }
    }

    static OpenAIError shuttingDown() {
        return new OpenAIError(503, "server_error", null, "shutting_down", "The proxy is shutting down.");
    }

    static OpenAIError sessionNotFound(String id) {
        return new OpenAIError(
                404,
                "invalid_request_error",
                null,
                "session_not_found",
                "No open session '" + id + "' on this proxy: it was never opened or its episode has ended.");
    }

    static OpenAIError sessionClosedDuring(ProxySession session) {
        return new OpenAIError(
                404,
                "invalid_request_error",
                null,
                "session_not_found",
                "Session '" + session.id() + "' was closed (its episode ended) while this request was running.");
    }

    static OpenAIError tooLarge(int max) {
        return new OpenAIError(
                413,
                "invalid_request_error",
                null,
                "request_too_large",
                "The request body is larger than " + max + " bytes (max_request_bytes).");
    }
}
