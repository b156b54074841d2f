package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.config.RolloutSettings;
import org.rollout.modelserver.LatencyModel;

/**
 * The dashboard in headless Chromium against a running {@code rollout local}, opened once the run
 * has progressed: on open (its history read and one poll rendered, before a second poll) its charts
 * of the weight version and groups/s must have points and its rates figures; after a few polls (under
 * a virtual-time budget) its rendered DOM must show the run's numbers, one row per model server and
 * drawn chart paths, and a screenshot is written to {@code target/dashboard.png}. Skipped, saying
 * so, where Chromium is not installed ({@code .ci/run} installs Debian's {@code chromium}).
 */
class DashboardBrowserTest {
    private static final Duration BROWSER_DEADLINE = Duration.ofSeconds(90);
    /** Virtual time a page gets before its DOM is read "on open": less than its one-second poll interval. */
    private static final Duration ON_OPEN = Duration.ofMillis(300);
    /** Virtual time for a few of the page's polls. */
    private static final Duration A_FEW_POLLS = Duration.ofSeconds(4);
    /** How long the node may take to have sampled enough history for the page to draw. */
    private static final Duration HISTORY_DEADLINE = Duration.ofSeconds(30);

    private static final int HISTORY_SAMPLES = 3;
    private static final ObjectMapper JSON = new ObjectMapper();

