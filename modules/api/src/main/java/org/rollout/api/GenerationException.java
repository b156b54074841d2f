package org.rollout.api;

/**
 * A generation that could not be completed: every attempt on every eligible server failed, or a
 * server answered with something that is not a valid response. The message names the server,
 * the request id and what went wrong; it never embeds the whole payload.
 */
public class GenerationException extends RuntimeException {
    public GenerationException(String message) {
        super(message);
    }

    public GenerationException(String message, Throwable cause) {
        super(message, cause);
    }
}
