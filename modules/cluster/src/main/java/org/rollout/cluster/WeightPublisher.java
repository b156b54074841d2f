package org.rollout.cluster;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * Makes every inference server load a weight file: pause → update from disk → continue, with
 * continue always sent (§6.9, §9.3). The weight version actor calls it from a virtual thread, so
 * it may block. Implemented over the inference module's {@code WeightUpdater}; tests use fakes.
 */
@FunctionalInterface
public interface WeightPublisher {

    /**
     * Loads {@code weights} on every server as {@code version}.
     *
     * @return what happened on each server; never throws for a per-server failure
     */
    Report update(Path weights, int version) throws Exception;

    /**
     * The outcome of one update: how many servers loaded it and why the others did not.
     *
     * @param elapsed wall time of the whole fan-out
     * @param serversUpdated servers that loaded the weights
     * @param failures address → reason, for the servers that did not
     */
    record Report(Duration elapsed, int serversUpdated, Map<String, String> failures) {
        public Report {
            failures = Map.copyOf(failures);
        }

        /** True when at least one server took the weights, or there are no servers at all. */
        public boolean applied() {
            return serversUpdated > 0 || failures.isEmpty();
        }
    }
}
