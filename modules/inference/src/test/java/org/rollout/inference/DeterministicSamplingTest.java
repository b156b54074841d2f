package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.WorkflowContext;
import org.rollout.config.Backend;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;

/**
 * {@code deterministic_sampling}: every segment carries a seed derived from its task, slot and
 * segment index, so two runs of the same tasks against fresh built-in model servers (over real
 * HTTP) sample the same tokens, while the slots of one group sample different ones.
 */
class DeterministicSamplingTest {
    private static final int[] PROMPT = {257, 82, 101, 112, 108, 121, 10};
    private static final int TASKS = 3;
    private static final int SLOTS = 4;

    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
    }

    private static GenerationConfig sampling() {
        return GenerationConfig.builder()
                .maxNewTokens(24)
                .temperature(1.0)
                .ignoreEos(true)
                .build();
    }

    /** One run: fresh servers and engine, every (task, slot) generated inside its workflow context. */
    private Map<String, List<Integer>> run(Backend backend, boolean deterministic) throws Exception {
        LiveServers servers = new LiveServers();
        closing.add(servers);
        ModelServer a = servers.start(ModelServerConfig.defaults().withWeights(LiveServers.weights(7, 0)));
        ModelServer b = servers.start(ModelServerConfig.defaults().withWeights(LiveServers.weights(7, 0)));
        RemoteInferenceEngine engine =
                new RemoteInferenceEngine(TestSupport.config(LiveServers.address(a), LiveServers.address(b))
                        .backend(backend)
                        .deterministicSampling(deterministic)
                        .build());
        closing.add(engine::close);
        Map<String, List<Integer>> out = new LinkedHashMap<>();
        for (int task = 0; task < TASKS; task++) {
            for (int slot = 0; slot < SLOTS; slot++) {
                WorkflowContext ctx = WorkflowContext.builder()
                        .taskId(100 + task)
                        .sampleIdx(slot)
                        .groupSize(SLOTS)
                        .build();
                int[] tokens = WorkflowContext.callWith(ctx, () -> engine.generate(ModelRequest.of(PROMPT, sampling())))
                        .outputTokens();
                out.put(task + ":" + slot, Arrays.stream(tokens).boxed().toList());
            }
        }
        return out;
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void twoRunsOfTheSameTasksSampleTheSameTokensAndSlotsDiffer(Backend backend) throws Exception {
        Map<String, List<Integer>> first = run(backend, true);
        Map<String, List<Integer>> second = run(backend, true);

        assertThat(second).isEqualTo(first);
        Set<List<Integer>> distinct = new HashSet<>(first.values());
        assertThat(distinct).as("every (task, slot) samples its own tokens").hasSize(TASKS * SLOTS);
    }

    @Test
    void withoutItTwoRunsSampleDifferently() throws Exception {
        // The control: the built-in server draws a fresh seed per request when none is sent.
        assertThat(run(Backend.SGLANG, false)).isNotEqualTo(run(Backend.SGLANG, false));
    }

    @Test
    void theSeedIsSentAsSglangSamplingSeedAndVllmSeedAndChangesWithTheSegment() throws Exception {
        Map<Backend, List<Long>> seeds = new LinkedHashMap<>();
        for (Backend backend : Backend.values()) {
            FakeInferenceServer fake = FakeInferenceServer.start();
            closing.add(fake);
            String path = ServerProtocol.of(backend).generatePath();
            if (backend == Backend.SGLANG) {
                fake.on(path, FakeInferenceServer.sglang(0, 3, "abort"), FakeInferenceServer.sglang(3, 5, "length"));
            } else {
                fake.on(path, FakeInferenceServer.vllm(0, 3, "abort"), FakeInferenceServer.vllm(3, 5, "length"));
            }
            RemoteInferenceEngine engine = TestSupport.engine(TestSupport.config(fake.address())
                    .backend(backend)
                    .deterministicSampling(true)
                    .build());
            closing.add(engine::close);
            GenerationConfig g = GenerationConfig.builder().maxNewTokens(8).build();
            WorkflowContext ctx = WorkflowContext.builder()
                    .taskId(5)
                    .sampleIdx(1)
                    .groupSize(2)
                    .build();
            WorkflowContext.callWith(ctx, () -> engine.generate(ModelRequest.of(PROMPT, g)));
            List<Long> sent = new ArrayList<>();
            for (FakeInferenceServer.Recorded r : fake.requests(path)) {
                JsonNode seed = backend == Backend.SGLANG
                        ? r.json().get("sampling_params").get("sampling_seed")
                        : r.json().get("seed");
                assertThat(seed).as("%s body %s", backend, r.body()).isNotNull();
                assertThat(seed.isIntegralNumber()).isTrue();
                sent.add(seed.asLong());
            }
            assertThat(sent).hasSize(2);
            assertThat(sent.get(0)).as("the resumed segment gets its own seed").isNotEqualTo(sent.get(1));
            assertThat(sent).allSatisfy(s -> assertThat(s).isBetween(0L, SamplingSeeds.BOUND - 1));
            seeds.put(backend, sent);
        }
        assertThat(seeds.get(Backend.SGLANG))
                .as("the seed depends on the task, slot, prompt and segment, not the protocol")
                .isEqualTo(seeds.get(Backend.VLLM));
    }

    @Test
    void outsideATaskTheConfiguredSeedIsSentUnchanged() throws Exception {
        FakeInferenceServer fake = FakeInferenceServer.start();
        closing.add(fake);
        fake.on("/generate", FakeInferenceServer.sglang(0, 4, "length"));
        RemoteInferenceEngine engine = TestSupport.engine(
                TestSupport.config(fake.address()).deterministicSampling(true).build());
        closing.add(engine::close);
        engine.generate(ModelRequest.of(
                PROMPT, GenerationConfig.builder().maxNewTokens(4).seed(77L).build()));
        JsonNode sent = fake.awaitRequests("/generate", 1, Duration.ofSeconds(10))
                .getFirst()
                .json()
                .get("sampling_params")
                .get("sampling_seed");
        assertThat(sent.asLong()).isEqualTo(77L);
    }
}
