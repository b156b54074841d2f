package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.inference.LiveServers.WAIT;
import static org.rollout.inference.LiveServers.slice;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.GenerationException;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.Backend;
import org.rollout.config.InferenceConfig;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLm;
import org.rollout.modelserver.TinyLmWeights;

/**
 * The rules of docs/protocol.md that the engine meets through a real server, one test each, on the
 * built-in model server over real HTTP. Stopping rules use hand-built weights whose greedy output is
 * the fixed cycle {@code A B C D <|im_end|> A B …} after a prompt ending in {@code A}.
 */
class ProtocolRulesOnModelServerTest {
    private static final int A = 'A';
    private static final int B = 'B';
    private static final int C = 'C';
    private static final int D = 'D';
    private static final int EOS = 258;
    private static final int[] PROMPT = {257, A};

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

    /** Weights under which each token of {@code cycle} is overwhelmingly followed by the next (cyclically). */
    private static TinyLmWeights cycle(int... tokens) {
        int v = TinyLmWeights.VOCAB_SIZE;
        float[] bigram = new float[v * v];
        for (int i = 0; i < tokens.length; i++) {
            bigram[tokens[i] * v + tokens[(i + 1) % tokens.length]] = 60f;
        }
        return TinyLmWeights.of(0, TinyLmWeights.DEFAULT_DECAY, new float[v], bigram, new float[v * v]);
    }

    private ModelServer start(ModelServerConfig config, Backend backend, InferenceConfig.Builder engineConfig)
            throws Exception {
        ModelServer server = servers.start(config);
        engine = TestSupport.engine(engineConfig
                .serverAddresses(List.of(LiveServers.address(server)))
                .backend(backend)
                .build());
        return server;
    }

    /** Greedy generation on a fresh server with the cycle weights. */
    private ModelResponse greedyOnCycle(Backend backend, GenerationConfig.Builder g) throws Exception {
        start(ModelServerConfig.defaults().withWeights(cycle(A, B, C, D, EOS)), backend, TestSupport.config());
        return engine.generate(ModelRequest.of(PROMPT, g.greedy(true).build()));
    }

    @Test
    void sglangFinishesWithLengthWhenTheStopTokenIsTheLastAllowedTokenAndKeepsIt() throws Exception {
        ModelResponse r = greedyOnCycle(
                Backend.SGLANG,
                GenerationConfig.builder().stopTokenIds(List.of(EOS)).maxNewTokens(4));

        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(r.outputTokens()).containsExactly(B, C, D, EOS);
    }

