package org.rollout.trainer;

import java.net.URI;

/**
 * A trainer gateway answered a request with an error that retrying cannot cure: a missing or wrong
 * token (401), a malformed request (400), an unknown endpoint (404), or the engine's own failure
 * (500). The message names the call, the gateway, the status, the gateway's error code and its
 * message.
 */
public class GatewayRequestException extends RuntimeException {
    private final URI gateway;
    private final int status;
    private final String code;

    public GatewayRequestException(String what, URI gateway, int status, String code, String message) {
        super("could not " + what + ": the trainer gateway at " + gateway + " answered HTTP " + status + " " + code
                + ": " + message);
        this.gateway = gateway;
        this.status = status;
        this.code = code;
    }

    /** The contact point that answered. */
    public URI gateway() {
        return gateway;
    }

    /** The HTTP status. */
    public int status() {
        return status;
    }

    /** The gateway's error code ({@code unauthorized}, {@code bad_request}, …). */
    public String code() {
        return code;
    }
}
