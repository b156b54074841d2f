package org.rollout.modelserver;

/** A request the server refuses with HTTP 400; the message names the offending field. */
final class BadRequestException extends RuntimeException {
    private final String field;

    BadRequestException(String field, String message) {
        super(message);
        this.field = field;
    }

    /** The field, in the request's own spelling (e.g. {@code sampling_params.temperature}). */
    String field() {
        return field;
    }
}
