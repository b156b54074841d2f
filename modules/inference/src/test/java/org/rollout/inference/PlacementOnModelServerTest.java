package org.rollout.inference;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.WorkflowContext;
import org.rollout.config.Backend;
import org.rollout.config.RoutingStrategy;
import org.rollout.config.ServerAddress;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.PrefixCacheStats;

/**
 * Placement against four built-in model servers with their prefix caches, over real HTTP: groups
 * of 8 samples of a 512-token prompt and multi-turn trajectories, run once per strategy. The
 * engine's counts of cached tokens are the servers' own, and affine placement reuses more of the
 * prompt than least requests.
 */
class PlacementOnModelServerTest {
    private static final int GROUPS = 4;
    private static final int SAMPLES = 8;
    private static final int TURNS = 4;

    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
    }

    private static int[] tokens(int length, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] t = new int[length];
        for (int i = 0; i < length; i++) {
            t[i] = 32 + r.nextInt(90);
        }
        return t;
    }

    private static GenerationConfig answer() {
        return GenerationConfig.builder().maxNewTokens(16).ignoreEos(true).build();
    }

    record Run(double engineHitRate, long engineCached, long serverHits, Map<ServerAddress, Integer> groupServers) {}

    private Run run(Backend backend, RoutingStrategy strategy) throws Exception {
        LiveServers servers = new LiveServers();
        closing.add(servers);
        List<ModelServer> fleet = new ArrayList<>();
        ServerAddress[] addresses = new ServerAddress[4];
        for (int i = 0; i < 4; i++) {
            fleet.add(servers.start(ModelServerConfig.defaults().withWeights(LiveServers.weights(7, 0))));
            addresses[i] = LiveServers.address(fleet.get(i));
        }
        RemoteInferenceEngine engine = new RemoteInferenceEngine(TestSupport.config(addresses)
                .backend(backend)
                .routingStrategy(strategy)
                .build());
        closing.add(engine::close);
        engine.initialize();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<ModelResponse>> samples = new ArrayList<>();
            for (int g = 0; g < GROUPS; g++) {
                int[] prompt = tokens(512, g);
                for (int s = 0; s < SAMPLES; s++) {
                    WorkflowContext ctx = WorkflowContext.builder()
                            .taskId(g)
                            .sampleIdx(s)
                            .groupSize(SAMPLES)
                            .build();
                    samples.add(threads.submit(() ->
                            WorkflowContext.callWith(ctx, () -> engine.generate(ModelRequest.of(prompt, answer())))));
                }
            }
            for (Future<ModelResponse> f : samples) {
                assertThat(f.get(LiveServers.WAIT.toSeconds(), TimeUnit.SECONDS).outputTokens())
                        .hasSize(16);
            }
            // Multi-turn trajectories: each turn sends the whole history again.
            List<Future<?>> trajectories = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                long task = 100 + t;
                trajectories.add(threads.submit(() -> {
                    WorkflowContext ctx = WorkflowContext.builder()
                            .taskId(task)
                            .sampleIdx(0)
                            .groupSize(1)
                            .build();
                    return WorkflowContext.callWith(ctx, () -> {
                        int[] history = tokens(256, task);
                        for (int turn = 0; turn < TURNS; turn++) {
                            ModelResponse r = engine.generate(ModelRequest.of(history, answer()));
                            int[] next = tokens(64, task * 10 + turn);
                            int[] grown = Arrays.copyOf(history, history.length + 16 + next.length);
                            System.arraycopy(r.outputTokens(), 0, grown, history.length, 16);
                            System.arraycopy(next, 0, grown, history.length + 16, next.length);
                            history = grown;
                        }
                        return null;
                    });
                }));
            }
            for (Future<?> f : trajectories) {
                f.get(LiveServers.WAIT.toSeconds(), TimeUnit.SECONDS);
            }
        }
        long prompt = 0;
        long cached = 0;
        Map<ServerAddress, Integer> requests = new LinkedHashMap<>();
        for (ServerStats s : engine.serverStats()) {
            prompt += s.promptTokens();
            cached += s.cachedTokens();
            requests.put(s.address(), (int) s.requests());
        }
        long serverHits = 0;
        for (ModelServer s : fleet) {
            PrefixCacheStats c = s.prefixCacheStats();
            serverHits += c.hitTokens();
        }
        return new Run((double) cached / prompt, cached, serverHits, requests);
    }

    @ParameterizedTest
    @EnumSource(Backend.class)
    void affinePlacementReusesThePrefixesThatLeastRequestsPrefillsAgain(Backend backend) throws Exception {
        Run least = run(backend, RoutingStrategy.LEAST_REQUESTS);
        close();
        closing.clear();
        Run group = run(backend, RoutingStrategy.GROUP_AFFINITY);
        close();
        closing.clear();
        Run prefix = run(backend, RoutingStrategy.PREFIX_AWARE);

        System.out.printf(
                "placement on 4 model servers (%s): prefix-cache hit rate least_requests %.3f, group_affinity %.3f,"
                        + " prefix_aware %.3f%n",
                backend, least.engineHitRate(), group.engineHitRate(), prefix.engineHitRate());
        for (Run r : List.of(least, group, prefix)) {
            assertThat(r.engineCached())
                    .as("the engine's count of cached tokens is the servers' own (%s)", backend)
                    .isEqualTo(r.serverHits());
        }
        // Affine: a group's 8 samples share one prefill (7 of 8 hit), each turn reuses the history.
        assertThat(group.engineHitRate()).as("group_affinity hit rate").isGreaterThan(0.8);
        assertThat(prefix.engineHitRate()).as("prefix_aware hit rate").isGreaterThan(0.8);
        assertThat(least.engineHitRate())
                .as("least_requests spreads groups and turns: lower hit rate than affine placement")
                .isLessThan(group.engineHitRate() - 0.1);
    }
}
