package org.rollout.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.rollout.api.InvalidConfigException;
import org.rollout.modelserver.TinyLmWeights;

/**
 * What a built-in model server serves, from its {@code GET /get_model_info}, compared with the
 * weights a trainer starts from: vocabulary size, λ ({@code decay}), the parameters ({@code
 * weights_digest}, {@link TinyLmWeights#parameterDigest()}) and the version.
 */
final class ServedWeights {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private ServedWeights() {}

    /**
     * What differs between the weights {@code server} serves and {@code expected}, in words
     * ("λ 0.85 served, 1.0 expected; parameters differ (digest … served, … expected)"), or null
     * when they match.
     *
     * @param server {@code host:port}
     * @throws InvalidConfigException for {@code --servers} when the server cannot be asked or
     *     answers something that is not the built-in model's information
     */
    static String mismatch(String server, TinyLmWeights expected) throws InterruptedException {
        JsonNode info = modelInfo(server);
        List<String> differences = new ArrayList<>();
        int vocab = info.path("vocab_size").asInt(-1);
        if (vocab != expected.vocabSize()) {
            differences.add("vocab_size " + vocab + " served, " + expected.vocabSize() + " expected");
        }
        double decay = info.path("decay").asDouble(Double.NaN);
        if (Math.abs(decay - expected.decay()) > 1e-6) {
            differences.add(String.format(Locale.ROOT, "λ (decay) %s served, %s expected", decay, expected.decay()));
        }
        String digest = info.path("weights_digest").asText("");
        if (!digest.equals(expected.parameterDigest())) {
            differences.add("parameters differ (weights_digest " + (digest.isEmpty() ? "absent" : digest) + " served, "
                    + expected.parameterDigest() + " expected)");
        }
        String version = info.path("weight_version").asText("");
        if (!version.equals(Integer.toString(expected.version()))) {
            differences.add("weight_version " + version + " served, " + expected.version() + " expected");
        }
        return differences.isEmpty() ? null : String.join("; ", differences);
    }

    private static JsonNode modelInfo(String server) throws InterruptedException {
        URI uri;
        try {
            uri = URI.create("http://" + server + "/get_model_info");
        } catch (IllegalArgumentException e) {
            throw new InvalidConfigException("--servers", server, "host:port of a model server");
        }
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build()) {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(uri).timeout(TIMEOUT).GET().build(), HttpResponse.BodyHandlers.ofString());
            JsonNode info = r.statusCode() == 200 ? JSON.readTree(r.body()) : null;
            if (info == null || !info.has("vocab_size")) {
                throw new InvalidConfigException(
                        "--servers",
                        server,
                        "a built-in model server (GET /get_model_info answered " + r.statusCode() + " without"
                                + " vocab_size)");
            }
            return info;
        } catch (IOException | IllegalArgumentException e) {
            if (e instanceof InvalidConfigException ice) {
                throw ice;
            }
            throw new InvalidConfigException(
                    "--servers", server, "a reachable built-in model server (GET " + uri + " failed: " + e + ")");
        }
    }
}
