package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelResponse;
import org.rollout.config.ServerAddress;
import org.rollout.modelserver.LatencyModel;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLm;
import org.rollout.modelserver.TinyLmWeights;

/**
 * In-process built-in model servers on 127.0.0.1 for the end-to-end tests: started through one
 * handle and all stopped by {@link #close()}, plus a raw HTTP client for reference runs and direct
 * control calls that do not go through the engine under test.
 *
 * <p>Reference runs rely on the model server's determinism: a request with a {@code sampling_seed}
 * draws from its own random stream, so the same weights, context and seed give the same tokens on
 * any server, whatever else it is doing.
 */
final class LiveServers implements AutoCloseable {
    /** Every wait in these tests: generous, because the machine is shared. */
    static final Duration WAIT = Duration.ofSeconds(20);

    /** A decode step of 10 ms: about 100 tokens/s, so a generation of a few hundred tokens stays in flight. */
    static final LatencyModel SLOW_DECODE = new LatencyModel(Duration.ZERO, Duration.ofMillis(10), Duration.ZERO);

    static final ObjectMapper JSON = new ObjectMapper();

    private final List<ModelServer> started = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(WAIT)
            .build();

    /** Starts a server; {@link #close()} stops it. */
    ModelServer start(ModelServerConfig config) throws IOException {
        ModelServer s = ModelServer.start(config);
        started.add(s);
        return s;
    }

    /** Starts a fast server (no latency model) serving {@code weights}: the reference for expected outputs. */
    ModelServer reference(TinyLmWeights weights) throws IOException {
        return start(ModelServerConfig.defaults().withWeights(weights));
    }

    static ServerAddress address(ModelServer s) {
        return new ServerAddress("127.0.0.1", s.port());
    }

    /**
     * Weights whose next-token distributions are far from uniform (std 0.5), so that two seeds give
     * clearly different logprobs.
     */
    static TinyLmWeights weights(long seed, int version) {
        return TinyLmWeights.seeded(seed, 0.5, TinyLmWeights.DEFAULT_DECAY).withVersion(version);
    }

    /** Sampling at {@code temperature} with a fixed seed, running to the budget (ignore_eos). */
    static GenerationConfig seededToLength(int maxNewTokens, long seed, double temperature) {
        return GenerationConfig.builder()
                .maxNewTokens(maxNewTokens)
                .temperature(temperature)
                .seed(seed)
                .ignoreEos(true)
                .build();
    }

    /** What a raw SGLang {@code /generate} call returned. */
    record RawGeneration(int status, int[] tokens, float[] logprobs, String finishType, JsonNode body) {}

    /**
     * POSTs an SGLang {@code /generate} body built here (not by the engine's protocol code) and
     * parses the output.
     */
    RawGeneration generate(ModelServer s, String rid, int[] inputIds, GenerationConfig g, int maxNewTokens)
            throws Exception {
        ObjectNode body = JSON.createObjectNode();
        body.put("rid", rid);
        ArrayNode ids = body.putArray("input_ids");
        Arrays.stream(inputIds).forEach(ids::add);
        ObjectNode sp = body.putObject("sampling_params");
        sp.put("max_new_tokens", maxNewTokens);
        sp.put("temperature", g.effectiveTemperature());
        sp.put("ignore_eos", g.ignoreEos());
        ArrayNode stops = sp.putArray("stop_token_ids");
        g.stopTokenIds().forEach(stops::add);
        if (g.seed() != null) {
            sp.put("sampling_seed", g.seed());
        }
        body.put("return_logprob", true);
        JsonNode reply = post(s, "/generate", body.toString());
        int status = reply.path("_status").asInt();
        if (status != 200) {
            return new RawGeneration(status, new int[0], new float[0], null, reply);
        }
        JsonNode entries = reply.path("meta_info").path("output_token_logprobs");
        int[] tokens = new int[entries.size()];
        float[] logprobs = new float[entries.size()];
        for (int i = 0; i < entries.size(); i++) {
            logprobs[i] = (float) entries.get(i).get(0).asDouble();
            tokens[i] = entries.get(i).get(1).asInt();
        }
        return new RawGeneration(
                status,
                tokens,
                logprobs,
                reply.path("meta_info").path("finish_reason").path("type").asText(),
                reply);
    }

    /** The tokens a seeded request produces from {@code context} on {@code reference}. */
    int[] referenceTokens(ModelServer reference, int[] context, GenerationConfig g, int maxNewTokens) throws Exception {
        RawGeneration r = generate(reference, "reference-" + System.nanoTime(), context, g, maxNewTokens);
        assertThat(r.status())
                .as("reference run on %s: %s", reference.baseUrl(), r.body())
                .isEqualTo(200);
        return r.tokens();
    }

    /** POSTs {@code body} to {@code path}; the reply's JSON with its HTTP status as {@code _status}. */
    JsonNode post(ModelServer s, String path, String body) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(s.baseUrl() + path))
                .timeout(WAIT)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        HttpResponse<String> r =
                http.sendAsync(req, HttpResponse.BodyHandlers.ofString()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        ObjectNode out = r.body().isEmpty() ? JSON.createObjectNode() : (ObjectNode) JSON.readTree(r.body());
        out.put("_status", r.statusCode());
        return out;
    }

    /** GETs {@code path}; the body, which must come with HTTP 200. */
    String get(ModelServer s, String path) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(s.baseUrl() + path))
                .timeout(WAIT)
                .GET()
                .build();
        HttpResponse<String> r =
                http.sendAsync(req, HttpResponse.BodyHandlers.ofString()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(r.statusCode())
                .as("GET %s%s: %s", s.baseUrl(), path, r.body())
                .isEqualTo(200);
        return r.body();
    }

    /**
     * Asserts that {@code r}'s logprobs at output positions {@code [from, to)} are the model's
     * log-probabilities of those tokens under {@code weights} at {@code temperature}, given the
     * prompt and every earlier output token.
     */
    static void assertLogprobsUnder(TinyLmWeights weights, ModelResponse r, int from, int to, double temperature) {
        double[] expected = expectedLogprobs(weights, r, temperature);
        for (int i = from; i < to; i++) {
            assertThat((double) r.outputLogprob(i))
                    .as(
                            "logprob of output token %d (id %d) under weight version %d",
                            i, r.outputToken(i), weights.version())
                    .isCloseTo(expected[i], within(1e-4));
        }
    }

    /** The model's logprob of every output token of {@code r} under {@code weights}. */
    static double[] expectedLogprobs(TinyLmWeights weights, ModelResponse r, double temperature) {
        int[] sequence = TestSupport.concat(r.inputTokens(), r.outputTokens());
        return TinyLm.sequenceLogprobs(weights, sequence, r.inputLength(), temperature);
    }

    static int[] slice(int[] a, int from, int to) {
        return Arrays.copyOfRange(a, from, to);
    }

    /** Stops every server started here (crashed ones are already stopped). */
    @Override
    public void close() {
        for (ModelServer s : started) {
            s.close();
        }
        started.clear();
        http.close();
    }
}
