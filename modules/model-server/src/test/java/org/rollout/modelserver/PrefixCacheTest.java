package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The prefix cache on the server, over real HTTP: {@code cached_tokens} on both protocols, prefill
 * charged only for uncached tokens, identical outputs with the cache on and off, flushes on every
 * kind of weight update, LoRA adapters' own prefixes, and what aborted requests leave behind.
 */
class PrefixCacheTest {
    private static final TinyLmWeights WEIGHTS = TinyLmWeights.seeded(3, 0.5, 0.85f);
    /** 20 prompt tokens: a–t. */
    private static final int[] PROMPT = range('a', 20);

    @TempDir
    Path dir;

    private final List<ModelServer> servers = new ArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(ModelServer::close);
    }

    private ServerClient start(ModelServerConfig config) throws IOException {
        ModelServer server = ModelServer.start(config);
        servers.add(server);
        return new ServerClient(server);
    }

    private ServerClient start() throws IOException {
        return start(ModelServerConfig.defaults().withWeights(WEIGHTS));
    }

    private static int[] range(int first, int n) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = first + i;
        }
        return ids;
    }

    private static String ids(int[] tokens) {
        return Arrays.toString(tokens).replace(" ", "");
    }

    /** A /generate of five tokens under a fixed seed, with logprobs; {@code extra} adds top-level fields. */
    private static JsonNode generate(ServerClient c, int[] prompt, String extra) {
        ServerClient.Reply r = c.post(
                "/generate",
                "{\"input_ids\":" + ids(prompt) + ",\"sampling_params\":{\"max_new_tokens\":5,\"ignore_eos\":true,"
                        + "\"temperature\":1.0,\"sampling_seed\":7},\"return_logprob\":true" + extra + "}");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.json();
    }

    private static JsonNode generate(ServerClient c, int[] prompt) {
        return generate(c, prompt, "");
    }

    private static int cached(JsonNode sglangReply) {
        return sglangReply.at("/meta_info/cached_tokens").asInt(-1);
    }

    private static int[] outputIds(JsonNode sglangReply) {
        JsonNode ids = sglangReply.get("output_ids");
        int[] out = new int[ids.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ids.get(i).asInt();
        }
        return out;
    }

    private static JsonNode prefixCache(ServerClient c) {
        return c.get("/get_server_info").json().get("prefix_cache");
    }

    @Test
    void aRepeatedPromptReportsItsCachedPrefixOnBothProtocolsAndIsChargedOnlyTheRest() throws IOException {
        ServerClient c = start();
        JsonNode first = generate(c, PROMPT);
        JsonNode second = generate(c, PROMPT);
        // The next turn of a conversation: the first reply's sequence and two new tokens.
        int[] turn =
                GenerateEndpointTest.concat(GenerateEndpointTest.concat(PROMPT, outputIds(first)), new int[] {10, 11});
        JsonNode next = generate(c, turn);
        ServerClient.Reply vllm =
                c.post("/v1/completions", "{\"prompt\":" + ids(PROMPT) + ",\"max_tokens\":3,\"seed\":7}");

        assertThat(cached(first)).isZero();
        assertThat(cached(second)).as("all but the last prompt token").isEqualTo(19);
        assertThat(cached(next))
                .as("the prompt and every output token but the last were cached when the first request ended")
                .isEqualTo(20 + 4);
        assertThat(vllm.json().at("/usage/prompt_tokens_details/cached_tokens").asInt(-1))
                .isEqualTo(19);
        assertThat(vllm.json().at("/usage/prompt_tokens").asInt()).isEqualTo(20);

        JsonNode info = c.get("/get_server_info").json();
        long prompts = 20 + 20 + turn.length + 20;
        long hits = 19 + 24 + 19;
        assertThat(info.at("/prefix_cache/prompt_tokens").asLong()).isEqualTo(prompts);
        assertThat(info.at("/prefix_cache/hit_tokens").asLong()).isEqualTo(hits);
        assertThat(info.at("/prefix_cache/hit_rate").asDouble()).isEqualTo(hits / (double) prompts);
        assertThat(info.get("prefill_tokens").asLong())
                .as("the prefill charged to the latency model: uncached tokens only")
                .isEqualTo(prompts - hits);
    }

    @Test
    void positionsWhoseLogprobsAreAskedForAreNeverTakenFromTheCache() throws IOException {
        ServerClient c = start();
        generate(c, PROMPT);

        JsonNode fromThree = generate(c, PROMPT, ",\"logprob_start_len\":3");
        ServerClient.Reply promptLogprobs = c.post(
                "/v1/completions",
                "{\"prompt\":" + ids(PROMPT) + ",\"max_tokens\":3,\"seed\":7,\"prompt_logprobs\":0}");

        assertThat(cached(fromThree))
                .as("SGLang reuses at most logprob_start_len tokens")
                .isEqualTo(3);
        assertThat(fromThree.at("/meta_info/input_token_logprobs").size()).isEqualTo(17);
        assertThat(promptLogprobs
                        .json()
                        .at("/usage/prompt_tokens_details/cached_tokens")
                        .asInt(-1))
                .isZero();
    }

    @Test
    void theServerInfoReportsTheCachesCounters() throws IOException {
        ServerClient c = start();
        JsonNode empty = prefixCache(c);
        assertThat(empty.get("capacity_tokens").asLong()).isEqualTo(ModelServerConfig.DEFAULT_PREFIX_CACHE_TOKENS);
        assertThat(empty.get("cached_tokens").asLong()).isZero();
        assertThat(empty.get("hit_rate").asDouble()).isZero();

        generate(c, PROMPT);
        generate(c, PROMPT);

        JsonNode s = prefixCache(c);
        assertThat(s.get("prompt_tokens").asLong()).isEqualTo(40);
        assertThat(s.get("hit_tokens").asLong()).isEqualTo(19);
        assertThat(s.get("cached_tokens").asLong())
                .as("both requests' computed sequences share one path: 20 prompt + 4 output tokens")
                .isEqualTo(24);
        assertThat(s.get("locked_tokens").asLong()).isZero();
        assertThat(s.get("evicted_tokens").asLong()).isZero();
        assertThat(s.get("flushes").asLong()).isZero();
    }

    @Test
    void aSmallCacheEvictsTheLeastRecentlyUsedSequence() throws IOException {
        ServerClient c = start(ModelServerConfig.defaults().withWeights(WEIGHTS).withPrefixCacheTokens(30));
        int[] other = range('A', 20);
        generate(c, PROMPT);
        generate(c, other); // 24 more tokens do not fit beside PROMPT's 24: PROMPT's go

        assertThat(cached(generate(c, PROMPT))).isZero();
        JsonNode s = prefixCache(c);
        assertThat(s.get("capacity_tokens").asLong()).isEqualTo(30);
        assertThat(s.get("cached_tokens").asLong())
                .as("PROMPT's sequence again")
                .isEqualTo(24);
        assertThat(s.get("evicted_tokens").asLong()).isEqualTo(24 + 24);
    }

    /**
     * The cache only changes accounting: the same requests (shared prefixes, logprobs of prompts and
     * of top alternatives) give the same tokens and logprobs with it on and off.
     */
    @Test
    void outputsAreIdenticalWithAndWithoutTheCache() throws IOException {
        ServerClient on = start();
        ServerClient off =
                start(ModelServerConfig.defaults().withWeights(WEIGHTS).withPrefixCacheTokens(0));
        List<String> sglang = new ArrayList<>();
        List<String> vllm = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            int[] prompt = GenerateEndpointTest.concat(PROMPT, range('0', i % 4));
            sglang.add("{\"input_ids\":" + ids(prompt) + ",\"sampling_params\":{\"max_new_tokens\":12,"
                    + "\"temperature\":0.9,\"sampling_seed\":" + i + "},\"return_logprob\":true"
                    + (i % 3 == 0 ? ",\"logprob_start_len\":" + i : "") + "}");
            vllm.add("{\"prompt\":" + ids(prompt) + ",\"max_tokens\":12,\"temperature\":0.9,\"seed\":" + i
                    + ",\"logprobs\":3" + (i % 2 == 0 ? ",\"echo\":true" : "") + "}");
        }
        int hits = 0;
        for (int i = 0; i < sglang.size(); i++) {
            JsonNode a = on.post("/generate", sglang.get(i)).json();
            JsonNode b = off.post("/generate", sglang.get(i)).json();
            assertThat(a.get("output_ids")).isEqualTo(b.get("output_ids"));
            assertThat(a.get("text")).isEqualTo(b.get("text"));
            assertThat(a.at("/meta_info/output_token_logprobs")).isEqualTo(b.at("/meta_info/output_token_logprobs"));
            assertThat(a.at("/meta_info/input_token_logprobs")).isEqualTo(b.at("/meta_info/input_token_logprobs"));
            assertThat(a.at("/meta_info/finish_reason")).isEqualTo(b.at("/meta_info/finish_reason"));
            assertThat(cached(b)).isZero();
            hits += cached(a);

            JsonNode va = on.post("/v1/completions", vllm.get(i)).json();
            JsonNode vb = off.post("/v1/completions", vllm.get(i)).json();
            assertThat(va.at("/choices/0")).isEqualTo(vb.at("/choices/0"));
            assertThat(vb.at("/usage/prompt_tokens_details/cached_tokens").asInt(-1))
                    .isZero();
            hits += va.at("/usage/prompt_tokens_details/cached_tokens").asInt();
        }
        assertThat(hits).as("the cache did serve hits").isPositive();
        assertThat(prefixCache(off).get("capacity_tokens").asLong()).isZero();
        assertThat(prefixCache(off).get("cached_tokens").asLong()).isZero();
    }

    /** Generates {@link #PROMPT} twice, checking the second hits the cache. */
    private static void warm(ServerClient c) {
        generate(c, PROMPT);
        assertThat(cached(generate(c, PROMPT))).isEqualTo(19);
    }

    private void assertFlushed(ServerClient c, int flushes) {
        assertThat(prefixCache(c).get("flushes").asInt()).isEqualTo(flushes);
        assertThat(prefixCache(c).get("cached_tokens").asInt()).isZero();
        assertThat(cached(generate(c, PROMPT))).as("new weights, new KV").isZero();
    }

    @Test
    void everyKindOfWeightUpdateFlushesTheCache() throws Exception {
        ServerClient c = start();
        Path file = dir.resolve("w1.rlm");
        TinyLmWeights.seeded(8).write(file);
        byte[] bytes = Files.readAllBytes(file);

        warm(c);
        assertThat(c.post("/update_weights_from_disk", "{\"model_path\":\"" + file + "\"}")
                        .status())
                .isEqualTo(200);
        assertFlushed(c, 1);

        warm(c);
        HttpResponse<String> uploaded = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(servers.get(0).baseUrl() + "/update_weights_from_bytes"))
                                .timeout(ServerClient.TIMEOUT)
                                .header("Content-Type", "application/octet-stream")
                                .POST(HttpRequest.BodyPublishers.ofByteArray(bytes))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(uploaded.statusCode()).as(uploaded.body()).isEqualTo(200);
        assertFlushed(c, 2);

        warm(c);
        try (WeightGroupMaster rank0 = new WeightGroupMaster()) {
            assertThat(c.post(
                                    "/init_weights_update_group",
                                    "{\"master_address\":\"127.0.0.1\",\"master_port\":" + rank0.port()
                                            + ",\"rank_offset\":1,\"world_size\":2,\"backend\":\"nccl\","
                                            + "\"group_name\":\"g\"}")
                            .status())
                    .isEqualTo(200);
            CompletableFuture<ServerClient.Reply> update = c.postAsync(
                    "/update_weights_from_distributed",
                    "{\"names\":[\"w\"],\"dtypes\":[\"uint8\"],\"shapes\":[[" + bytes.length
                            + "]],\"group_name\":\"g\",\"flush_cache\":false}");
            rank0.broadcast(1, List.of(bytes), ServerClient.TIMEOUT);
            ServerClient.Reply r = ServerClient.join(update);
            assertThat(r.status()).as(r.body()).isEqualTo(200);
        }
        assertFlushed(c, 3);
    }

    /** A request started before a weight update computed its KV with the old weights: it inserts nothing. */
    @Test
    void aRequestRunningAcrossAWeightUpdateLeavesNothingInTheNewCache() throws Exception {
        ServerClient c = start(ModelServerConfig.defaults()
                .withWeights(WEIGHTS)
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(1), Duration.ZERO)));
        Path file = dir.resolve("w1.rlm");
        TinyLmWeights.seeded(8).write(file);
        CompletableFuture<ServerClient.Reply> running = c.postAsync(
                "/generate",
                "{\"rid\":\"long\",\"input_ids\":" + ids(PROMPT)
                        + ",\"sampling_params\":{\"max_new_tokens\":1000000,\"ignore_eos\":true}}");
        ServerClient.await("the request to run", () -> servers.get(0).stats().running() == 1);

        assertThat(c.post("/update_weights_from_disk", "{\"model_path\":\"" + file + "\"}")
                        .status())
                .isEqualTo(200);
        assertThat(c.post("/abort_request", "{\"rid\":\"long\"}").status()).isEqualTo(200);
        JsonNode aborted = ServerClient.join(running).json();

        assertThat(aborted.at("/meta_info/finish_reason/type").asText()).isEqualTo("abort");
        assertThat(aborted.at("/meta_info/completion_tokens").asInt()).isPositive();
        assertThat(prefixCache(c).get("cached_tokens").asInt()).isZero();
        assertThat(cached(generate(c, PROMPT))).isZero();
    }

    @Test
    void aRequestAbortedAfterItsPrefillKeepsWhatItComputed() throws Exception {
        ServerClient c = start(ModelServerConfig.defaults()
                .withWeights(WEIGHTS)
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(1), Duration.ZERO)));
        CompletableFuture<ServerClient.Reply> running = c.postAsync(
                "/generate",
                "{\"rid\":\"long\",\"input_ids\":" + ids(PROMPT)
                        + ",\"sampling_params\":{\"max_new_tokens\":1000000,\"ignore_eos\":true}}");
        ServerClient.await("the request to run", () -> servers.get(0).stats().running() == 1);
        assertThat(prefixCache(c).get("locked_tokens").asInt())
                .as("a running request's prompt is locked")
                .isEqualTo(20);

        assertThat(c.post("/abort_request", "{\"rid\":\"long\"}").status()).isEqualTo(200);
        JsonNode aborted = ServerClient.join(running).json();
        int[] partial = outputIds(aborted);

        assertThat(partial).isNotEmpty();
        assertThat(prefixCache(c).get("locked_tokens").asInt()).isZero();
        assertThat(cached(generate(c, GenerateEndpointTest.concat(PROMPT, partial))))
                .as("a resumed request finds the prompt and the partial output but its last token")
                .isEqualTo(20 + partial.length - 1);
    }

    @Test
    void aRequestAbortedBeforeItsPrefillInsertsNothing() throws IOException {
        ServerClient c = start();
        assertThat(c.post("/pause_generation", "{\"mode\":\"in_place\"}").status())
                .isEqualTo(200);
        CompletableFuture<ServerClient.Reply> held =
                c.postAsync("/generate", "{\"rid\":\"held\",\"input_ids\":" + ids(PROMPT) + ",\"sampling_params\":{}}");
        ServerClient.await("the request to queue", () -> servers.get(0).stats().queued() == 1);

        assertThat(c.post("/abort_request", "{\"rid\":\"held\"}").status()).isEqualTo(200);
        JsonNode aborted = ServerClient.join(held).json();
        assertThat(c.post("/continue_generation", "{}").status()).isEqualTo(200);

        assertThat(aborted.at("/meta_info/finish_reason/message").asText())
                .isEqualTo(GenerationScheduler.ABORT_BEFORE_PREFILL);
        assertThat(cached(aborted)).isZero();
        JsonNode s = prefixCache(c);
        assertThat(s.get("prompt_tokens").asInt()).isZero();
        assertThat(s.get("cached_tokens").asInt()).isZero();
        assertThat(cached(generate(c, PROMPT))).isZero();
    }

    @Test
    void eachLoraAdapterAndTheBaseModelHaveTheirOwnPrefixes() throws IOException {
        ServerClient c = start();
        for (String name : List.of("a1", "a2")) {
            Path file = dir.resolve(name + ".json");
            LoraAdapter.seeded(name.hashCode(), 4, 0.5, 1.0f).write(file);
            assertThat(c.post("/load_lora_adapter", "{\"lora_name\":\"" + name + "\",\"lora_path\":\"" + file + "\"}")
                            .status())
                    .isEqualTo(200);
        }
        warm(c);

        assertThat(cached(generate(c, PROMPT, ",\"lora_path\":\"a1\"")))
                .as("the base model's prefix is not a1's")
                .isZero();
        assertThat(cached(generate(c, PROMPT, ",\"lora_path\":\"a1\""))).isEqualTo(19);
        assertThat(cached(generate(c, PROMPT, ",\"lora_path\":\"a2\"")))
                .as("nor is a1's a2's")
                .isZero();
        ServerClient.Reply viaModel =
                c.post("/v1/completions", "{\"prompt\":" + ids(PROMPT) + ",\"max_tokens\":3,\"model\":\"a2\"}");
        assertThat(viaModel.json()
                        .at("/usage/prompt_tokens_details/cached_tokens")
                        .asInt(-1))
                .as("vLLM's model field selects a2's prefixes")
                .isEqualTo(19);
        assertThat(cached(generate(c, PROMPT))).isEqualTo(19);

        // An adapter loaded again under the same name has other weights: its old prefixes are not its own.
        Path replaced = dir.resolve("a1-new.json");
        LoraAdapter.seeded(99, 4, 0.5, 1.0f).write(replaced);
        c.post("/load_lora_adapter", "{\"lora_name\":\"a1\",\"lora_path\":\"" + replaced + "\"}");
        assertThat(cached(generate(c, PROMPT, ",\"lora_path\":\"a1\""))).isZero();
    }
}
