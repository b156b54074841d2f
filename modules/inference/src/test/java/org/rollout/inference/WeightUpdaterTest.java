package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.inference.FakeInferenceServer.hang;
import static org.rollout.inference.FakeInferenceServer.json;
import static org.rollout.inference.TestSupport.config;

import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.config.Backend;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;

/**
 * [Pause] → update → continue on every server, continue always (AReaL #1160, prime-rl #2673). SGLang
 * needs no pause before its load (the load aborts and holds requests itself) unless a grace period is
 * set; vLLM keeps its pause.
 */
class WeightUpdaterTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Path WEIGHTS = Path.of("/ckpt/weights-v3.rlm");
    private static final List<String> SGLANG_ORDER = List.of("/update_weights_from_disk", "/continue_generation");
    private static final List<String> SGLANG_ORDER_WITH_PAUSE =
            List.of("/pause_generation", "/pause_generation", "/update_weights_from_disk", "/continue_generation");

    private final FakeInferenceServer a = FakeInferenceServer.start();
    private final FakeInferenceServer b = FakeInferenceServer.start();
    private final HttpClient client =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @AfterEach
    void tearDown() {
        client.shutdownNow();
        a.close();
        b.close();
    }

    private WeightUpdater updater(InferenceConfig config) {
        return new WeightUpdater(config, client, TestSupport.DETERMINISTIC);
    }

    private static String body(FakeInferenceServer s, int index) {
        return s.requests().stream()
                .filter(r -> !r.path().equals("/health"))
                .toList()
                .get(index)
                .body();
    }

    @Test
    void loadsWithAbortAllAndContinuesEverySglangServerWithoutASeparatePause() throws Exception {
        WeightUpdateReport report =
                updater(config(a.address(), b.address()).build()).update(List.of(a.address(), b.address()), WEIGHTS, 3);

        for (FakeInferenceServer s : List.of(a, b)) {
            assertThat(s.controlPaths()).containsExactlyElementsOf(SGLANG_ORDER);
            assertThat(body(s, 0))
                    .isEqualTo(
                            "{\"model_path\":\"/ckpt/weights-v3.rlm\",\"abort_all_requests\":true,\"weight_version\":\"3\"}");
            assertThat(body(s, 1)).isEqualTo("{}");
        }
        assertThat(report.allSucceeded()).isTrue();
        assertThat(report.version()).isEqualTo(3);
        assertThat(report.modelPath()).isEqualTo(WEIGHTS);
        assertThat(report.servers())
                .extracting(WeightUpdateReport.ServerOutcome::server)
                .containsExactly(a.address(), b.address());
        assertThat(report.servers()).allSatisfy(o -> {
            assertThat(o.loaded()).isTrue();
            assertThat(o.continued()).isTrue();
            assertThat(o.errors()).isEmpty();
        });
    }

    @Test
    void pausesUpdatesAndContinuesEveryVllmServerInOrder() throws Exception {
        InferenceConfig c = config(a.address()).backend(Backend.VLLM).build();

        WeightUpdateReport report = updater(c).update(List.of(a.address()), WEIGHTS, 3);

        assertThat(a.controlPaths())
                .containsExactly("/areal_pause_generation", "/areal_update_weights", "/areal_continue_generation");
        assertThat(body(a, 1)).isEqualTo("{\"model_path\":\"/ckpt/weights-v3.rlm\"}");
        assertThat(report.allSucceeded()).isTrue();
    }

    @Test
    void continueIsSentEvenWhenTheUpdateIsRefusedWith400() throws Exception {
        a.on(
                "/update_weights_from_disk",
                json(400, "{\"success\":false,\"message\":\"no such file: /ckpt/weights-v3.rlm\"}"));

        WeightUpdateReport report =
                updater(config(a.address(), b.address()).build()).update(List.of(a.address(), b.address()), WEIGHTS, 3);

        assertThat(a.controlPaths()).containsExactlyElementsOf(SGLANG_ORDER);
        assertThat(b.controlPaths()).containsExactlyElementsOf(SGLANG_ORDER);
        WeightUpdateReport.ServerOutcome onA = report.servers().get(0);
        assertThat(onA.loaded()).isFalse();
        assertThat(onA.continued()).isTrue();
        assertThat(onA.errors())
                .containsExactly(
                        "POST /update_weights_from_disk: HTTP 400: {\"success\":false,\"message\":\"no such file: /ckpt/weights-v3.rlm\"}");
        assertThat(report.failures())
                .extracting(WeightUpdateReport.ServerOutcome::server)
                .containsExactly(a.address());
        assertThat(report.anyLoaded()).isTrue();
        assertThat(report.summary())
                .isEqualTo(
                        "weight update to version 3 from /ckpt/weights-v3.rlm: 1/2 servers ok; " + a.address()
                                + ": POST /update_weights_from_disk: HTTP 400: {\"success\":false,\"message\":\"no such file: /ckpt/weights-v3.rlm\"}");
    }

    @Test
    void continueIsSentEvenWhenTheUpdateTimesOut() throws Exception {
        InferenceConfig c = config(a.address(), b.address())
                .requestTimeout(Duration.ofMillis(500))
                .requestRetries(2)
                .build();
        a.on("/update_weights_from_disk", hang(), hang());

        WeightUpdateReport report = updater(c).update(List.of(a.address(), b.address()), WEIGHTS, 3);

        assertThat(a.controlPaths())
                .containsExactly("/update_weights_from_disk", "/update_weights_from_disk", "/continue_generation");
        WeightUpdateReport.ServerOutcome onA = report.servers().get(0);
        assertThat(onA.errors())
                .containsExactly("POST /update_weights_from_disk failed after 2 attempts: timed out after 0.5 s");
        assertThat(onA.continued()).isTrue();
        assertThat(report.servers().get(1).ok()).isTrue();
    }

    @Test
    void aSuccessFalseAnswerIsAFailureAndIsNotRetried() throws Exception {
        a.on("/update_weights_from_disk", json(200, "{\"success\":false,\"message\":\"shape mismatch\"}"));

        WeightUpdateReport report = updater(config(a.address()).build()).update(List.of(a.address()), WEIGHTS, 3);

        assertThat(a.requests("/update_weights_from_disk")).hasSize(1);
        assertThat(report.servers().get(0).errors())
                .containsExactly("POST /update_weights_from_disk: success=false: shape mismatch");
        assertThat(report.anyLoaded()).isFalse();
        assertThat(a.requests("/continue_generation")).hasSize(1);
    }

    @Test
    void aFailedPauseSkipsTheUpdateButStillContinues() throws Exception {
        a.otherwise("/areal_pause_generation", json(500, "scheduler crashed"));

        WeightUpdateReport report = updater(config(a.address())
                        .backend(Backend.VLLM)
                        .requestRetries(2)
                        .build())
                .update(List.of(a.address()), WEIGHTS, 3);

        assertThat(a.controlPaths())
                .containsExactly("/areal_pause_generation", "/areal_pause_generation", "/areal_continue_generation");
        WeightUpdateReport.ServerOutcome o = report.servers().get(0);
        assertThat(o.errors())
                .containsExactly("POST /areal_pause_generation failed after 2 attempts: HTTP 500: scheduler crashed");
        assertThat(o.loaded()).isFalse();
        assertThat(o.updateTime()).isZero();
        assertThat(o.continued()).isTrue();
    }

    @Test
    void aDeadServerIsReportedWhileTheOthersAreUpdated() throws Exception {
        ServerAddress dead = FakeInferenceServer.unusedAddress();

        WeightUpdateReport report = updater(
                        config(a.address(), dead).requestRetries(2).build())
                .update(List.of(a.address(), dead), WEIGHTS, 3);

        assertThat(a.controlPaths()).containsExactlyElementsOf(SGLANG_ORDER);
        WeightUpdateReport.ServerOutcome onDead = report.servers().get(1);
        assertThat(onDead.errors())
                .containsExactly(
                        "POST /update_weights_from_disk failed after 2 attempts: connection refused or unreachable",
                        "POST /continue_generation failed after 2 attempts: connection refused or unreachable");
        assertThat(onDead.continued()).isFalse();
        assertThat(report.servers().get(0).ok()).isTrue();
    }

    @Test
    void aContinueThatFailsIsRetriedAndReported() throws Exception {
        a.on("/continue_generation", json(503, "busy"), json(200, "{\"success\":true}"));

        WeightUpdateReport report = updater(config(a.address()).build()).update(List.of(a.address()), WEIGHTS, 3);

        assertThat(a.requests("/continue_generation")).hasSize(2);
        assertThat(report.allSucceeded()).isTrue();
    }

    @Test
    void measuresEachStep() throws Exception {
        WeightUpdateReport report =
                updater(config(a.address()).backend(Backend.VLLM).build()).update(List.of(a.address()), WEIGHTS, 3);

        WeightUpdateReport.ServerOutcome o = report.servers().get(0);
        assertThat(o.pauseTime()).isPositive();
        assertThat(o.updateTime()).isPositive();
        assertThat(o.continueTime()).isPositive();
        assertThat(report.elapsed())
                .isGreaterThanOrEqualTo(o.pauseTime().plus(o.updateTime()).plus(o.continueTime()));
    }

    @Test
    void waitsThePauseGracePeriodBetweenPauseAndUpdate() throws Exception {
        InferenceConfig c =
                config(a.address()).pauseGracePeriod(Duration.ofMillis(300)).build();

        WeightUpdateReport report = updater(c).update(List.of(a.address()), WEIGHTS, 3);

        assertThat(report.elapsed()).isGreaterThanOrEqualTo(Duration.ofMillis(300));
        assertThat(a.controlPaths()).containsExactlyElementsOf(SGLANG_ORDER_WITH_PAUSE);
        assertThat(body(a, 0)).isEqualTo("{}");
        assertThat(body(a, 1)).isEqualTo("{\"mode\":\"in_place\"}");
    }

    @Test
    void anSglangUpdateSpendsNoTimePausing() throws Exception {
        WeightUpdateReport report = updater(config(a.address()).build()).update(List.of(a.address()), WEIGHTS, 3);

        WeightUpdateReport.ServerOutcome o = report.servers().get(0);
        assertThat(o.pauseTime()).isZero();
        assertThat(o.updateTime()).isPositive();
        assertThat(o.continueTime()).isPositive();
        assertThat(a.requests("/pause_generation")).isEmpty();
    }

    @Test
    void anInterruptedUpdateStillContinuesEveryServerBeforeItThrows() throws Exception {
        a.on("/update_weights_from_disk", hang());
        b.on("/update_weights_from_disk", hang());
        WeightUpdater updater = updater(config(a.address(), b.address()).build());
        java.util.concurrent.CompletableFuture<Throwable> thrown = new java.util.concurrent.CompletableFuture<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                updater.update(List.of(a.address(), b.address()), WEIGHTS, 3);
                thrown.complete(null);
            } catch (Throwable t) {
                thrown.complete(t);
            }
        });
        a.awaitRequests("/update_weights_from_disk", 1, WAIT);
        b.awaitRequests("/update_weights_from_disk", 1, WAIT);

        caller.interrupt();

        assertThat(thrown.get(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS))
                .isInstanceOf(InterruptedException.class);
        assertThat(a.requests("/continue_generation")).hasSize(1);
        assertThat(b.requests("/continue_generation")).hasSize(1);
    }
}