    static Optional<Path> chromium() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            for (String name : List.of("chromium", "chromium-browser")) {
                Path p = Path.of(dir, name);
                if (Files.isExecutable(p)) {
                    return Optional.of(p);
                }
            }
        }
        return Optional.empty();
    }

    /**
     * Runs headless Chromium with {@code args} on {@code url}, letting the page's timers run for
     * {@code virtualTime} (network fetches do not use it up); its standard output.
     */
    static String browser(Path chromium, Path profile, String url, Duration virtualTime, String... args) {
        List<String> command = new ArrayList<>(List.of(
                chromium.toString(),
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--user-data-dir=" + profile,
                "--virtual-time-budget=" + virtualTime.toMillis()));
        command.addAll(List.of(args));
        command.add(url);
        try {
            Path stdout = Files.createTempFile(profile, "stdout", ".html");
            Process p = new ProcessBuilder(command)
                    .redirectOutput(stdout.toFile())
                    .redirectError(profile.resolve("stderr.txt").toFile())
                    .start();
            if (!p.waitFor(BROWSER_DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("chromium did not finish within " + BROWSER_DEADLINE + ": " + command);
            }
            assertThat(p.exitValue())
                    .as("chromium exit status; stderr: %s", Files.readString(profile.resolve("stderr.txt")))
                    .isZero();
            return Files.readString(stdout);
        } catch (IOException e) {
            throw new AssertionError("could not run " + command + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    private static double kpi(String dom, String key) {
        Matcher m = Pattern.compile("data-k=\"" + key + "\">([^<]*)<").matcher(dom);
        assertThat(m.find()).as("the %s figure in the page", key).isTrue();
        assertThat(m.group(1)).as("the %s figure in the page is a number", key).matches("-?\\d+(\\.\\d+)?");
        return Double.parseDouble(m.group(1));
    }

    /** The number of points of each series drawn in the chart {@code id}, in drawing order. */
    private static List<Integer> points(String dom, String id) {
        Matcher m = Pattern.compile("class=\"series\" data-points=\"(\\d+)\"").matcher(svg(dom, id));
        List<Integer> points = new ArrayList<>();
        while (m.find()) {
            points.add(Integer.parseInt(m.group(1)));
        }
        return points;
    }

    private static int polls(String dom) {
        return Integer.parseInt(dom.replaceAll("(?s).*data-polls=\"(\\d+)\".*", "$1"));
    }

    /** Waits until the node's dashboard history holds {@link #HISTORY_SAMPLES} samples. */
    private static void awaitHistory(URI node) {
        Awaitility.await("the dashboard history of " + node + " holds " + HISTORY_SAMPLES + " samples")
                .atMost(HISTORY_DEADLINE)
                .pollInterval(Duration.ofMillis(200))
                .untilAsserted(() -> assertThat(
                                JSON.readTree(ObservabilityEndToEndTest.get(node.resolve("/v1/dashboard/history.json")))
                                        .path("samples")
                                        .size())
                        .isGreaterThanOrEqualTo(HISTORY_SAMPLES));
    }

    private static String svg(String dom, String id) {
        Matcher m = Pattern.compile("<svg id=\"" + id + "\".*?</svg>", Pattern.DOTALL)
                .matcher(dom);
        assertThat(m.find()).as("svg %s", id).isTrue();
        return m.group();
    }

    @Test
    void theDashboardShowsARunningEngine(@TempDir Path dir) throws Exception {
        Optional<Path> chromium = chromium();
        assumeTrue(
                chromium.isPresent(),
                "chromium is not installed: the dashboard's browser test is skipped (apt-get install -y chromium)");
        RolloutSettings settings = ObservabilityEndToEndTest.settings(dir, "dashboard");
        AtomicReference<LocalRun> run = new AtomicReference<>();
        AtomicReference<String> onOpen = new AtomicReference<>();
        AtomicReference<String> dom = new AtomicReference<>();
        Path profile = Files.createDirectories(dir.resolve("chromium"));
        Path screenshot = Path.of("target", "dashboard.png").toAbsolutePath();
        Files.deleteIfExists(screenshot);
        // Eight batches in, with the node's history sampled: the page opens on a run in progress.
        Runnable look = () -> {
            awaitHistory(run.get().metricsUri());
            String url = run.get().metricsUri().resolve("/dashboard").toString();
            onOpen.set(browser(chromium.get(), profile, url, ON_OPEN, "--dump-dom"));
            dom.set(browser(chromium.get(), profile, url, A_FEW_POLLS, "--dump-dom"));
            browser(chromium.get(), profile, url, A_FEW_POLLS, "--screenshot=" + screenshot, "--window-size=1400,1000");
        };
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        run.set(new LocalRun(settings, true, false, 12, 2, false, new PrintStream(out, true, StandardCharsets.UTF_8))
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(3), Duration.ofMillis(1)))
                .withClientDecorator(
                        c -> new ObservabilityEndToEndTest.AtBatch(c, new AtomicInteger(), Map.of(8, look))));
        assertThat(run.get().execute()).isTrue();

        String opened = onOpen.get();
        Files.writeString(Path.of("target", "dashboard-dom-on-open.html"), opened);
        assertThat(polls(opened))
                .as("polls of /v1/dashboard.json rendered on open")
                .isEqualTo(1);
        assertThat(opened).as("no error shown on open").contains("<div id=\"error\"></div>");
        // Drawn from the node's history, not from the page's one poll.
        assertThat(points(opened, "version-chart"))
                .as("points of the weight-version chart on open")
                .singleElement()
                .satisfies(n -> assertThat(n).isGreaterThanOrEqualTo(HISTORY_SAMPLES));
        assertThat(points(opened, "rate-chart"))
                .as("points of the groups/s and tokens/s series on open")
                .hasSize(2)
                .allSatisfy(n -> assertThat(n).isGreaterThanOrEqualTo(HISTORY_SAMPLES - 1));
        assertThat(kpi(opened, "groups_per_s")).as("groups/s on open").isNotNegative();
        assertThat(kpi(opened, "tokens_per_s")).as("tokens/s on open").isNotNegative();
        assertThat(kpi(opened, "version")).isGreaterThanOrEqualTo(5);
        // The reward chart's x-axis names the weight versions it draws.
        assertThat(svg(opened, "reward-chart")).containsPattern("class=\"x-label\">v[1-9]\\d*<");

        String page = dom.get();
        Files.writeString(Path.of("target", "dashboard-dom.html"), page);
        assertThat(polls(page)).as("polls of /v1/dashboard.json rendered").isGreaterThanOrEqualTo(2);
        assertThat(kpi(page, "version")).isGreaterThanOrEqualTo(5);
        assertThat(kpi(page, "accepted")).isPositive();
        assertThat(kpi(page, "tokens_generated")).isPositive();
        assertThat(page).as("no error shown").contains("<div id=\"error\"></div>");
        // One row per model server, each up, each having served requests.
        Matcher rows = Pattern.compile("<tr class=\"server\">(.*?)</tr>", Pattern.DOTALL)
                .matcher(page);
        int servers = 0;
        while (rows.find()) {
            servers++;
            assertThat(rows.group(1)).contains("127.0.0.1:", ">up<");
        }
        assertThat(servers).isEqualTo(2);
        // Drawn: the version line, the train reward per version, the staleness bars.
        assertThat(svg(page, "version-chart"))
                .containsPattern("class=\"series\" d=\"M[^\"]*L|d=\"M[^\"]*L[^\"]*\"[^>]*class=\"series\"");
        assertThat(svg(page, "reward-chart")).contains("<circle");
        assertThat(svg(page, "staleness-chart")).containsPattern("class=\"bar\" data-count=\"[1-9]");
        assertThat(screenshot).exists();
        assertThat(Files.size(screenshot)).isGreaterThan(10_000);
    }
}
