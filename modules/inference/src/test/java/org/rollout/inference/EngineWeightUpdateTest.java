package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.FakeInferenceServer.after;
import static org.rollout.inference.FakeInferenceServer.json;
import static org.rollout.inference.FakeInferenceServer.sglang;
import static org.rollout.inference.FakeInferenceServer.sglangFillBudget;
import static org.rollout.inference.FakeInferenceServer.when;
import static org.rollout.inference.TestSupport.await;
import static org.rollout.inference.TestSupport.concat;
import static org.rollout.inference.TestSupport.config;
import static org.rollout.inference.TestSupport.engine;
import static org.rollout.inference.TestSupport.range;
import static org.rollout.inference.TestSupport.repeat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;

/** {@link RemoteInferenceEngine#updateWeights}: the training-step order of semantics §6.9 and stale servers. */
class EngineWeightUpdateTest {
    private static final int[] PROMPT = {257, 1, 2};
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Path V4 = Path.of("/ckpt/v4");
    private static final String OK = "{\"success\":true}";

    private final FakeInferenceServer a = FakeInferenceServer.start();
    private final FakeInferenceServer b = FakeInferenceServer.start();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        a.close();
        b.close();
    }

    private static ModelRequest request(int maxNewTokens) {
        return ModelRequest.of(
                PROMPT, GenerationConfig.builder().maxNewTokens(maxNewTokens).build());
    }

    @Test
    void anUpdateMidGenerationAbortsTheSegmentAndResumesItWithTheNewVersion() throws Exception {
        engine = engine(config(a.address()).build());
        engine.setVersion(3);
        CountDownLatch aborted = new CountDownLatch(1);
        // The server holds the segment until the load (abort_all_requests) arrives, then returns its
        // partial output with abort, as SGLang does.
        a.on("/generate", when(aborted, sglang(100, 40, "abort")), sglangFillBudget(200));
        a.on("/update_weights_from_disk", after(aborted::countDown, json(200, OK)));
        BackgroundGenerate call = BackgroundGenerate.start(engine, request(100));
        a.awaitRequests("/generate", 1, WAIT);

        WeightUpdateReport report = engine.updateWeights(V4, 4);
        ModelResponse r = call.get();

        assertThat(report.allSucceeded()).isTrue();
        assertThat(engine.version()).isEqualTo(4);
        assertThat(engine.isPaused()).isFalse();
        assertThat(r.outputTokens()).containsExactly(concat(range(100, 40), range(200, 60)));
        assertThat(r.outputVersions()).containsExactly(concat(repeat(3, 40), repeat(4, 60)));
        assertThat(a.controlPaths())
                .containsExactly("/generate", "/update_weights_from_disk", "/continue_generation", "/generate");
    }

    @Test
    void aServerWhoseUpdateFailedLeavesRotationUntilTheUpdateIsResentSuccessfully() throws Exception {
        engine = engine(config(a.address(), b.address()).build());
        CountDownLatch letResyncFinish = new CountDownLatch(1);
        a.on(
                "/update_weights_from_disk",
                json(400, "{\"success\":false,\"message\":\"disk full\"}"),
                when(letResyncFinish, json(200, OK)));
        b.otherwise("/generate", sglang(9, 2, "stop"));

        WeightUpdateReport report = engine.updateWeights(V4, 4);

        assertThat(engine.version()).isEqualTo(4);
        assertThat(report.failures())
                .extracting(WeightUpdateReport.ServerOutcome::server)
                .containsExactly(a.address());
        ServerStats onA = engine.serverStats().get(0);
        assertThat(onA.resyncPending()).isTrue();
        assertThat(onA.lastError().orElseThrow()).contains("disk full");
        for (int i = 0; i < 4; i++) {
            assertThat(engine.generate(request(5)).outputVersions()).containsExactly(4, 4);
        }
        assertThat(a.requests("/generate")).isEmpty();
        a.awaitRequests("/update_weights_from_disk", 2, WAIT);
        assertThat(engine.serverStats().get(0).inRotation()).isFalse();

        letResyncFinish.countDown();

        await(
                "A to be back in rotation after its re-sync",
                WAIT,
                () -> engine.serverStats().get(0).inRotation());
        List<FakeInferenceServer.Recorded> updates = a.requests("/update_weights_from_disk");
        assertThat(updates.get(1).body()).isEqualTo(updates.get(0).body());
        assertThat(a.controlPaths())
                .containsExactly(
                        "/update_weights_from_disk",
                        "/continue_generation",
                        "/update_weights_from_disk",
                        "/continue_generation");
    }

    @Test
    void anUpdateThatLoadsNowhereKeepsTheVersionAndTheServersAndThrows() throws Exception {
        engine = engine(config(a.address(), b.address()).build());
        engine.setVersion(3);
        a.on("/update_weights_from_disk", json(400, "{\"success\":false,\"message\":\"bad checkpoint\"}"));
        b.on("/update_weights_from_disk", json(400, "{\"success\":false,\"message\":\"bad checkpoint\"}"));
        a.otherwise("/generate", sglang(1, 2, "stop"));
        b.otherwise("/generate", sglang(1, 2, "stop"));

        assertThatThrownBy(() -> engine.updateWeights(V4, 4))
                .isInstanceOf(WeightUpdateException.class)
                .hasMessageContaining("weight update to version 4 from /ckpt/v4: 0/2 servers ok")
                .hasMessageContaining("bad checkpoint")
                .hasMessageContaining("keeps version 3")
                .satisfies(e -> assertThat(((WeightUpdateException) e).report().servers())
                        .hasSize(2));

        assertThat(engine.version()).isEqualTo(3);
        assertThat(engine.isPaused()).isFalse();
        assertThat(engine.serverStats())
                .allSatisfy(s -> assertThat(s.inRotation()).isTrue());
        assertThat(a.requests("/continue_generation")).hasSize(1);
        assertThat(b.requests("/continue_generation")).hasSize(1);
        assertThat(engine.generate(request(5)).outputVersions()).containsExactly(3, 3);
    }

    @Test
    void refusesAnUpdateToAVersionNotAboveTheCurrentOne() {
        engine = engine(config(a.address()).build());
        engine.setVersion(3);

        assertThatThrownBy(() -> engine.updateWeights(V4, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("weight update to version 3 refused: the engine is at version 3");
        assertThat(a.controlPaths()).isEmpty();
        assertThat(engine.isPaused()).isFalse();
    }

    @Test
    void theGateStaysClosedDuringTheUpdateAndAUserPauseSurvivesIt() throws Exception {
        engine = engine(config(a.address()).build());
        CountDownLatch releaseLoad = new CountDownLatch(1);
        a.on("/update_weights_from_disk", when(releaseLoad, json(200, OK)));
        a.otherwise("/generate", sglang(1, 2, "stop"));
        CompletableFuture<WeightUpdateReport> update = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                update.complete(engine.updateWeights(V4, 4));
            } catch (Throwable t) {
                update.completeExceptionally(t);
            }
        });
        a.awaitRequests("/update_weights_from_disk", 1, WAIT);
        assertThat(engine.isPaused()).isTrue();
        BackgroundGenerate held = BackgroundGenerate.start(engine, request(5));
        await("the generation to wait at the gate", WAIT, () -> engine.waitingAtGate() == 1);
        engine.pause();

        releaseLoad.countDown();
        assertThat(update.get(30, TimeUnit.SECONDS).allSucceeded()).isTrue();

        assertThat(engine.version()).isEqualTo(4);
        assertThat(engine.isPaused()).isTrue();
        assertThat(a.requests("/generate")).isEmpty();
        engine.resume();
        assertThat(held.get().outputVersions()).containsExactly(4, 4);
    }

    @Test
    void aServerLeftPausedByAFailedContinueIsTakenOutUntilItIsContinued() throws Exception {
        engine = engine(config(a.address(), b.address()).requestRetries(1).build());
        a.on("/continue_generation", json(500, "continue failed"));
        b.otherwise("/generate", sglang(9, 2, "stop"));
        a.setHealthy(false);

        WeightUpdateReport report = engine.updateWeights(V4, 4);

        WeightUpdateReport.ServerOutcome onA = report.servers().get(0);
        assertThat(onA.loaded()).isTrue();
        assertThat(onA.continued()).isFalse();
        assertThat(engine.version()).isEqualTo(4);
        assertThat(engine.serverStats().get(0).inRotation()).isFalse();
        assertThat(engine.generate(request(5)).outputTokens()).containsExactly(9, 10);
        assertThat(a.requests("/generate")).isEmpty();

        a.setHealthy(true);

        await(
                "A to be continued and back in rotation",
                WAIT,
                () -> engine.serverStats().get(0).inRotation());
        assertThat(a.requests("/continue_generation")).hasSize(2);
        assertThat(a.requests("/update_weights_from_disk")).hasSize(2);
    }
}
