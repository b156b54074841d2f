package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.cluster.TestRollout.await;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.AcceptFilter;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;
import org.rollout.config.InferenceConfig;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.GroupOptions;
import org.rollout.core.StalenessBudget;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * "When a slot throws, the GroupActor stops its siblings at once and their generation
 * requests are aborted on the server (test it: the server sees the abort)." Real HTTP to a real
 * built-in model server whose decoding is slowed so the siblings are mid-generation.
 */
class SiblingCancellationOnModelServerTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @Test
    void whenASlotThrowsTheServerSeesItsSiblingsGenerationsAborted() throws Exception {
        try (ModelServer server = ModelServer.start(ModelServerConfig.defaults()
                        .withPort(0)
                        .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(20), Duration.ZERO)));
                RemoteInferenceEngine engine = new RemoteInferenceEngine(InferenceConfig.builder()
                        .addresses("127.0.0.1:" + server.port())
                        .build())) {
            engine.initialize();
            GenerationConfig g = GenerationConfig.builder()
                    .nSamples(4)
                    .maxNewTokens(2000)
                    .ignoreEos(true)
                    .build();
            RolloutWorkflow workflow = (e, data) -> {
                if (WorkflowContext.current().sampleIdx().orElseThrow() == 0) {
                    await(
                            "the three siblings to be generating on the server",
                            DEADLINE,
                            () -> server.stats().running() == 3);
                    throw new IllegalStateException("the reward service is down");
                }
                e.generate(ModelRequest.of(new int[] {'h', 'i'}, g.withNSamples(1)));
                throw new AssertionError("a 2000-token generation at 20 ms per token was not cancelled");
            };
            NodeServices svc = new NodeServices(
                    RemoteEngines.controllable(engine),
                    workflow,
                    workflow,
                    GroupOptions.from(g, 1),
                    new GroupOptions(4, 4, false, false, true),
                    AcceptFilter.all(),
                    null,
                    null,
                    StalenessPolicy.ADMISSION,
                    0,
                    Duration.ofMinutes(5),
                    HttpClient.newHttpClient(),
                    NodeServices.virtualThreads());
            LocalRollout.Spec spec = new LocalRollout.Spec(
                    svc,
                    new StalenessBudget(4, 1, 0),
                    new GeneratedPromptSource(i -> Map.of("prompt", "p"), 1),
                    List.of(),
                    0,
                    1,
                    16,
                    RemoteEngines.publisher(engine),
                    0,
                    4,
                    Duration.ofMinutes(5),
                    Duration.ofSeconds(10),
                    Duration.ofSeconds(60),
                    null);
            long abortedBefore = server.stats().requestsAborted();
            try (LocalRollout rollout = LocalRollout.start(spec, TestRollout.PEKKO)) {
                await(
                        "the group to be rejected as failed",
                        DEADLINE,
                        () -> status(rollout).rejectedByReason().getOrDefault("failed", 0L) == 1);
                await(
                        "the server to see three aborts and nothing left running",
                        DEADLINE,
                        () -> server.stats().requestsAborted() - abortedBefore == 3
                                && server.stats().running() == 0);
            }
            assertThat(server.stats().requestsFinished()).isZero();
        }
    }

    private static org.rollout.trainer.RolloutStatus status(LocalRollout rollout) {
        try {
            return rollout.client().status();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
