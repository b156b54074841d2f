package org.rollout.benchmarks.e2e;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import org.rollout.api.AcceptFilter;
import org.rollout.api.ControllableEngine;
import org.rollout.api.GenerationConfig;
import org.rollout.api.RolloutWorkflow;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.NodeServices;
import org.rollout.cluster.PromptSource;
import org.rollout.cluster.WeightPublisher;
import org.rollout.config.StalenessPolicy;
import org.rollout.core.GroupOptions;
import org.rollout.core.StalenessBudget;
import org.rollout.trainer.PublishResult;

/**
 * A whole one-node engine ({@link LocalRollout}: coordinator, runner (with its groups' slot threads),
 * collector, weight version) built the way {@code rollout local} builds it, from the few knobs the
 * benchmarks vary: no dumps, no format check, accept everything, AReaL's admission policy.
 *
 * @param engine the node's engine
 * @param workflow the slot workflow (training and evaluation)
 * @param gconfig its sampling parameters; {@code n_samples} is the group size
 * @param consumerBatchSize groups per trainer batch ({@code consumer_batch_size})
 * @param maxConcurrentRollouts groups in flight at most ({@code max_concurrent_rollouts})
 * @param maxHeadOffpolicyness η ({@code max_head_offpolicyness})
 * @param queueSize accepted-but-unbatched plus running groups before admission waits
 * @param source training prompts
 * @param publisher how weights reach the servers
 */
public record BenchmarkPipeline(
        ControllableEngine engine,
        RolloutWorkflow workflow,
        GenerationConfig gconfig,
        int consumerBatchSize,
        int maxConcurrentRollouts,
        long maxHeadOffpolicyness,
        int queueSize,
        PromptSource source,
        WeightPublisher publisher) {

    /** The actor system's configuration: small pools for two cores, warnings only, no JVM exit. */
    static final Config PEKKO = ConfigFactory.parseString("""
                    pekko.loglevel = WARNING
                    pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
                    pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
                    pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = 4
                    pekko.coordinated-shutdown.exit-jvm = off
                    pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                    """).withFallback(ConfigFactory.load());

    public BenchmarkPipeline {
        Objects.requireNonNull(engine, "engine");
        Objects.requireNonNull(workflow, "workflow");
        Objects.requireNonNull(gconfig, "gconfig");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(publisher, "publisher");
    }

    /** A publisher for engines without servers: sets nothing, reports one server updated at once. */
    public static WeightPublisher noServers() {
        return (weights, version) -> new PublishResult(version, Duration.ZERO, 1, Map.of());
    }

    /** A started engine; closing it stops every actor, then the slots' executor. */
    public record Started(LocalRollout rollout, ExecutorService blocking) implements AutoCloseable {
        @Override
        public void close() {
            try {
                rollout.close();
            } finally {
                blocking.shutdownNow();
            }
        }
    }

    /** Starts the engine; the caller closes it. */
    public Started start() {
        ExecutorService blocking = NodeServices.virtualThreads();
        NodeServices services = new NodeServices(
                engine,
                workflow,
                workflow,
                GroupOptions.from(gconfig, 1),
                GroupOptions.from(gconfig, 1),
                AcceptFilter.all(),
                null,
                null,
                StalenessPolicy.ADMISSION,
                maxHeadOffpolicyness,
                Duration.ofMinutes(30),
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
                blocking);
        LocalRollout.Spec spec = new LocalRollout.Spec(
                services,
                new StalenessBudget(maxConcurrentRollouts, consumerBatchSize, maxHeadOffpolicyness),
                source,
                List.of(),
                0,
                1,
                queueSize,
                publisher,
                0,
                maxConcurrentRollouts,
                Duration.ofMinutes(10),
                Duration.ofSeconds(30),
                Duration.ofMinutes(2),
                null);
        try {
            return new Started(LocalRollout.start(spec, PEKKO), blocking);
        } catch (RuntimeException e) {
            blocking.shutdownNow();
            throw e;
        }
    }
}
