package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.testing.Fuzz;
import org.rollout.testing.Property;

/**
 * Fuzzes {@link TrajectoryDumpReader#read} with whole files: random bytes, truncations (torn
 * writes), mutations and splices of valid dump files. Property: the file reads as records that
 * write back to lines reading as the same records, one per line, or fails with a {@link
 * DumpFormatException} naming the file and a line that exists, through one of the reader's own
 * rules (never its last-resort "unreadable line" net), with a short message; never another
 * exception, never a hang. {@code TrajectoryDumpReaderTest} fuzzes single lines; {@code
 * -Drollout.fuzz.inputs=N} runs N files (docs/bad-input.md).
 */
class TrajectoryDumpReaderFuzzTest {
    private static final String SINGLE = "{\"task_id\": 7, \"sample_idx\": 0, \"seqlen\": 5, \"prompt_len\": 2,"
            + " \"head_version\": 3, \"tail_version\": 4, \"version_rle\": [[3, 2], [4, 1]], \"reward\": 0.1,"
            + " \"prompt\": \"hi\", \"completion\": \"ok!\"}";

    private static final String MULTI = "{\"task_id\": 3, \"sample_idx\": 1, \"seqlen\": 8, \"prompt_len\": 2,"
            + " \"head_version\": 5, \"tail_version\": 6, \"version_rle\": [[5, 3], [6, 1]], \"reward\": NaN,"
            + " \"prompt\": \"a\\u00e9\", \"completion\": \"cdefgh\", \"segments\": [{\"role\": \"prompt\", \"len\": 2,"
            + " \"text\": \"ab\"}, {\"role\": \"gen\", \"len\": 2, \"text\": \"cd\"}, {\"role\": \"context\", \"len\": 2,"
            + " \"text\": \"ef\"}, {\"role\": \"gen\", \"len\": 2, \"text\": \"gh\"}], \"original_reward\": 0.5}";

    private static final List<String> TOKENS = List.of(
            "{",
            "}",
            "[",
            "]",
            "\"",
            ":",
            ",",
            " ",
            "\n",
            "null",
            "true",
            "0",
            "1",
            "-1",
            "2147483648",
            "9223372036854775808",
            "1e400",
            "NaN",
            "-Infinity",
            "\"gen\"",
            "\"prompt\"",
            "\"context\"",
            "\"segments\": ",
            "\"original_reward\": ",
            "\"version_rle\": ",
            "\"len\": ",
            "[[1, 1]]",
            "\\u",
            "é");

    @TempDir
    Path dir;

    @Test
    void theSamplesAreValidDumpFiles() throws Exception {
        Path f = dir.resolve("ok.jsonl");
        Files.writeString(f, SINGLE + "\n" + MULTI + "\n");
        assertThat(TrajectoryDumpReader.read(f)).hasSize(2);
    }

    @Test
    @Timeout(value = 6, unit = TimeUnit.HOURS) // a soak outlasts the default; the watchdog bounds each input
    void anyFileReadsAsRecordsOrFailsNamingFileAndLine() throws Exception {
        List<byte[]> samples = List.of(
                (SINGLE + "\n").getBytes(StandardCharsets.UTF_8),
                (SINGLE + "\n" + MULTI + "\n").getBytes(StandardCharsets.UTF_8),
                (MULTI + "\n" + SINGLE + "\n" + SINGLE + "\n").getBytes(StandardCharsets.UTF_8));
        Path f = dir.resolve("fuzz.jsonl");
        try (Fuzz.Watchdog watchdog = new Fuzz.Watchdog(Fuzz.HANG)) {
            Property.forAll("dumpFiles", Fuzz.inputs(2_000), Fuzz.bytes(samples, TOKENS), input -> {
                byte[] bytes = input.bytes();
                Files.write(f, bytes);
                @SuppressWarnings("unchecked")
                List<DumpRecord>[] read = new List[1];
                Throwable t = watchdog.run(input, () -> read[0] = TrajectoryDumpReader.read(f));
                long lines = countNewlines(bytes) + (bytes.length > 0 && bytes[bytes.length - 1] != '\n' ? 1 : 0);
                if (t == null) {
                    assertThat(read[0]).hasSize((int) lines);
                    for (DumpRecord r : read[0]) {
                        assertThat(TrajectoryDumpReader.readLine(r.toJson(), "again", 1))
                                .isEqualTo(r);
                    }
                    return;
                }
                assertThat(t).isInstanceOf(DumpFormatException.class);
                DumpFormatException e = (DumpFormatException) t;
                assertThat(e.source()).isEqualTo(f.toString());
                assertThat(e.lineNumber()).isBetween(1, (int) lines);
                assertThat(e.getMessage()).startsWith(f + ":" + e.lineNumber() + ": ");
                assertThat(e.problem()).doesNotStartWith("unreadable line");
                assertThat(e.getMessage()).hasSizeLessThan(f.toString().length() + 700);
            });
        }
    }

    private static long countNewlines(byte[] bytes) {
        long n = 0;
        for (byte b : bytes) {
            if (b == '\n') {
                n++;
            }
        }
        return n;
    }
}
