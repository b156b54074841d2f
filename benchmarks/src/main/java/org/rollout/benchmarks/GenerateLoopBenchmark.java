package org.rollout.benchmarks;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.StopReason;
import org.rollout.config.InferenceConfig;
import org.rollout.config.ServerAddress;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.inference.SglangProtocol;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * The cost of the engine's generate loop for one segment, against a raw HTTP call that sends the
 * same bytes to the same server ("the generate-loop overhead per segment against a raw
 * HTTP call to the same server").
 *
 * <pre>
 *   engineGenerate:  RemoteInferenceEngine.generate(request)          ─┐
 *                      gate, pool choice, pinned version, body written,  │ one HttpClient
 *                      sendAsync + timed get, streaming parse,           │ (RemoteInferenceEngine
 *                      accumulate, ModelResponse                         │  .newHttpClient),
 *   rawPost:         HttpClient.send(POST /generate, same bytes)        │ one in-process ModelServer
 *   rawPostAsync:    HttpClient.sendAsync(same).get(): the engine's     │ on 127.0.0.1 (no latency
 *                      way of calling, without the loop                ─┘  model, greedy, seed 7)
 *   interleaved:     the three calls back to back in rotating order, each timed: same load for all
 * </pre>
 *
 * <p>All produce {@code tokens} tokens (greedy, {@code ignore_eos}) in exactly one segment, so the
 * server does the same work; {@link #setUp()} checks that the engine and the raw call return the
 * same tokens before anything is measured. One thread: the HTTP connection is reused from the
 * client's pool on every call. On a shared machine the load drifts between JMH's separate runs, so
 * the ratio to trust is {@link #interleaved}'s.
 *
 * <p>Run through {@link BenchmarkMain}, which prints the ratios; never part of the test phase.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class GenerateLoopBenchmark {
    /** Output tokens per call: one token (HTTP and the loop dominate) and a longer segment. */
    @Param({"1", "64"})
    public int tokens;

    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10, 72, 101, 108, 108, 111, 258, 10, 257, 97};
    private static final String RID = "generate-loop-benchmark";

    private ModelServer server;
    private HttpClient client;
    private RemoteInferenceEngine engine;
    private ModelRequest request;
    private URI generateUri;
    private byte[] rawBody;
    private Duration requestTimeout;

    @Setup(Level.Trial)
    public void setUp() throws IOException, InterruptedException {
        server = ModelServer.start(ModelServerConfig.defaults().withSeed(7));
        InferenceConfig config = InferenceConfig.builder()
                .addresses("127.0.0.1:" + server.port())
                .build();
        client = RemoteInferenceEngine.newHttpClient(config);
        engine = new RemoteInferenceEngine(config, client);
        GenerationConfig g = GenerationConfig.builder()
                .greedy(true)
                .ignoreEos(true)
                .maxNewTokens(tokens)
                .seed(7L)
                .build();
        request = ModelRequest.of(RID, PROMPT, g);
        // The very bytes the engine sends for this request's first (and only) segment.
        rawBody = SglangProtocol.INSTANCE.generateBody(RID, PROMPT, new int[0], 0, g, tokens);
        generateUri = URI.create(server.baseUrl() + "/generate");
        requestTimeout = config.requestTimeout();

        ModelResponse viaEngine = engineGenerate();
        int[] viaRaw = tokensOf(rawPost());
        if (viaEngine.stopReason() != StopReason.LENGTH
                || viaEngine.outputLength() != tokens
                || !Arrays.equals(viaEngine.outputTokens(), viaRaw)) {
            throw new IllegalStateException("the engine and the raw call disagree for tokens=" + tokens + ": engine "
                    + Arrays.toString(viaEngine.outputTokens()) + " (" + viaEngine.stopReason() + "), raw "
                    + Arrays.toString(viaRaw));
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        engine.close();
        client.close();
        server.close();
    }

    /** One {@code generate} of {@code tokens} tokens: one segment through the engine's loop. */
    @Benchmark
    public ModelResponse engineGenerate() throws InterruptedException {
        return engine.generate(request);
    }

    /** The same request as bytes, sent with {@code HttpClient.send}; the response bytes are returned unparsed. */
    @Benchmark
    public byte[] rawPost() throws IOException, InterruptedException {
        return check(client.send(post(), HttpResponse.BodyHandlers.ofByteArray()));
    }

    /**
     * As {@link #rawPost}, but through {@code sendAsync(…).get()}, as the engine calls (so that an
     * interrupted caller can cancel the exchange and a stalled body meets a deadline). The JDK
     * schedules an asynchronous exchange on the client's executor and completes it through the
     * common pool, where {@code send} runs inline; this isolates what that costs.
     */
    @Benchmark
    public byte[] rawPostAsync() throws IOException, InterruptedException {
        try {
            return check(client.sendAsync(post(), HttpResponse.BodyHandlers.ofByteArray())
                    .get());
        } catch (ExecutionException e) {
            throw new IOException("POST /generate failed", e.getCause());
        }
    }

    private HttpRequest post() {
        return HttpRequest.newBuilder(generateUri)
                .timeout(requestTimeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(rawBody))
                .build();
    }

    private static byte[] check(HttpResponse<byte[]> response) {
        if (response.statusCode() != 200) {
            throw new IllegalStateException("POST /generate answered HTTP " + response.statusCode());
        }
        return response.body();
    }

    /**
     * The per-call times of {@link #interleaved}, summed over one iteration; JMH reports them as
     * secondary results ({@code engineNanos}, {@code rawNanos}, {@code rawAsyncNanos}, {@code rounds}).
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class InterleavedTimes {
        public long engineNanos;
        public long rawNanos;
        public long rawAsyncNanos;
        public long rounds;
        private int firstCall;

        @Setup(Level.Iteration)
        public void reset() {
            engineNanos = 0;
            rawNanos = 0;
            rawAsyncNanos = 0;
            rounds = 0;
        }
    }

    /**
     * One round: the engine call, the raw call and the raw async call back to back, starting with a
     * different one each round, each timed on its own. All three see the same machine load, so their
     * ratios hold even when the absolute times drift (calls take hundreds of microseconds or more;
     * {@code System.nanoTime} around them costs nothing that matters).
     */
    @Benchmark
    public void interleaved(InterleavedTimes times, Blackhole blackhole) throws IOException, InterruptedException {
        int first = times.firstCall;
        times.firstCall = (first + 1) % 3;
        for (int k = 0; k < 3; k++) {
            int call = (first + k) % 3;
            long t0 = System.nanoTime();
            switch (call) {
                case 0 -> blackhole.consume(engineGenerate());
                case 1 -> blackhole.consume(rawPost());
                default -> blackhole.consume(rawPostAsync());
            }
            long elapsed = System.nanoTime() - t0;
            switch (call) {
                case 0 -> times.engineNanos += elapsed;
                case 1 -> times.rawNanos += elapsed;
                default -> times.rawAsyncNanos += elapsed;
            }
        }
        times.rounds++;
    }

    /** The output ids of a raw response (setup only; not measured). */
    private int[] tokensOf(byte[] body) {
        return SglangProtocol.INSTANCE
                .parseGenerate(body, new ServerAddress("127.0.0.1", server.port()), RID, tokens)
                .tokens();
    }
}
