package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.FakeInferenceServer.after;
import static org.rollout.inference.FakeInferenceServer.hang;
import static org.rollout.inference.FakeInferenceServer.json;
import static org.rollout.inference.FakeInferenceServer.sglang;
import static org.rollout.inference.FakeInferenceServer.sglangFillBudget;
import static org.rollout.inference.TestSupport.await;
import static org.rollout.inference.TestSupport.concat;
import static org.rollout.inference.TestSupport.config;
import static org.rollout.inference.TestSupport.engine;
import static org.rollout.inference.TestSupport.range;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.ServerAddress;

/** A failed server is left, and the generation resumes on another with the tokens it has (a deliberate difference from AReaL, semantics §2.4). */
class FailoverTest {
    private static final int[] PROMPT = {257, 10, 11};
    private static final Duration WAIT = Duration.ofSeconds(10);

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

    /** A's first segment serves 40 tokens then aborts; B serves whatever budget remains. */
    private void assertContinuedOnB(ModelResponse r, ModelRequest request) {
        assertThat(r.outputTokens()).containsExactly(concat(range(100, 40), range(500, 60)));
        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        List<FakeInferenceServer.Recorded> onB = b.requests("/generate");
        assertThat(onB).hasSize(1);
        assertThat(onB.get(0).promptIds()).containsExactly(concat(PROMPT, range(100, 40)));
        assertThat(onB.get(0).maxNewTokens()).isEqualTo(60);
        assertThat(onB.get(0).rid()).isEqualTo(request.rid());
    }

    @Test
    void aServerThatRefusesConnectionsIsLeftAndTheSegmentContinuesElsewhereWithItsTokens() throws Exception {
        engine = engine(config(a.address(), b.address()).build());
        a.on("/generate", after(engine::pause, sglang(100, 40, "abort")));
        b.on("/generate", sglangFillBudget(500));
        ModelRequest request = request(100);

        BackgroundGenerate call = BackgroundGenerate.start(engine, request);
        await("the first segment to end at the gate", WAIT, () -> engine.waitingAtGate() == 1);
        a.close();
        engine.resume();
        ModelResponse r = call.get();

        assertContinuedOnB(r, request);
        ServerStats onA = engine.serverStats().get(0);
        assertThat(onA.ejected()).isTrue();
        assertThat(onA.lastError().orElseThrow()).contains("connection refused");
    }

    @Test
    void aServerAnswering500IsEjectedAndReadmittedWhenItsHealthReturns() throws Exception {
        engine = engine(config(a.address(), b.address()).build());
        a.on(
                "/generate",
                sglang(100, 40, "abort"),
                after(() -> a.setHealthy(false), json(500, "{\"error\":\"CUDA error: an illegal memory access\"}")));
        b.on("/generate", sglangFillBudget(500));
        ModelRequest request = request(100);

        ModelResponse r = engine.generate(request);

        assertContinuedOnB(r, request);
        ServerStats onA = engine.serverStats().get(0);
        assertThat(onA.ejected()).isTrue();
        assertThat(onA.failures()).isEqualTo(1);
        a.awaitRequests("/health", 1, WAIT);
        assertThat(engine.serverStats().get(0).ejected()).isTrue();

        a.setHealthy(true);

        await("A to be re-admitted", WAIT, () -> engine.serverStats().get(0).inRotation());
    }

    @Test
    void aServerThatHangsBeyondRequestTimeoutIsLeftAndAskedToAbort() throws Exception {
        engine = engine(config(a.address(), b.address())
                .requestTimeout(Duration.ofMillis(800))
                .build());
        a.setHealthy(false);
        a.on("/generate", sglang(100, 40, "abort"), hang());
        b.on("/generate", sglangFillBudget(500));
        ModelRequest request = request(100);

        ModelResponse r = engine.generate(request);

        assertContinuedOnB(r, request);
        assertThat(engine.serverStats().get(0).lastError().orElseThrow()).contains("timed out after 0.8 s");
        FakeInferenceServer.Recorded abort =
                a.awaitRequests("/abort_request", 1, WAIT).get(0);
        assertThat(abort.json().get("rid").textValue()).isEqualTo(request.rid());
    }

