package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.inference.LiveServers.WAIT;

import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.InterruptMode;
import org.rollout.modelserver.LengthDistribution;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.OutputLengths;

/**
 * {@code interrupt_mode} against the real model server with a simulated output length of 200
 * tokens, across a weight update that interrupts the generation: resume delivers the 200 tokens
 * with the versions split at the interruption and the server generates exactly 200; discard
 * delivers 200 tokens of the new version only, and the server generated the thrown-away ones too.
 */
class InterruptModeOnModelServerTest {
    private static final int[] PROMPT = {257, 72, 101, 108, 108, 111, 10};
    private static final int LENGTH = 200;

    @TempDir
    Path dir;

    private final LiveServers servers = new LiveServers();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        servers.close();
    }

    private ModelResponse generateAcrossAnUpdate(InterruptMode mode, ModelServer server) throws Exception {
        Path v1 = dir.resolve("weights-v1.rlm");
        LiveServers.weights(8, 1).write(v1);
        engine = TestSupport.engine(TestSupport.config(LiveServers.address(server))
                .interruptMode(mode)
                .build());
        GenerationConfig g = LiveServers.seededToLength(1000, 5, 1.0);
        BackgroundGenerate call = BackgroundGenerate.start(engine, ModelRequest.of(PROMPT, g));
        TestSupport.await(
                "10 tokens generated before the update",
                WAIT,
                () -> server.stats().tokensGenerated() >= 10);
        engine.updateWeights(v1, 1);
        return call.get();
    }

    private ModelServer start() throws Exception {
        return servers.start(ModelServerConfig.defaults()
                .withWeights(LiveServers.weights(7, 0))
                .withLatency(LiveServers.SLOW_DECODE)
                .withOutputLengths(new OutputLengths(new LengthDistribution.Fixed(LENGTH), 0)));
    }

    @Test
    void resumeKeepsTheInterruptedTokensAndTheServerGeneratesTheDrawnLengthOnce() throws Exception {
        ModelServer server = start();
        ModelResponse r = generateAcrossAnUpdate(InterruptMode.RESUME, server);

        assertThat(r.outputLength()).isEqualTo(LENGTH);
        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        int k = (int) Arrays.stream(r.outputVersions()).filter(v -> v == 0).count();
        assertThat(k).as("tokens of version 0, before the interruption").isBetween(10, LENGTH - 1);
        assertThat(server.stats().tokensGenerated()).isEqualTo(LENGTH);
        assertThat(engine.discardedTokens()).isZero();
    }

    @Test
    void discardRegeneratesTheWholeLengthUnderTheNewVersionAndTheServerGeneratedTheWasteToo() throws Exception {
        ModelServer server = start();
        ModelResponse r = generateAcrossAnUpdate(InterruptMode.DISCARD, server);

        assertThat(r.outputLength()).isEqualTo(LENGTH);
        assertThat(r.outputVersions()).containsOnly(1);
        long discarded = engine.discardedTokens();
        assertThat(discarded).isBetween(10L, (long) LENGTH - 1);
        assertThat(server.stats().tokensGenerated()).isEqualTo(LENGTH + discarded);
    }
}
