package org.rollout.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.rollout.api.InvalidConfigException;
import org.rollout.modelserver.TinyLmWeights;
import org.rollout.modelserver.WeightFileException;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.EngineUnreachableException;
import org.rollout.trainer.GatewayRequestException;
import org.rollout.trainer.RolloutClient;
import org.rollout.trainer.WeightPublishException;
import org.rollout.workflows.demo.DemoConfig;
import org.rollout.workflows.demo.DemoTraining;
import org.rollout.workflows.demo.GrpoTrainer;
import org.rollout.workflows.demo.StepReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code rollout trainer-demo}: the demo GRPO trainer as a process of its own, outside the engine,
 * talking to it through trainer gateways ({@link RolloutClient#connect}). One line per step.
 *
 * <pre>
 *   connect(--contact …, --token)  →  status: the engine's version must be the initial weights' version
 *   --servers: each model server's /get_model_info must match the initial weights (vocabulary, λ, digest, version)
 *   repeat --steps times: nextBatch → GRPO step → {weights-dir}/v{n}.rlm → acknowledge → publishWeights(n, path)
 * </pre>
 *
 * <p>The engine's servers load the weight files this process writes, so {@code --weights-dir} must
 * be on a file system they can read (the same machine, or a shared mount); paths are sent absolute.
 * The initial weights must be what the servers serve at version 0: by default the demo's seeded v0
 * (the same file {@code rollout local} writes), or {@code --initial-weights}.
 *
 * <p>Exit codes: 0 after the steps; 2 for bad input (an option, a contact point, initial weights
 * that do not match the engine); 1 when the run failed (engine unreachable, refused publish).
 */
@Command(
        name = "trainer-demo",
        mixinStandardHelpOptions = true,
        description = {
            "Run the demo GRPO trainer against a running engine through its trainer gateway(s), printing one line"
                    + " per step.",
            "The engine's servers must start from the same initial weights: by default the demo's seeded v0 (what"
                    + " 'rollout local' writes to {run}/weights/v0.rlm, regenerated here from --seed), or"
                    + " --initial-weights. The servers read the weight files this trainer writes, so --weights-dir"
                    + " must be readable by them."
        })
final class TrainerDemoCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(
            names = "--contact",
            required = true,
            split = ",",
            paramLabel = "URL",
            description = "A trainer gateway's base URL, e.g. http://127.0.0.1:8470; repeat or separate with commas"
                    + " to fail over between several.")
    List<String> contacts = new ArrayList<>();

    @Option(
            names = "--token",
            defaultValue = "${env:ROLLOUT_GATEWAY_TOKEN}",
            description = "The gateways' bearer token (default: $ROLLOUT_GATEWAY_TOKEN, which keeps it out of the"
                    + " process list).")
    String token;

    @Option(
            names = "--steps",
            defaultValue = "" + DemoConfig.STEPS,
            description = "Training steps (weight versions) to run (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(
            names = "--weights-dir",
            defaultValue = "runs/trainer-demo/weights",
            description = "Where v{n}.rlm files are written; must be readable by the engine's servers"
                    + " (default: ${DEFAULT-VALUE}).")
    Path weightsDir;

    @Option(
            names = "--seed",
            defaultValue = "" + DemoConfig.WEIGHTS_SEED,
            description = "The seed of the regenerated initial weights, as the engine's v0 was made"
                    + " (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(
            names = "--initial-weights",
            paramLabel = "PATH",
            description = "The weight file the engine's servers started from (instead of regenerating the demo's"
                    + " v0 from --seed); its version must be the engine's current version.")
    Path initialWeights;

    @Option(
            names = "--servers",
            split = ",",
            paramLabel = "HOST:PORT",
            description = "The engine's model servers (rollout.servers): each must serve the initial weights (same"
                    + " vocabulary, λ, parameters and version, read from its /get_model_info), or the trainer exits 2"
                    + " naming what differs. Without it only the engine's version is checked.")
    List<String> servers = new ArrayList<>();

    @Option(
            names = "--temperature",
            defaultValue = "" + DemoConfig.TEMPERATURE,
            description = "The engine's sampling temperature (gconfig.temperature), which the trainer's logprobs"
                    + " must use (default: ${DEFAULT-VALUE}).")
    double temperature;

    @Option(
            names = "--trust-store",
            paramLabel = "PATH",
            description = "A PKCS12/JKS store of the certificates to trust for https:// contact points.")
    Path trustStore;

    @Option(
            names = "--trust-store-password",
            defaultValue = "${env:ROLLOUT_TRUST_STORE_PASSWORD}",
            description = "The trust store's password (default: $ROLLOUT_TRUST_STORE_PASSWORD).")
    String trustStorePassword;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (steps < 1) {
            err.println("invalid value for '--steps': " + steps + " (allowed: at least 1)");
            return 2;
        }
        ClientConfig config;
        TinyLmWeights initial;
        try {
            config = ClientConfig.of(contacts.toArray(String[]::new)).withToken(token);
            if (trustStore != null) {
                config = config.withTrustStore(trustStore, trustStorePassword == null ? "" : trustStorePassword);
            }
            initial = initialWeights == null
                    ? DemoConfig.defaults()
                            .withSeeds(seed, DemoConfig.defaults().promptSeed())
                            .initialWeights()
                    : TinyLmWeights.read(initialWeights);
        } catch (IllegalArgumentException | WeightFileException e) {
            err.println("invalid input: " + e.getMessage());
            return 2;
        }
        Path dir = weightsDir.toAbsolutePath().normalize();
        DemoConfig demo = DemoConfig.defaults();
        try (RolloutClient client = RolloutClient.connect(config)) {
            int engineVersion = client.status().version();
            if (engineVersion != initial.version()) {
                err.println("the engine is at version " + engineVersion + " but the initial weights are version "
                        + initial.version() + ": pass --initial-weights with the weight file of version "
                        + engineVersion + " (e.g. " + dir.resolve("v" + engineVersion + ".rlm") + ")");
                return 2;
            }
            String origin = initialWeights == null
                    ? "the demo's v0 regenerated from --seed " + seed
                    : "--initial-weights " + initialWeights;
            for (String server : servers) {
                String mismatch = ServedWeights.mismatch(server, initial);
                if (mismatch != null) {
                    err.println("model server " + server + " does not serve the trainer's initial weights (" + origin
                            + "): " + mismatch + ". Start the servers from the trainer's weights: bin/rollout"
                            + " demo-weights DIR, then bin/rollout model-server --weights DIR/v0.rlm (or pass"
                            + " --initial-weights with the file the servers serve)");
                    return 2;
                }
            }
            GrpoTrainer trainer = new GrpoTrainer(
                    initial,
                    new GrpoTrainer.Config(
                            demo.learningRate(), demo.warmupSteps(), demo.clipEpsilon(), temperature, dir));
            out.println("trainer-demo: " + steps + " steps against " + config.contactPoints() + " (engine at version "
                    + engineVersion + "); weights in " + dir);
            out.flush();
            List<StepReport> reports = DemoTraining.run(client, trainer, steps, report -> {
                out.println(String.format(
                        Locale.ROOT,
                        "step %d/%d  batch %d  %d groups  %s",
                        report.version() - engineVersion,
                        steps,
                        report.batchId(),
                        report.groups(),
                        report.summary()));
                out.flush();
            });
            out.println(summary(reports));
            out.flush();
            return 0;
        } catch (InvalidConfigException e) {
            err.println("invalid input: " + e.getMessage());
            return 2;
        } catch (EngineUnreachableException | GatewayRequestException | WeightPublishException e) {
            err.println("the trainer failed: " + e.getMessage());
            return 1;
        } catch (WeightFileException e) {
            err.println("the trainer failed: " + e.getMessage());
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("interrupted");
            return 1;
        }
    }

    /** The mean reward over the first and the last few steps. */
    static String summary(List<StepReport> reports) {
        int k = Math.max(1, Math.min(5, reports.size() / 2));
        double first = reports.subList(0, k).stream()
                .mapToDouble(StepReport::meanReward)
                .average()
                .orElse(Double.NaN);
        double last = reports.subList(reports.size() - k, reports.size()).stream()
                .mapToDouble(StepReport::meanReward)
                .average()
                .orElse(Double.NaN);
        Duration train = reports.stream().map(StepReport::trainTime).reduce(Duration.ZERO, Duration::plus);
        return String.format(
                Locale.ROOT,
                "done: %d steps; mean reward: first %d steps %.3f, last %d steps %.3f; training time %d ms",
                reports.size(),
                k,
                first,
                k,
                last,
                train.toMillis());
    }
}
