package org.rollout.cluster;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.rollout.api.ControllableEngine;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.ScoredTokens;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.WeightUpdateException;
import org.rollout.inference.WeightUpdateReport;
import org.rollout.trainer.PublishResult;

/**
 * Connects the inference module's {@link RemoteInferenceEngine} to the runtime: as the node's
 * {@link ControllableEngine}, and as the {@link WeightPublisher} of a one-node engine, where the
 * node's own engine fans the update out to its servers (and keeps servers that failed it out of
 * rotation until they are re-synced).
 */
public final class RemoteEngines {
    private RemoteEngines() {}

    /** The engine as the runtime drives it. */
    public static ControllableEngine controllable(RemoteInferenceEngine engine) {
        return new ControllableEngine() {
            @Override
            public ModelResponse generate(ModelRequest request) throws InterruptedException {
                return engine.generate(request);
            }

            @Override
            public ScoredTokens score(int[] tokens, GenerationConfig gconfig) throws InterruptedException {
                return engine.score(tokens, gconfig);
            }

            @Override
            public int version() {
                return engine.version();
            }

            @Override
            public void pause() {
                engine.pause();
            }

            @Override
            public void resume() {
                engine.resume();
            }

            @Override
            public void setVersion(int version) {
                engine.setVersion(version);
            }

            @Override
            public void weightsPublished(int version, String path) {
                if (path != null && !path.isEmpty()) {
                    engine.weightsLoadedElsewhere(Path.of(path), version);
                }
            }

            @Override
            public String toString() {
                return "ControllableEngine(" + engine + ")";
            }
        };
    }

    /**
     * Publishes through {@code engine.updateWeights}: pause every server, load, continue (always),
     * then set the engine's version. No server loading the weights is a report with no server
     * updated, which the weight version treats as a failed publish.
     */
    public static WeightPublisher publisher(RemoteInferenceEngine engine) {
        return (weights, version) -> {
            try {
                return toReport(engine.updateWeights(weights, version));
            } catch (WeightUpdateException e) {
                return toReport(e.report());
            }
        };
    }

    static PublishResult toReport(WeightUpdateReport report) {
        Map<String, String> failures = new LinkedHashMap<>();
        int updated = 0;
        for (WeightUpdateReport.ServerOutcome o : report.servers()) {
            if (o.loaded()) {
                updated++;
            }
            if (!o.ok()) {
                failures.put(o.server().toString(), String.join("; ", o.errors()));
            }
        }
        return new PublishResult(report.version(), report.elapsed(), updated, failures);
    }
}
