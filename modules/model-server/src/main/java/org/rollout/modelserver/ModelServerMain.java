package org.rollout.modelserver;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.BindException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The model server as a process: {@code java … org.rollout.modelserver.ModelServerMain --port 30000}.
 * Prints exactly one line, {@code model server listening on http://127.0.0.1:PORT}, to standard
 * output once it accepts connections, then serves until SIGTERM (or SIGINT), when it closes
 * gracefully (in-flight requests are answered with abort) and prints {@code model server stopped}.
 * The exit status after a signal is the JVM's (143 for SIGTERM); a bad option exits with 2 and a
 * message naming it; a bad weight file or an address in use exits with 1.
 */
@Command(
        name = "model-server",
        mixinStandardHelpOptions = true,
        description = "The built-in tiny language model behind the SGLang HTTP protocol (no GPU, no download).")
public final class ModelServerMain implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--host", description = "Address to bind (default: ${DEFAULT-VALUE}).", defaultValue = "127.0.0.1")
    String host;

    @Option(names = "--port", description = "Port; 0 picks a free one (default: ${DEFAULT-VALUE}).", defaultValue = "0")
    int port;

    @Option(
            names = "--seed",
            description = "Seed of the weights when --weights is not given (default: ${DEFAULT-VALUE}).",
            defaultValue = "0")
    long seed;

    @Option(names = "--weights", description = "A weight file (.rlm) to serve instead of seeded weights.")
    Path weights;

    @Option(
            names = "--max-running-requests",
            description = "Sequences decoded at once (default: ${DEFAULT-VALUE}).",
            defaultValue = "256")
    int maxRunningRequests;

    @Option(
            names = "--prefill-us-per-token",
            description = "Latency model: prefill time per prompt token not found in the prefix cache, microseconds.",
            defaultValue = "0")
    double prefillMicrosPerToken;

    @Option(
            names = "--decode-base-us",
            description = "Latency model: fixed time of a decode step, microseconds.",
            defaultValue = "0")
    double decodeBaseMicros;

    @Option(
            names = "--decode-us-per-seq",
            description = "Latency model: decode time per running sequence, microseconds.",
            defaultValue = "0")
    double decodeMicrosPerSequence;

    @Option(
            names = "--fault-error-rate",
            description = "Fault: probability of HTTP 500 on generation requests.",
            defaultValue = "0")
    double faultErrorRate;

    @Option(names = "--fault-hang", description = "Fault: hold every generation request unanswered.")
    boolean faultHang;

    @Option(
            names = "--fault-crash-after",
            description = "Fault: crash when a generation request arrives after N (-1: never).",
            defaultValue = "-1")
    int faultCrashAfter;

    @Option(
            names = "--fault-slow-ms",
            description = "Fault: extra delay before each generation response, ms.",
            defaultValue = "0")
    long faultSlowMillis;

    @Option(
            names = "--fault-malformed-rate",
            description = "Fault: probability of a malformed generation response.",
            defaultValue = "0")
    double faultMalformedRate;

    @Option(
            names = "--fault-malformed-kind",
            description =
                    "Fault: not_json, truncated_json, count_mismatch, unknown_finish_reason or missing_meta_info (default: ${DEFAULT-VALUE}).",
            defaultValue = "not_json")
    String faultMalformedKind;

    @Option(
            names = "--fault-seed",
            description = "Fault: seed of the fault draws (default: ${DEFAULT-VALUE}).",
            defaultValue = "0")
    long faultSeed;

    @Option(
            names = "--output-lengths",
            description = "Simulated output lengths: every generation ends with 'length' after a drawn length, e.g. "
                    + "lognormal:median=256,sigma=1, pareto:min=64,alpha=1.5 or fixed:length=100 (default: off).")
    String outputLengths;

    @Option(
            names = "--output-length-seed",
            description = "Seed of the simulated output lengths (default: ${DEFAULT-VALUE}).",
            defaultValue = "0")
    long outputLengthSeed;

    @Option(
            names = "--prefix-cache-tokens",
            description = "Prefix cache capacity in tokens: prompts sharing a cached prefix are charged prefill only "
                    + "for the rest and report it as cached_tokens; 0 turns it off (default: ${DEFAULT-VALUE}).",
            defaultValue = "" + ModelServerConfig.DEFAULT_PREFIX_CACHE_TOKENS)
    int prefixCacheTokens;

    /** The configuration these options describe; option errors are {@link IllegalArgumentException}s naming the option. */
    ModelServerConfig config() {
        LatencyModel latency = new LatencyModel(
                micros(prefillMicrosPerToken, "--prefill-us-per-token"),
                micros(decodeBaseMicros, "--decode-base-us"),
                micros(decodeMicrosPerSequence, "--decode-us-per-seq"));
        FaultPlan faults;
        try {
            faults = new FaultPlan(
                    faultErrorRate,
                    faultHang,
                    faultCrashAfter,
                    Duration.ofMillis(faultSlowMillis),
                    faultMalformedRate,
                    FaultPlan.MalformedKind.parse(faultMalformedKind),
                    faultSeed);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--fault-*: " + e.getMessage(), e);
        }
        OutputLengths lengths;
        try {
            lengths = outputLengths == null
                    ? null
                    : new OutputLengths(LengthDistribution.parse(outputLengths), outputLengthSeed);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--output-lengths: " + e.getMessage(), e);
        }
        if (prefixCacheTokens < 0) {
            throw new IllegalArgumentException(
                    "--prefix-cache-tokens must be >= 0 (0 turns the prefix cache off), got " + prefixCacheTokens);
        }
        return ModelServerConfig.defaults()
                .withHost(host)
                .withPort(port)
                .withSeed(seed)
                .withWeightsPath(weights)
                .withMaxRunningRequests(maxRunningRequests)
                .withLatency(latency)
                .withFaults(faults)
                .withOutputLengths(lengths)
                .withPrefixCacheTokens(prefixCacheTokens);
    }

    private static Duration micros(double value, String option) {
        if (!(value >= 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(option + " must be a finite number >= 0, got " + value);
        }
        return Duration.ofNanos(Math.round(value * 1000));
    }

    @Override
    public Integer call() throws Exception {
        ModelServerConfig config;
        try {
            config = config();
        } catch (IllegalArgumentException e) {
            spec.commandLine().getErr().println("model server: " + e.getMessage());
            return 2;
        }
        ModelServer server;
        try {
            server = ModelServer.start(config);
        } catch (IOException e) {
            if (e.getCause() instanceof BindException) {
                spec.commandLine()
                        .getErr()
                        .println("model server: cannot listen on " + config.host() + ":" + config.port()
                                + " (--port): the port is in use; set another port, or 0 for a free one");
            } else {
                spec.commandLine().getErr().println("model server: " + e.getMessage());
            }
            spec.commandLine().getErr().flush();
            return 1;
        }
        PrintWriter out = spec.commandLine().getOut();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            server.close();
                            System.out.println("model server stopped");
                            System.out.flush();
                            stopped.countDown();
                        },
                        "model-server-shutdown"));
        out.println("model server listening on " + server.baseUrl());
        out.flush();
        stopped.await();
        return 0;
    }

    public static void main(String[] args) {
        CommandLine cli = new CommandLine(new ModelServerMain());
        cli.setOut(new PrintWriter(System.out, true));
        cli.setErr(new PrintWriter(System.err, true));
        System.exit(cli.execute(args));
    }
}
