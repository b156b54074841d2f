package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.rollout.modelserver.ServerClient.generate;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Many concurrent requests while pauses of both kinds, aborts and weight updates land in between:
 * every request is answered exactly once, with a well-formed result, and the server's counters add
 * up to what was sent.
 */
class EveryRequestEndsOnceTest {
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10};

    @TempDir
    Path dir;

    @Test
    void everyRequestIsAnsweredOnceWithConsistentCountsThroughPausesAbortsAndUpdates() throws IOException {
        Path v1 = dir.resolve("v1.rlm");
        TinyLmWeights.seeded(101).withVersion(1).write(v1);
        Path v2 = dir.resolve("v2.rlm");
        TinyLmWeights.seeded(102).withVersion(2).write(v2);
        LatencyModel steps = new LatencyModel(Duration.ZERO, Duration.ofMillis(1), Duration.ZERO);
        try (ModelServer server = ModelServer.start(
                ModelServerConfig.defaults().withLatency(steps).withMaxRunningRequests(16))) {
            ServerClient client = new ServerClient(server);
            List<CompletableFuture<ServerClient.Reply>> replies = new ArrayList<>();
            List<Integer> budgets = new ArrayList<>();
            String[] control = {
                "/pause_generation|{}",
                "/continue_generation|{}",
                "/pause_generation|{\"mode\":\"in_place\"}",
                "/update_weights_from_disk|{\"model_path\":\"" + v1 + "\"}",
                "/continue_generation|{}",
                "/abort_request|{\"abort_all\":true}",
                "/update_weights_from_disk|{\"model_path\":\"" + v2 + "\",\"abort_all_requests\":true}",
                "/abort_request|{\"rid\":\"r7\"}"
            };
            for (int i = 0; i < 64; i++) {
                int budget = 5 + (i * 37) % 200;
                budgets.add(budget);
                replies.add(client.postAsync(
                        "/generate",
                        generate("r" + i, PROMPT, "\"max_new_tokens\":" + budget + ",\"sampling_seed\":" + i)));
                if (i % 8 == 7) {
                    String[] c = control[i / 8].split("\\|", 2);
                    assertThat(client.post(c[0], c[1]).status()).as(c[0]).isEqualTo(200);
                }
            }
            client.post("/continue_generation", "{}");
            Set<String> versions = Set.of("0", "1", "2");
            for (int i = 0; i < 64; i++) {
                ServerClient.Reply r = ServerClient.join(replies.get(i));
                assertThat(r.status()).isEqualTo(200);
                JsonNode meta = r.json().get("meta_info");
                assertThat(meta.get("id").asText()).isEqualTo("r" + i);
                int n = meta.get("completion_tokens").asInt();
                assertThat(n).isBetween(0, budgets.get(i));
                assertThat(meta.get("output_token_logprobs")).hasSize(n);
                assertThat(r.json().get("output_ids")).hasSize(n);
                assertThat(meta.at("/finish_reason/type").asText()).isIn("stop", "length", "abort");
                assertThat(meta.get("weight_version").asText()).isIn(versions);
                for (JsonNode e : meta.get("output_token_logprobs")) {
                    assertThat(e.get(0).asDouble()).isNegative().isGreaterThan(-50);
                }
            }
            ModelServerStats s = server.stats();
            assertThat(s.requestsTotal()).isEqualTo(64);
            assertThat(s.requestsFinished() + s.requestsAborted()).isEqualTo(64);
            assertThat(s.running()).isZero();
            assertThat(s.queued()).isZero();
            assertThat(s.weightVersion()).isEqualTo(2);
        }
    }
}
