package org.rollout.gateway;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.rollout.api.AcceptFilter;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;
import org.rollout.cluster.GeneratedPromptSource;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.NodeServices;
import org.rollout.cluster.PromptSource;
import org.rollout.cluster.WeightPublisher;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.GroupOptions;
import org.rollout.core.StalenessBudget;
import org.rollout.core.TrajectoryRows;
import org.rollout.testengine.ScriptedEngine;
import org.rollout.trainer.PublishResult;

/**
 * Builds {@link LocalRollout}s with a scripted engine for the gateway's tests (the cluster tests'
 * fixture, trimmed to what these tests change): groups of 4, batches of 2 groups, η = 0.
 */
final class TestRollout {
    static final Config PEKKO = ConfigFactory.parseString("""
                    pekko.loglevel = WARNING
                    pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
                    pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
                    pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = 4
                    pekko.coordinated-shutdown.exit-jvm = off
                    pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                    """).withFallback(ConfigFactory.load());

    int groupSize = 4;
    int consumerBatchSize = 2;
    int maxConcurrent = 4;
    long eta = 0;
    int maxNewTokens = 64;
    Duration ackTimeout = Duration.ofMinutes(5);
    /** Prompts in all; -1 for endless. */
    int prompts = -1;
    /** Where the statistics lines are appended, or null. */
    java.nio.file.Path statsFile;
    /** Items of one evaluation pass (none by default), run every {@link #evalEvery} versions. */
    List<Map<String, Object>> evalItems = List.of();

    int evalEvery;
    /** What the weight publisher answers; loads on one server by default. */
    WeightPublisher publisher = (path, version) -> new PublishResult(version, Duration.ofMillis(1), 1, Map.of());

    final ScriptedEngine engine;

    TestRollout(int tokens) {
        this.engine = ScriptedEngine.generating(tokens);
    }

    /** One generation per slot; reward = the slot index / 10. */
    private RolloutWorkflow echo(GenerationConfig g) {
        return (e, data) -> {
            int[] prompt = ((String) data.get("prompt")).chars().toArray();
            ModelResponse r = e.generate(ModelRequest.of(prompt, g.withNSamples(1)));
            double reward = WorkflowContext.current().sampleIdx().orElse(0) / 10.0;
            return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, reward));
        };
    }

    LocalRollout start() {
        return LocalRollout.start(spec(), PEKKO);
    }

    /** What {@link #start} runs, for a node of a cluster ({@code ClusterRollout.start}) too. */
    LocalRollout.Spec spec() {
        GenerationConfig g = GenerationConfig.builder()
                .nSamples(groupSize)
                .maxNewTokens(maxNewTokens)
                .build();
        RolloutWorkflow wf = echo(g);
        NodeServices svc = new NodeServices(
                engine,
                wf,
                wf,
                GroupOptions.from(g, 1),
                new GroupOptions(groupSize, groupSize, false, false, true),
                AcceptFilter.all(),
                null,
                null,
                StalenessPolicy.ADMISSION,
                eta,
                Duration.ofSeconds(60),
                HttpClient.newHttpClient(),
                NodeServices.virtualThreads());
        PromptSource source = new GeneratedPromptSource(i -> Map.of("prompt", "p" + i), prompts);
        LocalRollout.Spec spec = new LocalRollout.Spec(
                svc,
                new StalenessBudget(maxConcurrent, consumerBatchSize, eta),
                source,
                evalItems,
                evalEvery,
                2,
                64,
                publisher,
                0,
                maxConcurrent,
                ackTimeout,
                Duration.ofSeconds(10),
                Duration.ofSeconds(60),
                statsFile);
        return spec;
    }

    /** Waits until {@code condition} holds, failing with {@code what} after {@code deadline}. */
    static void await(String what, Duration deadline, BooleanSupplier condition) {
        long end = System.nanoTime() + deadline.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("timed out after " + deadline + " waiting for " + what);
            }
            LockSupport.parkNanos(5_000_000);
        }
    }
}
