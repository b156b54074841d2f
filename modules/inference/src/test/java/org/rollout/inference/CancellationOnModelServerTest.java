package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.inference.LiveServers.WAIT;

import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.ModelRequest;
import org.rollout.config.Backend;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * Interruptible generation against the real built-in model server: cancelling the calling thread aborts the request
 * on the server within a bounded time. SGLang is told through {@code /abort_request}; vLLM (and
 * SGLang as well) notices the closed connection.
 */
class CancellationOnModelServerTest {
    /** The bound on how long an interrupted generate may take to throw. */
    private static final Duration PROMPTLY = Duration.ofSeconds(2);
    /** The bound on how long the server may take to abort the request after that. */
    private static final Duration SERVER_ABORTS_WITHIN = Duration.ofSeconds(5);

    private final LiveServers servers = new LiveServers();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        servers.close();
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void interruptingTheCallerThrowsPromptlyAndTheServerAbortsTheRequest(Backend backend) throws Exception {
        ModelServer server = servers.start(ModelServerConfig.defaults()
                .withWeights(LiveServers.weights(7, 0))
                .withLatency(LiveServers.SLOW_DECODE));
        engine = TestSupport.engine(
                TestSupport.config(LiveServers.address(server)).backend(backend).build());
        // 10 000 tokens at 10 ms each: the generation cannot finish on its own during the test.
        BackgroundGenerate call = BackgroundGenerate.start(
                engine, ModelRequest.of(new int[] {257, 65, 10}, LiveServers.seededToLength(10_000, 1, 1.0)));
        TestSupport.await(
                "the generation to be decoding",
                WAIT,
                () -> server.stats().running() == 1 && server.stats().tokensGenerated() >= 5);

        call.thread.interrupt();

        assertThat(call.failure((int) PROMPTLY.toSeconds())).isInstanceOf(InterruptedException.class);
        TestSupport.await(
                "the server to abort the request",
                SERVER_ABORTS_WITHIN,
                () -> server.stats().requestsAborted() == 1
                        && server.stats().running() == 0
                        && server.stats().queued() == 0);
        assertThat(server.stats().requestsFinished()).isZero();
        ServerStats stats = engine.serverStats().get(0);
        assertThat(stats.outstanding()).isZero();
        assertThat(stats.inRotation())
                .as("a cancelled request is not the server's failure")
                .isTrue();
        assertThat(stats.failures()).isZero();
    }
}
