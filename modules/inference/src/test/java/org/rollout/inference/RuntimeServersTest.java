package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.LiveServers.WAIT;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.ServerAddress;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;

/**
 * Servers added and drained while the engine runs, against built-in model servers over real HTTP: an
 * added server gets the current weights before its first segment; a drained one takes no new
 * segment, finishes (or hands over, tokens kept) what it runs, and leaves the pool.
 */
class RuntimeServersTest {
    private static final int[] PROMPT = {257, 87, 104, 121, 63, 10};
    private static final double TEMPERATURE = 1.0;

    private final LiveServers servers = new LiveServers();
    private RemoteInferenceEngine engine;

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.close();
        }
        servers.close();
    }

    @Test
    void anAddedServerLoadsTheCurrentWeightsBeforeItsFirstSegment(@TempDir Path dir) throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        ModelServer a = servers.start(ModelServerConfig.defaults().withWeights(v0));
        engine = TestSupport.engine(TestSupport.config(LiveServers.address(a)).build());
        Path v2 = dir.resolve("weights-v2.rlm");
        LiveServers.weights(7, 2).write(v2);
        engine.updateWeights(v2, 2);

        ModelServer b = servers.start(ModelServerConfig.defaults().withWeights(v0));
        ServerAddress bAddress = LiveServers.address(b);
        assertThat(engine.addServer(bAddress)).isTrue();
        assertThat(engine.addServer(bAddress))
                .as("adding it again changes nothing")
                .isFalse();
        ServerStats joining = engine.serverStats().get(1);
        assertThat(joining.address()).isEqualTo(bAddress);
        assertThat(joining.inRotation()).as("not before it has the weights").isFalse();
        assertThat(joining.version()).isEmpty();

        TestSupport.await(
                "the added server in rotation",
                WAIT,
                () -> engine.serverStats().get(1).inRotation());
        assertThat(b.stats().weightVersion())
                .as("re-synced to the engine's weights")
                .isEqualTo(2);
        assertThat(engine.serverStats().get(1).version()).isEqualTo(OptionalInt.of(2));
        assertThat(engine.serverStats().get(1).state()).isEqualTo("active");

        for (int i = 0; i < 8; i++) {
            ModelResponse r = engine.generate(ModelRequest.of(PROMPT, LiveServers.seededToLength(6, i, TEMPERATURE)));
            assertThat(r.outputVersions()).containsOnly(2);
        }
        assertThat(b.stats().requestsTotal()).as("the added server serves").isPositive();
        assertThat(a.stats().requestsTotal()).isPositive();
    }

    @Test
    void aDrainedServerTakesNoNewSegmentsFinishesWhatItRunsAndLeaves() throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        ModelServerConfig slow = ModelServerConfig.defaults().withWeights(v0).withLatency(LiveServers.SLOW_DECODE);
        ModelServer a = servers.start(slow);
        ModelServer b = servers.start(slow);
        ServerAddress aAddress = LiveServers.address(a);
        engine = TestSupport.engine(
                TestSupport.config(aAddress, LiveServers.address(b)).build());
        List<BackgroundGenerate> calls = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            calls.add(BackgroundGenerate.start(
                    engine, ModelRequest.of(PROMPT, LiveServers.seededToLength(60, i, TEMPERATURE))));
        }
        TestSupport.await("two generations running on A", WAIT, () -> a.stats().running() == 2);
        long sentToA = a.stats().requestsTotal();

        assertThat(engine.drainServer(aAddress, Duration.ofSeconds(60))).isTrue();
        assertThat(engine.serverStats().get(0).state()).isEqualTo("draining");
        List<ModelResponse> more = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            more.add(engine.generate(ModelRequest.of(PROMPT, LiveServers.seededToLength(5, 10 + i, TEMPERATURE))));
        }

        for (BackgroundGenerate c : calls) {
            ModelResponse r = c.get();
            assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
            assertThat(r.outputLength()).isEqualTo(60);
        }
        assertThat(more).allSatisfy(r -> assertThat(r.outputLength()).isEqualTo(5));
        assertThat(a.stats().requestsTotal())
                .as("no new segment on A after the drain")
                .isEqualTo(sentToA);
        assertThat(a.stats().requestsAborted()).as("A finished what it ran").isZero();
        TestSupport.await(
                "A to leave the pool", WAIT, () -> engine.serverStats().size() == 1);
        assertThat(engine.serverStats().get(0).address()).isEqualTo(LiveServers.address(b));
        assertThatThrownBy(() -> engine.drainServer(LiveServers.address(b), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("only server that is not draining");
    }

    @Test
    void pastItsDeadlineADrainedServerHandsItsGenerationsOverWithTheirTokensKept() throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        ModelServer a =
                servers.start(ModelServerConfig.defaults().withWeights(v0).withLatency(LiveServers.SLOW_DECODE));
        ModelServer b = servers.start(ModelServerConfig.defaults().withWeights(v0));
        ServerAddress aAddress = LiveServers.address(a);
        engine = TestSupport.engine(
                TestSupport.config(aAddress, LiveServers.address(b)).build());
        // Routing starts at A; the budget keeps it busy for about 4 s at 10 ms a token.
        BackgroundGenerate call = BackgroundGenerate.start(
                engine, ModelRequest.of(PROMPT, LiveServers.seededToLength(400, 3, TEMPERATURE)));
        TestSupport.await("the generation under way on A", WAIT, () -> a.stats().tokensGenerated() >= 10);

        engine.drainServer(aAddress, Duration.ofMillis(200));
        ModelResponse r = call.get();

        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(r.outputLength()).isEqualTo(400);
        long fromA = a.stats().tokensGenerated();
        assertThat(a.stats().requestsAborted()).as("A handed its segment over").isEqualTo(1);
        assertThat(fromA).as("A's tokens are kept, not generated again").isBetween(10L, 399L);
        assertThat(b.stats().tokensGenerated()).isEqualTo(400 - fromA);
        TestSupport.await(
                "A to leave the pool", WAIT, () -> engine.serverStats().size() == 1);
        assertThat(a.stats().paused())
                .as("A was left serving (continue after the abort)")
                .isFalse();
    }
}
