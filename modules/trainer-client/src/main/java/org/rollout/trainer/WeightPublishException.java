package org.rollout.trainer;

/** A weight publish that was refused (stale version) or that no server could apply. */
public class WeightPublishException extends RuntimeException {
    public WeightPublishException(String message) {
        super(message);
    }
}
