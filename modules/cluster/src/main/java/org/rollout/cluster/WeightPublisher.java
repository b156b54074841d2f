package org.rollout.cluster;

import java.nio.file.Path;
import org.rollout.trainer.PublishResult;

/**
 * Makes every inference server load a weight file: pause → update from disk → continue, with
 * continue always sent (semantics §6.9, §9.3). The weight version actor calls it from a virtual thread, so
 * it may block. Implemented over the inference module's {@code WeightUpdater}; tests use fakes.
 */
@FunctionalInterface
public interface WeightPublisher {

    /**
     * Loads {@code weights} on every server as {@code version}.
     *
     * @return what happened on each server; never throws for a per-server failure
     */
    PublishResult update(Path weights, int version) throws Exception;
}
