package org.rollout.trainer;

import java.util.Objects;

/**
 * A weight publish that was refused (stale version) or that no server could apply.
 *
 * <p>{@link #kind()} tells the two apart when the client knows: a {@link Kind#REFUSED} publish can
 * never succeed with the same version (pick a newer one, or find out who published it); a {@link
 * Kind#NOT_LOADED} one failed on the servers and left the version unchanged, so the same version may
 * be published again once the servers can load it. {@link Kind#UNSPECIFIED} is what the one-argument
 * constructor gives, for clients that do not classify.
 */
public class WeightPublishException extends RuntimeException {

    /** Why a publish failed. */
    public enum Kind {
        /** Fencing: the version is not newer than the engine's current version (HTTP 409). */
        REFUSED,
        /** No inference server loaded the weights; the version is unchanged (HTTP 502). */
        NOT_LOADED,
        /** The client did not say. */
        UNSPECIFIED
    }

    private final Kind kind;

    public WeightPublishException(String message) {
        this(Kind.UNSPECIFIED, message);
    }

    public WeightPublishException(Kind kind, String message) {
        super(message);
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    /** Why the publish failed, when the client knows. */
    public Kind kind() {
        return kind;
    }
}
