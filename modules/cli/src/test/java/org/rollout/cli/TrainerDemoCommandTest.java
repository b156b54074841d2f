package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.typesafe.config.ConfigFactory;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.RolloutWorkflow;
import org.rollout.api.TrainingBatch;
import org.rollout.cluster.GeneratedPromptSource;
import org.rollout.cluster.LocalRollout;
import org.rollout.cluster.NodeServices;
import org.rollout.cluster.RemoteEngines;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.config.ServerAddress;
import org.rollout.core.AcceptFilters;
import org.rollout.core.GroupOptions;
import org.rollout.core.StalenessBudget;
import org.rollout.core.Tokenizers;
import org.rollout.gateway.GatewayConfig;
import org.rollout.gateway.TrainerGateway;
import org.rollout.inference.RemoteInferenceEngine;
import org.rollout.modelserver.ModelServer;
import org.rollout.modelserver.ModelServerConfig;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.trainer.PublishResult;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.RolloutStatus;
import org.rollout.workflows.BuiltinWorkflows;
import org.rollout.workflows.demo.DemoConfig;
import org.rollout.workflows.demo.DemoTraining;
import org.rollout.workflows.demo.LetterTask;
import picocli.CommandLine;

/**
 * {@code rollout trainer-demo} as its own "process" against an engine it reaches only through a
 * trainer gateway: a built-in model server started from the demo's v0, the demo workflow, a
 * LocalRollout and a gateway with a token, assembled as {@code rollout local} does it.
 */
class TrainerDemoCommandTest {
    private static final String TOKEN = "demo-token";

    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private record Run(int exit, String out, String err) {}

