package org.rollout.trainer;

import java.net.URI;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * No contact point answered a call within {@code retry_deadline}: every gateway was down,
 * unreachable, or answered 503. The message names what the call was for, every contact point and
 * its last error; {@link #lastErrors()} holds the same, in contact-point order.
 */
public class EngineUnreachableException extends RuntimeException {
    private final Map<URI, String> lastErrors;

    public EngineUnreachableException(String what, Duration retried, Map<URI, String> lastErrors) {
        super(message(what, retried, lastErrors));
        this.lastErrors = Collections.unmodifiableMap(new LinkedHashMap<>(lastErrors));
    }

    /** Contact point → its last error, in the order they were configured. */
    public Map<URI, String> lastErrors() {
        return lastErrors;
    }

    private static String message(String what, Duration retried, Map<URI, String> lastErrors) {
        StringBuilder sb = new StringBuilder("could not ")
                .append(what)
                .append(": no trainer gateway answered after retrying for ")
                .append(retried.toMillis())
                .append(" ms (retry_deadline)");
        lastErrors.forEach(
                (uri, error) -> sb.append("; ").append(uri).append(" → ").append(error));
        return sb.toString();
    }
}
