package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.Tensor;
import org.rollout.api.TensorDict;
import org.rollout.api.Tokenizer;
import org.rollout.api.TrainingBatch;
import org.rollout.api.TrainingGroup;
import org.rollout.core.Tokenizers;
import org.rollout.modelserver.LatencyModel;
import org.rollout.trainer.ClientConfig;
import org.rollout.trainer.RolloutClient;
import picocli.CommandLine;

/**
 * {@code rollout replay} over the dumps of a real {@code rollout local} run: a trainer pulling
 * through the replay's gateway over HTTP receives every dumped training row (the test reads the
 * lines itself), each task once, with the dumped text, reward, prompt/completion boundary and
 * versions (exactly, for rows whose text re-encodes to the dumped length), and the command exits 0
 * once every batch is acknowledged; a bad line is refused naming its file and line.
 */
class ReplayCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    @TempDir
    static Path dir;

    static Path run;

    @BeforeAll
    static void aRealRun() throws Exception {
        boolean completed = new LocalRun(
                        ObservabilityEndToEndTest.settings(dir, "replay"),
                        true,
                        false,
                        6,
                        2,
                        false,
                        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))
                .withLatency(new LatencyModel(Duration.ZERO, Duration.ofMillis(2), Duration.ofMillis(1)))
                .execute();
        assertThat(completed).isTrue();
        run = dir.resolve("demo/replay");
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static int[] row(Tensor t, int i) {
        int l = t.dim(1);
        int[] out = new int[l];
        for (int j = 0; j < l; j++) {
            out[j] = (int) t.getLong(i * l + j);
        }
        return out;
    }

    @Test
    void aTrainerReceivesExactlyTheDumpedRows() throws Exception {
        Map<Long, List<JsonNode>> dumped = new HashMap<>();
        try (Stream<Path> files = Files.walk(run.resolve("rollout"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".jsonl")).toList()) {
                List<JsonNode> lines = new ArrayList<>();
                for (String line : Files.readAllLines(f)) {
                    lines.add(JSON.readTree(line));
                }
                String name = f.getFileName().toString();
                dumped.put(Long.parseLong(name.substring(0, name.indexOf('.'))), lines);
            }
        }
        assertThat(dumped).isNotEmpty();

        int port = freePort();
        CompletableFuture<Integer> command = CompletableFuture.supplyAsync(() -> new CommandLine(new ReplayCommand())
                .execute(run.toString(), "--contact", "http://127.0.0.1:" + port, "--batch-size", "4", "--retokenize"));
        Tokenizer tokenizer = Tokenizers.load("builtin");
        Map<Long, TrainingGroup> received = new HashMap<>();
        try (RolloutClient trainer = RolloutClient.connect(ClientConfig.of("http://127.0.0.1:" + port))) {
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (received.size() < dumped.size()) {
                assertThat(System.nanoTime() - deadline)
                        .as("every task replayed within %s: %s of %s", DEADLINE, received.size(), dumped.size())
                        .isNegative();
                Optional<TrainingBatch> b = trainer.nextBatch(Duration.ofSeconds(1));
                if (b.isPresent()) {
                    assertThat(b.get().size()).isLessThanOrEqualTo(4);
                    for (TrainingGroup g : b.get().groups()) {
                        assertThat(received.put(g.taskId(), g))
                                .as("task %s once", g.taskId())
                                .isNull();
                    }
                    trainer.acknowledge(b.get());
                }
            }
        }
        assertThat(command.get(DEADLINE.toSeconds(), TimeUnit.SECONDS)).isZero();
        assertThat(received.keySet()).isEqualTo(dumped.keySet());

        long rowsSeen = 0;
        long exactRows = 0;
        for (var e : dumped.entrySet()) {
            TrainingGroup g = received.get(e.getKey());
            List<JsonNode> lines = e.getValue();
            TensorDict rows = g.rows();
            assertThat(g.rowCount()).isEqualTo(lines.size());
            for (int i = 0; i < lines.size(); i++) {
                JsonNode line = lines.get(i);
                int[] ids = row(rows.get(TensorDict.INPUT_IDS), i);
                int[] attention = row(rows.get(TensorDict.ATTENTION_MASK), i);
                int[] loss = row(rows.get(TensorDict.LOSS_MASK), i);
                int[] versions = row(rows.get(TensorDict.VERSIONS), i);
                int seqlen = java.util.Arrays.stream(attention).sum();
                // The dump keeps text: token ids that are not valid UTF-8 come back as U+FFFD, re-encoded.
                boolean exact = seqlen == line.get("seqlen").asInt();
                exactRows += exact ? 1 : 0;
                String text = tokenizer.decode(java.util.Arrays.copyOf(ids, seqlen), false);
                assertThat(text)
                        .isEqualTo(line.get("prompt").asText()
                                + line.get("completion").asText());
                List<Integer> generatedVersions = new ArrayList<>();
                int firstGenerated = -1;
                for (int j = 0; j < seqlen; j++) {
                    if (loss[j] == 1) {
                        generatedVersions.add(versions[j]);
                        firstGenerated = firstGenerated < 0 ? j : firstGenerated;
                    }
                }
                assertThat(firstGenerated)
                        .isEqualTo(tokenizer.encode(line.get("prompt").asText()).length);
                List<Integer> expected = new ArrayList<>();
                for (JsonNode runOf : line.get("version_rle")) {
                    for (int k = 0; k < runOf.get(1).asInt(); k++) {
                        expected.add(runOf.get(0).asInt());
                    }
                }
                if (exact) {
                    assertThat(firstGenerated).isEqualTo(line.get("prompt_len").asInt());
                    assertThat(generatedVersions).isEqualTo(expected);
                } else {
                    assertThat(generatedVersions.get(0)).isEqualTo(expected.get(0));
                    assertThat(expected).containsAll(generatedVersions);
                    assertThat(generatedVersions).isSorted();
                }
                rowsSeen++;
                assertThat((double) rows.get(TensorDict.REWARDS).getDouble(i))
                        .isEqualTo((double) (float) line.get("reward").asDouble());
            }
        }
        assertThat(rowsSeen)
                .isEqualTo(dumped.values().stream().mapToLong(List::size).sum());
        System.out.println("replayed " + rowsSeen + " rows, " + exactRows + " with the dumped token count");
    }

    @Test
    void aBadLineIsRefusedNamingItsFileAndLine(@TempDir Path copy) throws Exception {
        Path good;
        try (Stream<Path> files = Files.walk(run.resolve("rollout"))) {
            good = files.filter(p -> p.toString().endsWith(".jsonl"))
                    .findFirst()
                    .orElseThrow();
        }
        Path file = Files.copy(
                good, Files.createDirectories(copy.resolve("rollout/3")).resolve("9.jsonl"));
        int lines = Files.readAllLines(file).size();
        Files.writeString(file, "not json\n", StandardOpenOption.APPEND);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream saved = System.err;
        int status;
        try {
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            status = new CommandLine(new ReplayCommand()).execute(copy.toString(), "--contact", "http://127.0.0.1:0");
        } finally {
            System.setErr(saved);
        }
        assertThat(status).isEqualTo(1);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains(file + ":" + (lines + 1) + ":");
    }
}
