package org.rollout.agent;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * The proxy's key check: a session's key (or the admin key) as {@code Authorization: Bearer <key>},
 * or as Anthropic's {@code x-api-key: <key>}; compared in constant time.
 */
final class ProxyAuth {
    private ProxyAuth() {}

    /**
     * @param what the key expected, as the 401 names it (e.g. "the API key of session 'x'")
     * @throws OpenAIError 401 {@code invalid_api_key} when the key is missing or wrong
     */
    static void requireKey(ProxyExchange ex, String expected, String what) throws OpenAIError {
        String header = ex.header("Authorization");
        String apiKeyHeader = ex.header("x-api-key");
        if ((header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) && apiKeyHeader != null) {
            // Anthropic's clients send the key as x-api-key.
            header = "Bearer " + apiKeyHeader;
        }
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            throw new OpenAIError(
                    401,
                    "invalid_request_error",
                    null,
                    "invalid_api_key",
                    "You didn't provide an API key: send " + what + " as 'Authorization: Bearer <key>'"
                            + " (or as 'x-api-key: <key>').");
        }
        String given = header.substring(7).trim();
        if (!MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), expected.getBytes(StandardCharsets.UTF_8))) {
            throw new OpenAIError(
                    401,
                    "invalid_request_error",
                    null,
                    "invalid_api_key",
                    "Incorrect API key provided: expected " + what + ".");
        }
    }
}