    private static Run run(String... args) {
        CommandLine cl = RolloutCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out));
        cl.setErr(new PrintWriter(err));
        int exit = cl.execute(args);
        return new Run(exit, out.toString(), err.toString());
    }

    /** The demo engine of {@code rollout local}, small: groups of 4, batches of 4 groups, one server. */
    private LocalRollout demoEngine(Path dir) throws Exception {
        RolloutSettings settings = RolloutConfig.load(
                null,
                List.of(
                        "rollout.fileroot=" + dir,
                        "rollout.trial_name=gateway",
                        "rollout.dump_to_file=false",
                        "gconfig.n_samples=4",
                        "rollout.consumer_batch_size=4",
                        "rollout.max_concurrent_rollouts=8"),
                LocalCommand.profile("demo"));
        Path v0 = DemoTraining.initialWeights(DemoConfig.defaults(), dir.resolve("engine"));
        ModelServer server =
                ModelServer.start(ModelServerConfig.defaults().withPort(0).withWeightsPath(v0));
        toClose.add(server::close);
        RemoteInferenceEngine engine = new RemoteInferenceEngine(
                settings.inferenceConfig(List.of(new ServerAddress("127.0.0.1", server.port()))));
        toClose.add(engine);
        engine.initialize();
        RolloutWorkflow wf = BuiltinWorkflows.create(
                "demo", settings.gconfig(), Tokenizers.load(settings.rollout().tokenizerPath()), Map.of());
        RolloutSettings.Rollout r = settings.rollout();
        NodeServices svc = new NodeServices(
                RemoteEngines.controllable(engine),
                wf,
                wf,
                GroupOptions.training(settings),
                GroupOptions.evaluation(settings),
                AcceptFilters.all(),
                null,
                null,
                settings.stalenessPolicy(),
                r.maxHeadOffpolicyness(),
                r.episodeTimeout(),
                HttpClient.newHttpClient(),
                NodeServices.virtualThreads());
        LocalRollout rollout = LocalRollout.start(
                new LocalRollout.Spec(
                        svc,
                        StalenessBudget.of(settings),
                        new GeneratedPromptSource(LetterTask::item, -1),
                        List.of(),
                        0,
                        2,
                        r.queueSize(),
                        RemoteEngines.publisher(engine),
                        0,
                        r.nodeCapacity(),
                        r.batchAckTimeout(),
                        r.prepareTimeout(),
                        r.weightUpdateTimeout(),
                        null),
                ConfigFactory.parseString("""
                        pekko.loglevel = WARNING
                        pekko.loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
                        pekko.logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
                        pekko.coordinated-shutdown.exit-jvm = off
                        pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                        """).withFallback(ConfigFactory.load()));
        toClose.add(rollout);
        return rollout;
    }

    private TrainerGateway gateway(RolloutClient engineSide) throws Exception {
        TrainerGateway g = TrainerGateway.start(GatewayConfig.defaults().withToken(TOKEN), engineSide);
        toClose.add(g);
        return g;
    }

    @Test
    void trainsThroughTheGatewayPrintingOneLinePerStepWithItsReward(@TempDir Path dir) throws Exception {
        LocalRollout rollout = demoEngine(dir);
        TrainerGateway g = gateway(rollout.client());
        Path weights = dir.resolve("trainer-weights");

        Run r = run(
                "trainer-demo",
                "--contact",
                g.uri().toString(),
                "--token",
                TOKEN,
                "--steps",
                "3",
                "--weights-dir",
                weights.toString());

        System.out.print(r.out()); // the demo's lines, kept in the test report
        assertThat(r.err()).isEmpty();
        assertThat(r.exit()).isZero();
        List<String> lines = r.out().lines().toList();
        assertThat(lines.get(0))
                .isEqualTo(
                        "trainer-demo: 3 steps against [" + g.uri() + "] (engine at version 0); weights in " + weights);
        for (int step = 1; step <= 3; step++) {
            assertThat(lines.get(step))
                    .matches("step " + step + "/3  batch \\d+  4 groups  v" + step
                            + " reward \\d\\.\\d{3} spread \\d\\.\\d{3} tokens \\d+ clip .*");
        }
        assertThat(lines.get(4))
                .matches("done: 3 steps; mean reward: first 1 steps \\d\\.\\d{3}, last 1 steps"
                        + " \\d\\.\\d{3}; training time \\d+ ms");
        assertThat(rollout.client().status().version()).isEqualTo(3);
        assertThat(weights.resolve("v3.rlm")).exists();
    }

    @Test
    void refusesInitialWeightsOfAnotherVersionThanTheEngines(@TempDir Path dir) throws Exception {
        TrainerGateway g = gateway(new EngineAtVersion(5));
        Run r = run("trainer-demo", "--contact", g.uri().toString(), "--token", TOKEN, "--weights-dir", dir.toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err())
                .isEqualTo("the engine is at version 5 but the initial weights are version 0: pass --initial-weights"
                        + " with the weight file of version 5 (e.g. " + dir.resolve("v5.rlm") + ")"
                        + System.lineSeparator());
    }

    @Test
    void refusesModelServersThatServeOtherWeightsNamingWhatDiffers(@TempDir Path dir) throws Exception {
        // The chain the README once showed: a server started with --seed 1 (λ 0.85), a trainer from the demo's v0.
        ModelServer seeded =
                ModelServer.start(ModelServerConfig.defaults().withPort(0).withSeed(1));
        toClose.add(seeded::close);
        Path v0 = DemoTraining.initialWeights(DemoConfig.defaults(), dir.resolve("v0"));
        ModelServer matching =
                ModelServer.start(ModelServerConfig.defaults().withPort(0).withWeightsPath(v0));
        toClose.add(matching::close);
        TrainerGateway g = gateway(new EngineAtVersion(0));
        String servers = "127.0.0.1:" + matching.port() + ",127.0.0.1:" + seeded.port();

        Run r = run(
                "trainer-demo",
                "--contact",
                g.uri().toString(),
                "--token",
                TOKEN,
                "--weights-dir",
                dir.toString(),
                "--servers",
                servers);

        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err())
                .startsWith("model server 127.0.0.1:" + seeded.port() + " does not serve the trainer's initial weights"
                        + " (the demo's v0 regenerated from --seed 1): λ (decay) 0.85")
                .contains("1.0 expected; parameters differ (weights_digest ")
                .contains("bin/rollout demo-weights DIR, then bin/rollout model-server --weights DIR/v0.rlm")
                .doesNotContain("127.0.0.1:" + matching.port());
        assertThat(ServedWeights.mismatch("127.0.0.1:" + matching.port(), TinyLmWeights.read(v0)))
                .isNull();
    }

    @Test
    void aWrongTokenEndsTheRunWithTheGatewaysAnswer(@TempDir Path dir) throws Exception {
        TrainerGateway g = gateway(new EngineAtVersion(0));
        Run r = run(
                "trainer-demo", "--contact", g.uri().toString(), "--token", "nope", "--weights-dir", dir.toString());
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err())
                .isEqualTo("the trainer failed: could not read status: the trainer gateway at " + g.uri()
                        + " answered HTTP 401 unauthorized: the bearer token does not match" + System.lineSeparator());
    }

    @Test
    void aContactPointThatIsNotHttpIsBadInput() {
        Run r = run("trainer-demo", "--contact", "pekko://rollout@127.0.0.1:2552");
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err())
                .isEqualTo("invalid input: contact point 'pekko://rollout@127.0.0.1:2552' must be an http:// or"
                        + " https:// URL of a trainer gateway" + System.lineSeparator());
    }

    @Test
    void initialWeightsThatCannotBeReadAreBadInput(@TempDir Path dir) throws Exception {
        Path missing = dir.resolve("v0.rlm");
        Run r = run("trainer-demo", "--contact", "http://127.0.0.1:1", "--initial-weights", missing.toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).startsWith("invalid input: weight file " + missing + ": ");
        assertThat(Files.exists(missing)).isFalse();
    }

    @Test
    void helpSaysWhereTheInitialWeightsComeFrom() {
        Run r = run("trainer-demo", "--help");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("--initial-weights", "regenerated here from --seed", "--contact", "--token");
    }

    /** An engine-side client that only answers status, at a fixed version. */
    private record EngineAtVersion(int version) implements RolloutClient {
        @Override
        public TrainingBatch nextBatch() {
            throw new AssertionError("not pulled in this test");
        }

        @Override
        public Optional<TrainingBatch> nextBatch(Duration timeout) {
            throw new AssertionError("not pulled in this test");
        }

        @Override
        public void acknowledge(TrainingBatch batch) {
            throw new AssertionError("not acknowledged in this test");
        }

        @Override
        public PublishResult publishWeights(int v, Path weights) {
            throw new AssertionError("not published in this test");
        }

        @Override
        public RolloutStatus status() {
            return new RolloutStatus(version, 0, 0, 0, 0, 0, 0, 0, 0, Map.of(), Map.of());
        }

        @Override
        public void close() {}
    }
}
