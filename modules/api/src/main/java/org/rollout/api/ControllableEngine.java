package org.rollout.api;

/**
 * A node's inference engine as the runtime drives it: the workflow-facing {@link InferenceEngine}
 * plus the three controls a weight update needs (AReaL's executor {@code pause()}/{@code resume()}
 * and {@code set_version}, semantics §6.9).
 *
 * <p>{@link #pause()} closes the client-side gate: generations in flight finish their current
 * segment (servers abort it during the update) and send no new segment until {@link #resume()}.
 * {@link #setVersion(int)} must be called before {@code resume()} so that the next segments are
 * pinned to the new version (semantics §2.3). Thread-safe.
 */
public interface ControllableEngine extends InferenceEngine {

    /** Stops sending new segments until {@link #resume()}. Idempotent. */
    void pause();

    /** Lets segments be sent again. Idempotent. */
    void resume();

    /**
     * Sets the version that new segments are pinned to.
     *
     * @throws IllegalArgumentException when {@code version} is below the current one
     */
    void setVersion(int version);

    /**
     * Tells the engine where the weights of {@code version} are, loaded on the servers by whichever
     * node ran the update: an engine that re-syncs a restarted server sends it these, even when
     * it never loaded an update itself. Engines without servers to re-sync ignore it.
     */
    default void weightsPublished(int version, String path) {}
}
