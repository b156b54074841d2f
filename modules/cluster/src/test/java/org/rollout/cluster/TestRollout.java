package org.rollout.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.rollout.api.AcceptFilter;
import org.rollout.api.EpisodeResult;
import org.rollout.api.GenerationConfig;
import org.rollout.api.ModelRequest;
import org.rollout.api.ModelResponse;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.WorkflowContext;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.GroupOptions;
import org.rollout.core.StalenessBudget;
import org.rollout.core.TrajectoryDumper;
import org.rollout.core.TrajectoryRows;
import org.rollout.testengine.ScriptedEngine;
import org.rollout.trainer.PublishResult;

/** Builds {@link LocalRollout}s for tests, with small, explicit defaults. */
final class TestRollout {
    static final Config PEKKO = ConfigFactory.parseString("""
                    pekko.loglevel = WARNING
                    pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
                    pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
                    pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = 4
                    pekko.coordinated-shutdown.exit-jvm = off
                    """).withFallback(ConfigFactory.load());

    /** The default test workflow: one generation, reward = the slot index / 10. */
    static RolloutWorkflow echo(GenerationConfig g) {
        return (engine, data) -> {
            int[] prompt = ((String) data.get("prompt")).chars().toArray();
            ModelResponse r = engine.generate(ModelRequest.of(prompt, g.withNSamples(1)));
            double reward = WorkflowContext.current().sampleIdx().orElse(0) / 10.0;
            WorkflowContext.current().stats().scalar("reward", reward);
            return EpisodeResult.trajectory(TrajectoryRows.singleTurn(r, reward));
        };
    }

    int groupSize = 4;
    int consumerBatchSize = 2;
    int maxConcurrent = 4;
    long eta = 0;
    int tokens = 5;
    StalenessPolicy policy = StalenessPolicy.ADMISSION;
    Duration episodeTimeout = Duration.ofSeconds(60);
    Duration ackTimeout = Duration.ofMinutes(5);
    RolloutWorkflow workflow;
    AcceptFilter accept = AcceptFilter.all();
    List<Map<String, Object>> evalItems = List.of();
    int evalEvery = 0;
    int queueSize = 64;
    Path dumpRoot;
    Path statsFile;
    org.rollout.core.TrajectoryFormatChecker formatChecker;
    PromptSource source = new GeneratedPromptSource(i -> Map.of("prompt", "p" + i), -1);
    Config pekko = PEKKO;
    final ScriptedEngine engine;
    final List<Path> published = new CopyOnWriteArrayList<>();

    TestRollout() {
        this(5);
    }

    TestRollout(int tokens) {
        this.tokens = tokens;
        this.engine = ScriptedEngine.generating(tokens);
    }

    GenerationConfig gconfig() {
        return GenerationConfig.builder().nSamples(groupSize).maxNewTokens(64).build();
    }

    LocalRollout start() {
        return LocalRollout.start(spec(), pekko);
    }

    /** What {@link #start} runs; also one node of a {@link ClusterRollout}. */
    LocalRollout.Spec spec() {
        GenerationConfig g = gconfig();
        RolloutWorkflow wf = workflow != null ? workflow : echo(g);
        NodeServices svc = new NodeServices(
                engine,
                wf,
                wf,
                GroupOptions.from(g, 1),
                new GroupOptions(groupSize, groupSize, false, false, true),
                accept,
                dumpRoot == null
                        ? null
                        : new TrajectoryDumper(dumpRoot, "exp", "trial", org.rollout.core.ByteLevelTokenizer.INSTANCE),
                formatChecker,
                policy,
                eta,
                episodeTimeout,
                HttpClient.newHttpClient(),
                NodeServices.virtualThreads());
        WeightPublisher publisher = (path, version) -> {
            published.add(path);
            return new PublishResult(version, Duration.ofMillis(1), 1, Map.of());
        };
        LocalRollout.Spec spec = new LocalRollout.Spec(
                svc,
                new StalenessBudget(maxConcurrent, consumerBatchSize, eta),
                source,
                evalItems,
                evalEvery,
                2,
                queueSize,
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
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out after " + deadline + " waiting for " + what);
            }
            Thread.onSpinWait();
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
        }
    }

    static <T> List<T> list(Iterable<T> it) {
        List<T> l = new ArrayList<>();
        it.forEach(l::add);
        return l;
    }
}