    @Test
    void vllmFinishesWithStopWhenTheStopTokenIsTheLastAllowedToken() throws Exception {
        ModelResponse r = greedyOnCycle(
                Backend.VLLM,
                GenerationConfig.builder().stopTokenIds(List.of(EOS)).maxNewTokens(4));

        assertThat(r.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(r.outputTokens()).containsExactly(B, C, D, EOS);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aStopTokenBeforeTheBudgetFinishesWithStopAndEndsTheOutput(Backend backend) throws Exception {
        ModelResponse r = greedyOnCycle(
                backend, GenerationConfig.builder().stopTokenIds(List.of(EOS)).maxNewTokens(10));

        assertThat(r.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(r.outputTokens()).containsExactly(B, C, D, EOS);
        assertThat(r.outputTokensWithoutStop(EOS)).containsExactly(B, C, D);
    }

    @Test
    void sglangIgnoreEosAlsoIgnoresStopTokenIds() throws Exception {
        ModelResponse r = greedyOnCycle(
                Backend.SGLANG,
                GenerationConfig.builder()
                        .ignoreEos(true)
                        .stopTokenIds(List.of(D))
                        .maxNewTokens(6));

        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(r.outputTokens()).containsExactly(B, C, D, EOS, A, B);
    }

    @Test
    void vllmIgnoreEosIgnoresOnlyEosNotStopTokenIds() throws Exception {
        ModelResponse r = greedyOnCycle(
                Backend.VLLM,
                GenerationConfig.builder()
                        .ignoreEos(true)
                        .stopTokenIds(List.of(D))
                        .maxNewTokens(6));

        assertThat(r.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(r.outputTokens()).containsExactly(B, C, D);
    }

    @Test
    void vllmIgnoreEosRunsPastEos() throws Exception {
        ModelResponse r = greedyOnCycle(
                Backend.VLLM, GenerationConfig.builder().ignoreEos(true).maxNewTokens(6));

        assertThat(r.stopReason()).isEqualTo(StopReason.LENGTH);
        assertThat(r.outputTokens()).containsExactly(B, C, D, EOS, A, B);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aStopStringFinishesWithStopKeepingTheTokensThatSpellIt(Backend backend) throws Exception {
        ModelResponse r = greedyOnCycle(
                backend, GenerationConfig.builder().stop(List.of("C")).maxNewTokens(10));

        assertThat(r.stopReason()).isEqualTo(StopReason.STOP);
        assertThat(r.outputTokens()).containsExactly(B, C);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void greedyLogprobsAreTheUnscaledLogSoftmaxOfTheArgmax(Backend backend) throws Exception {
        TinyLmWeights w = LiveServers.weights(3, 0);
        start(ModelServerConfig.defaults().withWeights(w), backend, TestSupport.config());
        GenerationConfig g = GenerationConfig.builder()
                .greedy(true)
                .temperature(0.5) // ignored: greedy sends 0.0, and logprobs are then at T = 1
                .ignoreEos(true)
                .maxNewTokens(30)
                .build();

        ModelResponse r = engine.generate(ModelRequest.of(new int[] {257, 71, 10}, g));

        assertThat(r.outputLength()).isEqualTo(30);
        LiveServers.assertLogprobsUnder(w, r, 0, 30, 1.0);
        int[] sequence = TestSupport.concat(r.inputTokens(), r.outputTokens());
        for (int i = 0; i < 30; i++) {
            double[] next = TinyLm.nextTokenLogprobs(w, slice(sequence, 0, r.inputLength() + i), 1.0);
            int argmax = 0;
            for (int j = 1; j < next.length; j++) {
                argmax = next[j] > next[argmax] ? j : argmax;
            }
            assertThat(r.outputToken(i)).as("greedy token %d", i).isEqualTo(argmax);
        }
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void sampledLogprobsAreTemperatureScaledAndTakenBeforeTopKAndTopPTruncation(Backend backend) throws Exception {
        TinyLmWeights w = LiveServers.weights(3, 0);
        start(ModelServerConfig.defaults().withWeights(w), backend, TestSupport.config());
        GenerationConfig g = GenerationConfig.builder()
                .temperature(0.6)
                .topK(3)
                .topP(0.9)
                .seed(5L)
                .ignoreEos(true)
                .maxNewTokens(30)
                .build();

        ModelResponse r = engine.generate(ModelRequest.of(new int[] {257, 71, 10}, g));

        LiveServers.assertLogprobsUnder(w, r, 0, 30, 0.6);
        int[] sequence = TestSupport.concat(r.inputTokens(), r.outputTokens());
        for (int i = 0; i < 30; i++) {
            double[] next = TinyLm.nextTokenLogprobs(w, slice(sequence, 0, r.inputLength() + i), 0.6);
            double chosen = next[r.outputToken(i)];
            long moreLikely = Arrays.stream(next).filter(lp -> lp > chosen).count();
            assertThat(moreLikely).as("token %d is among the top 3", i).isLessThan(3);
        }
    }

    @Test
    void healthAnswers200WithAnEmptyBodyAndInitializeAcceptsIt() throws Exception {
        ModelServer server = start(ModelServerConfig.defaults(), Backend.SGLANG, TestSupport.config());

        engine.initialize();

        assertThat(servers.get(server, "/health")).isEmpty();
    }

    @Test
    void anUpdateLabelsTheServedWeightsWithTheEngineVersionNotTheFiles() throws Exception {
        ModelServer server = start(ModelServerConfig.defaults(), Backend.SGLANG, TestSupport.config());
        Path file = dir.resolve("weights.rlm");
        LiveServers.weights(5, 0).write(file);

        WeightUpdateReport report = engine.updateWeights(file, 5);

        assertThat(report.anyLoaded()).isTrue();
        assertThat(server.weightVersion()).isEqualTo(5);
        assertThat(LiveServers.JSON
                        .readTree(servers.get(server, "/get_model_info"))
                        .path("weight_version")
                        .asText())
                .isEqualTo("5");
        assertThat(engine.version()).isEqualTo(5);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aWeightFileTheServerCannotLoadKeepsVersionAndWeightsAndTheErrorNamesPathAndDefect(Backend backend)
            throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        ModelServer server = start(ModelServerConfig.defaults().withWeights(v0), backend, TestSupport.config());
        Path file = dir.resolve("not-weights.rlm");
        Files.writeString(file, "this is not a weight file");

        assertThatThrownBy(() -> engine.updateWeights(file, 1))
                .isInstanceOf(WeightUpdateException.class)
                .hasMessageContaining(LiveServers.address(server).toString())
                .hasMessageContaining("HTTP 400")
                .hasMessageContaining(file.toString())
                .hasMessageContaining("wrong magic")
                .hasMessageContaining("keeps version 0");

        assertThat(engine.version()).isZero();
        assertThat(server.weights()).isEqualTo(v0);
        assertThat(server.stats().paused())
                .as("continue was sent after the failed load")
                .isFalse();
        assertThat(engine.serverStats().get(0).inRotation()).isTrue();
        ModelResponse r = engine.generate(ModelRequest.of(PROMPT, LiveServers.seededToLength(5, 1, 1.0)));
        LiveServers.assertLogprobsUnder(v0, r, 0, 5, 1.0);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void aGenerationAbortedByAnotherClientsPauseIsHeldUntilContinueAndKeepsItsTokens(Backend backend) throws Exception {
        TinyLmWeights v0 = LiveServers.weights(7, 0);
        ModelServer server = start(
                ModelServerConfig.defaults().withWeights(v0).withLatency(LiveServers.SLOW_DECODE),
                backend,
                TestSupport.config());
        GenerationConfig g = LiveServers.seededToLength(100, 17, 1.0);
        BackgroundGenerate call = BackgroundGenerate.start(engine, ModelRequest.of(PROMPT, g));
        TestSupport.await("10 tokens generated", WAIT, () -> server.stats().tokensGenerated() >= 10);

        String pause = backend == Backend.SGLANG ? "/pause_generation" : "/areal_pause_generation";
        assertThat(servers.post(server, pause, "{}").path("_status").asInt()).isEqualTo(200);
        int beforePause = (int) server.stats().tokensGenerated();
        TestSupport.await(
                "the resumed segment to be held by the paused server",
                WAIT,
                () -> server.stats().requestsTotal() == 2 && server.stats().queued() == 1);
        assertThat(call.result).isNotDone();
        String resume = backend == Backend.SGLANG ? "/continue_generation" : "/areal_continue_generation";
        assertThat(servers.post(server, resume, "{}").path("_status").asInt()).isEqualTo(200);
        ModelResponse r = call.get();

        assertThat(r.outputLength()).isEqualTo(100);
        assertThat(r.outputVersions()).containsOnly(0);
        int[] kept = slice(r.outputTokens(), 0, beforePause);
        ModelServer reference = servers.reference(v0);
        assertThat(kept).containsExactly(slice(servers.referenceTokens(reference, PROMPT, g, 100), 0, beforePause));
        assertThat(slice(r.outputTokens(), beforePause, 100))
                .containsExactly(
                        servers.referenceTokens(reference, TestSupport.concat(PROMPT, kept), g, 100 - beforePause));
        assertThat(server.stats().requestsAborted()).isEqualTo(1);
    }

    @Test
    void aRidAlreadyInFlightIsRefusedWith400NamingItAndTheServerStaysInRotation() throws Exception {
        ModelServer server = start(
                ModelServerConfig.defaults().withLatency(LiveServers.SLOW_DECODE),
                Backend.SGLANG,
                TestSupport.config());
        ModelRequest first = ModelRequest.of(PROMPT, LiveServers.seededToLength(10_000, 1, 1.0));
        BackgroundGenerate running = BackgroundGenerate.start(engine, first);
        TestSupport.await(
                "the first request to be decoding", WAIT, () -> server.stats().running() == 1);

        ModelRequest sameRid = ModelRequest.of(first.rid(), PROMPT, LiveServers.seededToLength(5, 1, 1.0));
        assertThatThrownBy(() -> engine.generate(sameRid))
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining("attempt 1 on " + LiveServers.address(server) + ": HTTP 400: ")
                .hasMessageContaining("rid '" + first.rid() + "' is already in flight on this server");

        ServerStats stats = engine.serverStats().get(0);
        assertThat(stats.inRotation()).isTrue();
        assertThat(stats.outstanding()).isEqualTo(1);
        running.thread.interrupt();
        assertThat(running.failure(10)).isInstanceOf(InterruptedException.class);
    }

    @Test
    void aTimedOutAttemptIsAbortedOnItsServerBeforeItsRidIsSentThereAgain() throws Exception {
        // A 400 ms decode step: the server runs the abort only between steps, so a retry that did not
        // wait for the abort would find the rid still in flight (HTTP 400).
        ModelServer server = start(
                ModelServerConfig.defaults()
                        .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(400), Duration.ZERO)),
                Backend.SGLANG,
                TestSupport.config().requestTimeout(Duration.ofSeconds(1)).requestRetries(2));
        ModelRequest request = ModelRequest.of(PROMPT, LiveServers.seededToLength(10_000, 1, 1.0));

        assertThatThrownBy(() -> engine.generate(request))
                .isInstanceOf(GenerationException.class)
                .hasMessageContaining("attempt 1 on " + LiveServers.address(server) + ": timed out after 1.0 s")
                .hasMessageContaining("attempt 2 on " + LiveServers.address(server) + ": timed out after 1.0 s");

        TestSupport.await(
                "both attempts to be aborted on the server",
                WAIT,
                () -> server.stats().requestsAborted() == 2 && server.stats().running() == 0);
        assertThat(server.stats().requestsTotal()).isEqualTo(2);
    }
}
