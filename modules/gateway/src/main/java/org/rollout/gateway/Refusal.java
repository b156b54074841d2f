package org.rollout.gateway;

/**
 * An answer other than success, with its status and stable code: sent as {@code {"error": {"message",
 * "code"}}}, with {@code Allow} when {@code allow} is set (405).
 */
final class Refusal extends Exception {
    /** The code of a pull refused because {@code gateway.max_waiting_pulls} are under way (503, Retry-After). */
    static final String TOO_MANY_PULLS = "too_many_pulls";

    final int status;
    final String code;
    final String allow;

    Refusal(int status, String code, String message) {
        this(status, code, message, null);
    }

    Refusal(int status, String code, String message, String allow) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
        this.allow = allow;
    }
}