    @Test
    void aMalformedResponseEjectsTheServerAndTheSegmentMovesOn() throws Exception {
        engine = engine(config(a.address(), b.address()).build());
        a.setHealthy(false);
        a.on("/generate", json(200, "<html>proxy error</html>"));
        b.on("/generate", sglangFillBudget(500));

        ModelResponse r = engine.generate(request(5));

        assertThat(r.outputTokens()).containsExactly(range(500, 5));
        ServerStats onA = engine.serverStats().get(0);
        assertThat(onA.ejected()).isTrue();
        assertThat(onA.lastError().orElseThrow()).contains("malformed response from " + a.address());
    }

    @Test
    void aClientErrorIsRetriedWithoutEjectingTheServer() throws Exception {
        engine = engine(config(a.address()).build());
        a.on("/generate", json(400, "{\"error\":\"Duplicate request id\"}"), sglang(1, 4, "stop"));

        ModelResponse r = engine.generate(request(10));

        assertThat(r.outputTokens()).containsExactly(range(1, 4));
        ServerStats s = engine.serverStats().get(0);
        assertThat(s.ejected()).isFalse();
        assertThat(s.failures()).isEqualTo(1);
        assertThat(s.lastError().orElseThrow()).startsWith("HTTP 400: {\"error\":\"Duplicate request id\"}");
    }

    @Test
    void exhaustedAttemptsNameEachAttemptServerRidAndEndpointButNotThePayload() {
        engine = engine(config(a.address(), b.address()).requestRetries(3).build());
        a.otherwise("/generate", json(503, "{\"error\":\"overloaded\"}"));
        b.otherwise("/generate", json(502, "bad gateway"));
        ModelRequest request = request(10);

        assertThatThrownBy(() -> engine.generate(request))
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining("generation of rid " + request.rid() + " failed: 3 attempts of POST /generate")
                .hasMessageContaining("attempt 1 on " + a.address() + ": HTTP 503: {\"error\":\"overloaded\"}")
                .hasMessageContaining("attempt 2 on " + b.address() + ": HTTP 502: bad gateway")
                .hasMessageContaining("attempt 3 on ")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("input_ids", "sampling_params"));
    }

    @Test
    void allServersDownFailsAfterRequestTimeoutNamingEachServerAndItsError() {
        ServerAddress dead1 = FakeInferenceServer.unusedAddress();
        ServerAddress dead2 = FakeInferenceServer.unusedAddress();
        engine = engine(
                config(dead1, dead2).requestTimeout(Duration.ofMillis(700)).build());
        ModelRequest request = request(10);

        assertThatThrownBy(() -> engine.generate(request))
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining("no inference server in rotation for rid " + request.rid())
                .hasMessageContaining("0.7 s (request_timeout)")
                .hasMessageContaining(dead1 + " ejected (last error: ")
                .hasMessageContaining(dead2 + " ejected (last error: ")
                .hasMessageContaining("connection refused")
                .hasMessageContaining("earlier attempts: attempt 1 on " + dead1);
    }

    @Test
    void aGenerationWaitsForAnEjectedServerToComeBack() throws Exception {
        engine = engine(config(a.address()).build());
        a.on("/generate", after(() -> a.setHealthy(false), json(500, "oops")), sglang(1, 3, "stop"));

        BackgroundGenerate call = BackgroundGenerate.start(engine, request(10));
        a.awaitRequests("/health", 2, WAIT);
        assertThat(call.result).isNotDone();
        a.setHealthy(true);

        assertThat(call.get().outputTokens()).containsExactly(range(1, 3));
    }

    @Test
    void concurrentGenerationsShareTheServersAndReleaseEveryLease() throws Exception {
        engine = engine(config(a.address(), b.address()).build());
        a.otherwise("/generate", sglang(1, 3, "stop"));
        b.otherwise("/generate", sglang(1, 3, "stop"));
        List<BackgroundGenerate> calls = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            calls.add(BackgroundGenerate.start(engine, request(10)));
        }

        for (BackgroundGenerate call : calls) {
            assertThat(call.get().outputTokens()).containsExactly(1, 2, 3);
        }

        assertThat(a.requests("/generate").size() + b.requests("/generate").size())
                .isEqualTo(32);
        assertThat(a.requests("/generate")).isNotEmpty();
        assertThat(b.requests("/generate")).isNotEmpty();
        assertThat(engine.serverStats())
                .allSatisfy(s -> assertThat(s.outstanding()).isZero());
    }
}
