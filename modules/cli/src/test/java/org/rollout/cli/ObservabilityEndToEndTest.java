package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.TrainingBatch;
import org.rollout.config.RolloutConfig;
import org.rollout.config.RolloutSettings;
import org.rollout.modelserver.LatencyModel;
import org.rollout.trainer.RolloutClient;

/**
 * {@code /metrics} during a real {@code rollout local} run (built-in model servers, the actor
 * runtime, the demo trainer), scraped over HTTP twice while the trainer pulls batches: the
 * counters must have moved between the scrapes, and every meter of {@link MetricCatalog} must be
 * there.
 */
class ObservabilityEndToEndTest {
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** Runs {@code atBatch} on the trainer's thread when it has pulled batch {@code n}, while the engine runs. */
    static final class AtBatch extends ForwardingRolloutClient {
        private final AtomicInteger pulled;
        private final Map<Integer, Runnable> atBatch;

        AtBatch(RolloutClient inner, AtomicInteger pulled, Map<Integer, Runnable> atBatch) {
            super(inner);
            this.pulled = pulled;
            this.atBatch = atBatch;
        }

        @Override
        public TrainingBatch nextBatch() throws InterruptedException {
            return seen(inner.nextBatch());
        }

        @Override
        public Optional<TrainingBatch> nextBatch(Duration timeout) throws InterruptedException {
            return inner.nextBatch(timeout).map(this::seen);
        }

        private TrainingBatch seen(TrainingBatch b) {
            Runnable r = atBatch.get(pulled.incrementAndGet());
            if (r != null) {
                r.run();
            }
            return b;
        }
    }

    static String get(URI uri) {
        try {
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(20)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as("GET %s: %s", uri, r.body()).isEqualTo(200);
            return r.body();
        } catch (Exception e) {
            throw new AssertionError("GET " + uri + " failed: " + e, e);
        }
    }

    /** Prometheus text to {name{labels} → value}, comments skipped. */
    static Map<String, Double> samples(String text) {
        Map<String, Double> out = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
        }
        return out;
    }

    /** The sum of every sample named {@code name} whose labels contain each of {@code labels}. */
    static double sum(Map<String, Double> samples, String name, String... labels) {
        double total = 0;
        boolean found = false;
        for (var e : samples.entrySet()) {
            String key = e.getKey();
            String n = key.contains("{") ? key.substring(0, key.indexOf('{')) : key;
            if (!n.equals(name)) {
                continue;
            }
            boolean all = true;
            for (String l : labels) {
                all &= key.contains(l);
            }
            if (all) {
                total += e.getValue();
                found = true;
            }
        }
        assertThat(found).as("a sample %s with %s", name, List.of(labels)).isTrue();
        return total;
    }

    static RolloutSettings settings(Path dir, String trial) {
        return RolloutConfig.load(
                null,
                List.of(
                        "rollout.fileroot=" + dir,
                        "rollout.trial_name=" + trial,
                        "gconfig.n_samples=4",
                        "gconfig.max_new_tokens=16",
                        "rollout.consumer_batch_size=8",
                        "rollout.max_concurrent_rollouts=16"),
                LocalCommand.profile("demo"));
    }

    @Test
    void countersMoveBetweenTwoScrapesOfALocalRun(@TempDir Path dir) throws Exception {
        RolloutSettings settings = settings(dir, "metrics");
        AtomicReference<LocalRun> run = new AtomicReference<>();
        AtomicReference<String> first = new AtomicReference<>();
        AtomicReference<String> second = new AtomicReference<>();
        AtomicReference<String> health = new AtomicReference<>();
        Map<Integer, Runnable> hooks = Map.of(
                2, () -> first.set(get(run.get().metricsUri().resolve("/metrics"))),
                8,
                        () -> {
                            second.set(get(run.get().metricsUri().resolve("/metrics")));
                            health.set(get(run.get().metricsUri().resolve("/health")));
                        });
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        run.set(new LocalRun(settings, true, false, 10, 2, false, new PrintStream(out, true, StandardCharsets.UTF_8))
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(3), Duration.ofMillis(1)))
                .withClientDecorator(c -> new AtBatch(c, new AtomicInteger(), hooks)));
        assertThat(run.get().execute()).isTrue();

        assertThat(out.toString(StandardCharsets.UTF_8)).contains("metrics: http://127.0.0.1:");
        java.nio.file.Files.writeString(Path.of("target", "metrics-scrape.txt"), second.get());
        Map<String, Double> a = samples(first.get());
        Map<String, Double> b = samples(second.get());
        String train = "scope=\"rollout\"";
        assertThat(sum(b, "rollout_tokens_generated_total", train))
                .isGreaterThan(sum(a, "rollout_tokens_generated_total", train));
        assertThat(sum(b, "rollout_groups_accepted_total", train))
                .isGreaterThan(sum(a, "rollout_groups_accepted_total", train));
        assertThat(sum(b, "rollout_inference_request_seconds_count"))
                .isGreaterThan(sum(a, "rollout_inference_request_seconds_count"));
        assertThat(sum(b, "rollout_inference_requests_total"))
                .isGreaterThan(sum(a, "rollout_inference_requests_total"));
        assertThat(sum(b, "rollout_weight_version")).isGreaterThan(sum(a, "rollout_weight_version"));
        assertThat(sum(b, "rollout_weight_updates_total", "outcome=\"ok\""))
                .isGreaterThan(sum(a, "rollout_weight_updates_total", "outcome=\"ok\""));
        assertThat(sum(b, "rollout_staleness_count")).isGreaterThan(sum(a, "rollout_staleness_count"));
        // One series per server for the per-server meters: both servers, addressed by host:port.
        assertThat(b.keySet().stream()
                        .filter(k -> k.startsWith("rollout_inference_server_up{"))
                        .count())
                .isEqualTo(2);
        assertThat(sum(b, "rollout_inference_server_up")).isEqualTo(2.0);
        assertThat(sum(b, "rollout_coordinator_reachable")).isEqualTo(1.0);
        // One mailbox series per long-lived actor kind; a local run hosts all four, and none is stuck.
        assertThat(b.keySet().stream()
                        .filter(k -> k.startsWith("rollout_actor_mailbox_messages{"))
                        .map(k -> k.replaceAll(".*actor=\"([a-z_]+)\".*", "$1"))
                        .sorted()
                        .toList())
                .containsExactly("collector", "coordinator", "runner", "weight_version");
        assertThat(sum(b, "rollout_actor_mailbox_messages")).isBetween(0.0, 10_000.0);
        assertThat(sum(b, "rollout_reward", train)).isBetween(0.0, 1.0);
        assertThat(sum(b, "rollout_group_target_slot_count", train)).isEqualTo(4.0);
        // Every meter the catalogue documents is served, and nothing rollout_ that it does not document.
        assertThat(MetricCatalog.missingFrom(second.get(), false)).isEmpty();
        assertThat(MetricCatalog.undocumentedIn(second.get())).isEmpty();
        assertThat(health.get()).isEqualTo("{\"status\":\"ok\"}");
    }
}
