package org.rollout.benchmarks.e2e;

import java.io.PrintStream;
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
import java.util.concurrent.TimeUnit;
import org.rollout.config.ServerAddress;
import org.rollout.config.ServerLaunch;
import org.rollout.inference.ServerLauncher;
import org.rollout.modelserver.ModelServerMain;

/**
 * Launch to first generation: {@code rollout.launch} of N built-in model servers (one JVM process
 * each, ServerLauncher), timed from the launch call to every server's {@code GET /health} and to
 * every server's first answered {@code POST /generate}. Baseline, interleaved round by round: the
 * same N JVMs started with {@code java -version} (the cost of starting a JVM, nothing else), timed
 * until all exited. Reported: medians over the rounds and their ratios.
 */
public final class LaunchBenchmark implements EndToEndBenchmark {
    private static final Duration DEADLINE = Duration.ofSeconds(120);

    @Override
    public String name() {
        return "launch";
    }

    @Override
    public String description() {
        return "time from rollout.launch of N built-in servers to health and to their first generation, vs N JVMs"
                + " running java -version";
    }

    @Override
    public List<Flag> flags() {
        return List.of(
                new Flag("servers", "2", "built-in model servers launched per round"),
                new Flag("rounds", "5", "measured rounds (each: one launch, one java -version baseline)"));
    }

    @Override
    public SummaryLine run(Flags f, PrintStream log) throws Exception {
        int n = f.integer("servers", 1);
        int rounds = f.integer("rounds", 1);
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = List.of(
                java,
                "-Dlogback.configurationFile=/dev/null",
                "-cp",
                System.getProperty("java.class.path"),
                ModelServerMain.class.getName(),
                "--host",
                "{host}",
                "--port",
                "{port}",
                "--seed",
                "{index}");
        Path dir = Files.createTempDirectory("rollout-launch-bench");
        double[] health = new double[rounds];
        double[] firstGen = new double[rounds];
        double[] jvm = new double[rounds];
        try (HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(DEADLINE)
                .build()) {
            // One unmeasured round of each first: the OS caches the JDK's and the jar's files.
            jvmVersion(java, n);
            launchOnce(command, n, dir, http, -1, new double[1], new double[1]);
            for (int r = 0; r < rounds; r++) {
                jvm[r] = jvmVersion(java, n);
                launchOnce(command, n, dir, http, r, health, firstGen);
                log.printf(
                        "launch: round %d: health %.0f ms, first generation %.0f ms, java -version %.0f ms%n",
                        r + 1, health[r], firstGen[r], jvm[r]);
            }
        }
        double h = median(health);
        double g = median(firstGen);
        double j = median(jvm);
        SummaryLine line = new SummaryLine(name())
                .put("launch_to_health_p50_ms", h)
                .put("launch_to_first_generation_p50_ms", g)
                .put("java_version_p50_ms", j)
                .put("ratio_health_to_jvm", h / j)
                .put("ratio_first_generation_to_jvm", g / j)
                .put("first_generation_after_health_p50_ms", g - h);
        f.appendTo(line);
        // No target: the figure is for RESULTS.md; met=yes says every round launched and generated.
        return line.put("met", "yes");
    }

    /** One launch of {@code n} servers; records (at {@code round}, when ≥ 0) health and first-generation times. */
    private static void launchOnce(
            List<String> command, int n, Path dir, HttpClient http, int round, double[] health, double[] firstGen)
            throws Exception {
        ServerLaunch spec = new ServerLaunch(
                n,
                command,
                "127.0.0.1",
                0,
                List.of(),
                0,
                dir.resolve("model").toString(),
                dir.resolve("logs"),
                DEADLINE,
                Duration.ofMillis(100),
                Duration.ofSeconds(1),
                0);
        long t0 = System.nanoTime();
        try (ServerLauncher launcher = ServerLauncher.start(spec)) {
            launcher.awaitHealthy(DEADLINE);
            long healthy = System.nanoTime();
            List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
            for (ServerAddress s : launcher.addresses()) {
                answers.add(http.sendAsync(
                        HttpRequest.newBuilder(URI.create("http://" + s.host() + ":" + s.port() + "/generate"))
                                .timeout(DEADLINE)
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString(
                                        "{\"input_ids\": [257, 85, 10], \"sampling_params\": {\"max_new_tokens\": 8}}"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            for (CompletableFuture<HttpResponse<String>> a : answers) {
                HttpResponse<String> r = a.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                if (r.statusCode() != 200) {
                    throw new IllegalStateException(
                            "first generation answered HTTP " + r.statusCode() + ": " + r.body());
                }
            }
            long generated = System.nanoTime();
            if (round >= 0) {
                health[round] = (healthy - t0) / 1e6;
                firstGen[round] = (generated - t0) / 1e6;
            }
        }
    }

    /** Starts {@code n} {@code java -version} processes at once; the time until all exited, in ms. */
    private static double jvmVersion(String java, int n) throws Exception {
        long t0 = System.nanoTime();
        List<Process> ps = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ps.add(new ProcessBuilder(java, "-version")
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start());
        }
        for (Process p : ps) {
            if (!p.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("java -version did not exit within " + DEADLINE);
            }
        }
        return (System.nanoTime() - t0) / 1e6;
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
