package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.inference.FakeInferenceServer.hang;
import static org.rollout.inference.TestSupport.await;
import static org.rollout.inference.TestSupport.config;
import static org.rollout.inference.TestSupport.engine;

import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.config.Backend;
import org.rollout.config.ServerAddress;

/** Interrupting a workflow's thread cancels its generation promptly and aborts it on the server. */
class CancellationTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    /** How promptly an interrupted generate must return. */
    private static final Duration PROMPTLY = Duration.ofSeconds(2);

    private final FakeInferenceServer server = FakeInferenceServer.start();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        server.close();
    }

    private static ModelRequest request() {
        return ModelRequest.of(
                new int[] {1, 2, 3}, GenerationConfig.builder().maxNewTokens(50).build());
    }

    private static void assertInterruptedPromptly(BackgroundGenerate call) throws Exception {
        long start = System.nanoTime();
        call.thread.interrupt();
        Throwable failure = call.failure(10);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertThat(failure).isInstanceOf(InterruptedException.class);
        assertThat(took).isLessThan(PROMPTLY);
    }

    @Test
    void interruptingDuringTheExchangeThrowsPromptlyAndAbortsTheRequestOnTheServer() throws Exception {
        engine = engine(config(server.address()).build());
        server.on("/generate", hang());
        ModelRequest request = request();
        BackgroundGenerate call = BackgroundGenerate.start(engine, request);
        server.awaitRequests("/generate", 1, WAIT);

        assertInterruptedPromptly(call);

        FakeInferenceServer.Recorded abort =
                server.awaitRequests("/abort_request", 1, WAIT).get(0);
        assertThat(abort.json().get("rid").textValue()).isEqualTo(request.rid());
        assertThat(abort.json().size()).isEqualTo(1);
        assertThat(engine.serverStats().get(0).outstanding()).isZero();
        assertThat(engine.serverStats().get(0).ejected()).isFalse();
    }

    @Test
    void interruptingAtThePauseGateThrowsWithoutSendingAnything() throws Exception {
        engine = engine(config(server.address()).build());
        engine.pause();
        BackgroundGenerate call = BackgroundGenerate.start(engine, request());
        await("the generation to wait at the gate", WAIT, () -> engine.waitingAtGate() == 1);

        assertInterruptedPromptly(call);

        assertThat(engine.waitingAtGate()).isZero();
        assertThat(server.requests()).isEmpty();
    }

    @Test
    void interruptingWhileWaitingForAServerToComeBackThrows() throws Exception {
        ServerAddress dead = FakeInferenceServer.unusedAddress();
        engine = engine(config(dead).requestTimeout(Duration.ofSeconds(60)).build());
        BackgroundGenerate call = BackgroundGenerate.start(engine, request());
        await(
                "the only server to be ejected",
                WAIT,
                () -> engine.serverStats().get(0).ejected());
        await("the generation to wait for a server", WAIT, () -> call.thread.getState() == Thread.State.TIMED_WAITING);

        assertInterruptedPromptly(call);
    }

    @Test
    void vllmCancellationClosesTheConnectionWithoutAnAbortCall() throws Exception {
        engine = engine(config(server.address()).backend(Backend.VLLM).build());
        server.on("/v1/completions", hang());
        BackgroundGenerate call = BackgroundGenerate.start(engine, request());
        server.awaitRequests("/v1/completions", 1, WAIT);

        assertInterruptedPromptly(call);

        assertThat(server.requests("/abort_request")).isEmpty();
        assertThat(engine.serverStats().get(0).outstanding()).isZero();
    }
}
