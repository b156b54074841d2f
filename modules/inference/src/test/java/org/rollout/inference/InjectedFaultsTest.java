package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.LiveServers.WAIT;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.config.Backend;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.modelserver.FaultPlan;
import org.rollout.modelserver.FaultPlan.MalformedKind;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * The model server's injected faults end to end, for both backends: server A misbehaves, server B is
 * healthy. Each fault either fails over to B with the right output and A ejected for the right
 * reason, or, with nowhere to go, fails with an error that names the server, the rid and the field.
 *
 * <p>The health checker runs once an hour here, so that an ejected server stays out long enough to
 * be observed (a probe would re-admit it: faults strike only the generation endpoints).
 */
class InjectedFaultsTest {
    private static final int[] PROMPT = {257, 70, 97, 117, 108, 116, 10};
    private static final int TOKENS = 24;
    private static final GenerationConfig G = LiveServers.seededToLength(TOKENS, 31, 1.0);
    private static final TinyLmWeights WEIGHTS = LiveServers.weights(7, 0);
    /** A request_timeout that a hung or slow server exceeds, with room for B's answer on a loaded machine. */
    private static final Duration SHORT_TIMEOUT = Duration.ofSeconds(2);

    private final LiveServers servers = new LiveServers();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        servers.close();
    }

    private ModelServer server(FaultPlan faults) throws Exception {
        return servers.start(ModelServerConfig.defaults().withWeights(WEIGHTS).withFaults(faults));
    }

    private RemoteInferenceEngine engine(Backend backend, InferenceConfig.Builder config) {
        return TestSupport.engine(
                config.backend(backend).healthCheckInterval(Duration.ofHours(1)).build());
    }

    /** Server A after a generation left it, and the engine's view of it. */
    private record Left(ModelServer a, ServerStats stats) {}

    /** Runs one generation with A faulty and B healthy; checks B produced exactly the reference output. */
    private Left failsOverToB(Backend backend, FaultPlan faults, Duration requestTimeout) throws Exception {
        ModelServer a = server(faults);
        ModelServer b = server(FaultPlan.NONE);
        engine = engine(
                backend,
                TestSupport.config(LiveServers.address(a), LiveServers.address(b))
                        .requestTimeout(requestTimeout));

        ModelResponse r = engine.generate(ModelRequest.of(PROMPT, G));

        assertThat(r.outputTokens())
                .containsExactly(servers.referenceTokens(servers.reference(WEIGHTS), PROMPT, G, TOKENS));
        LiveServers.assertLogprobsUnder(WEIGHTS, r, 0, TOKENS, 1.0);
        assertThat(b.stats().requestsFinished()).as("B served the generation").isEqualTo(1);
        ServerStats aStats = engine.serverStats().get(0);
        assertThat(aStats.ejected()).isTrue();
        assertThat(aStats.failures()).isEqualTo(1);
        assertThat(engine.serverStats().get(1).inRotation()).isTrue();
        return new Left(a, aStats);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aServerAnswering500IsEjectedAndTheGenerationCompletesOnAnother(Backend backend) throws Exception {
        Left left = failsOverToB(backend, FaultPlan.NONE.withErrorRate(1.0), Duration.ofSeconds(20));

        assertThat(left.stats().lastError())
                .hasValueSatisfying(e -> assertThat(e).startsWith("HTTP 500: ").contains("injected fault"));
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aServerThatCrashesOnTheRequestIsEjectedAndTheGenerationCompletesOnAnother(Backend backend) throws Exception {
        Left left = failsOverToB(backend, FaultPlan.NONE.withCrashAfter(0), Duration.ofSeconds(20));

        assertThat(left.stats().lastError())
                .hasValueSatisfying(e -> assertThat(e).startsWith("I/O error"));
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aServerThatHangsBeyondRequestTimeoutIsLeftAndItsHeldRequestReleased(Backend backend) throws Exception {
        Left left = failsOverToB(backend, FaultPlan.NONE.withHang(true), SHORT_TIMEOUT);

        assertThat(left.stats().lastError()).hasValue("timed out after 2.0 s");
        ModelServer a = left.a();
        TestSupport.await(
                "A to notice the client left its hung request",
                WAIT,
                () -> a.stats().hungRequests() == 0);
        assertThat(a.stats().requestsTotal())
                .as("the hung request never reached A's scheduler")
                .isZero();
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aServerSlowerThanRequestTimeoutIsLeftForAnother(Backend backend) throws Exception {
        Left left = failsOverToB(backend, FaultPlan.NONE.withSlow(Duration.ofSeconds(30)), SHORT_TIMEOUT);

        assertThat(left.stats().lastError()).hasValue("timed out after 2.0 s");
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aSlowServerWithinRequestTimeoutAnswersAndStaysInRotation(Backend backend) throws Exception {
        Duration slow = Duration.ofMillis(300);
        ModelServer a = server(FaultPlan.NONE.withSlow(slow));
        engine = engine(backend, TestSupport.config(LiveServers.address(a)).requestTimeout(Duration.ofSeconds(20)));

        ModelResponse r = engine.generate(ModelRequest.of(PROMPT, G));

        assertThat(r.outputTokens())
                .containsExactly(servers.referenceTokens(servers.reference(WEIGHTS), PROMPT, G, TOKENS));
        assertThat(r.latency())
                .as("the response was held back by the slow fault")
                .isGreaterThanOrEqualTo(slow);
        ServerStats stats = engine.serverStats().get(0);
        assertThat(stats.inRotation()).isTrue();
        assertThat(stats.failures()).isZero();
    }

    /** Every malformed kind, for each backend, with the field the parser names for it. */
    static List<Arguments> malformedKinds() {
        List<Arguments> out = new ArrayList<>();
        for (MalformedKind kind : MalformedKind.values()) {
            out.add(Arguments.of(
                    Backend.SGLANG,
                    kind,
                    switch (kind) {
                        case NOT_JSON, TRUNCATED_JSON -> "body";
                        case COUNT_MISMATCH -> "meta_info.output_token_logprobs";
                        case UNKNOWN_FINISH_REASON -> "meta_info.finish_reason.type";
                        case MISSING_META_INFO -> "meta_info";
                    }));
            out.add(Arguments.of(
                    Backend.VLLM,
                    kind,
                    switch (kind) {
                        case NOT_JSON, TRUNCATED_JSON -> "body";
                        case COUNT_MISMATCH -> "choices[0].logprobs.token_logprobs";
                        case UNKNOWN_FINISH_REASON -> "choices[0].finish_reason";
                        case MISSING_META_INFO -> "choices[0].logprobs";
                    }));
        }
        return out;
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("malformedKinds")
    void aMalformedResponseEjectsTheServerNamingTheFieldAndTheGenerationCompletesOnAnother(
            Backend backend, MalformedKind kind, String field) throws Exception {
        ModelRequest request = ModelRequest.of(PROMPT, G);
        ModelServer a = server(FaultPlan.NONE.withMalformed(1.0, kind));
        ModelServer b = server(FaultPlan.NONE);
        engine = engine(backend, TestSupport.config(LiveServers.address(a), LiveServers.address(b)));

        ModelResponse r = engine.generate(request);

        assertThat(r.outputTokens())
                .containsExactly(servers.referenceTokens(servers.reference(WEIGHTS), PROMPT, G, TOKENS));
        ServerStats aStats = engine.serverStats().get(0);
        assertThat(aStats.ejected()).isTrue();
        assertThat(aStats.lastError())
                .hasValueSatisfying(e -> assertThat(e)
                        .startsWith("malformed response from " + LiveServers.address(a) + " for rid " + request.rid()
                                + ": " + field + " "));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("malformedKinds")
    void aMalformedResponseWithNowhereElseToGoFailsNamingServerRidAndField(
            Backend backend, MalformedKind kind, String field) throws Exception {
        ModelRequest request = ModelRequest.of(PROMPT, G);
        ModelServer a = server(FaultPlan.NONE.withMalformed(1.0, kind));
        ServerAddress address = LiveServers.address(a);
        engine = engine(backend, TestSupport.config(address).requestRetries(1));

        assertThatThrownBy(() -> engine.generate(request))
                .isInstanceOf(GenerationException.class)
                .hasMessageStartingWith("generation of rid " + request.rid() + " failed: 1 attempt of POST "
                        + ServerProtocol.of(backend).generatePath() + " (request_retries=1): attempt 1 on " + address
                        + ": malformed response from " + address + " for rid " + request.rid() + ": " + field + " ")
                .cause()
                .isInstanceOfSatisfying(MalformedResponseException.class, e -> {
                    assertThat(e.server()).isEqualTo(address);
                    assertThat(e.rid()).isEqualTo(request.rid());
                    assertThat(e.field()).isEqualTo(field);
                });
    }
}
