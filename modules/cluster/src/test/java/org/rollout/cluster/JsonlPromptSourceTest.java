package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.InvalidConfigException;
import org.rollout.config.OnMalformed;
import org.rollout.testing.Fuzz;
import org.rollout.testing.Property;

class JsonlPromptSourceTest {
    @TempDir
    Path dir;

    private Path file(String name, byte[] content) throws IOException {
        Path f = dir.resolve(name);
        Files.write(f, content);
        return f;
    }

    private Path file(String name, String content) throws IOException {
        return file(name, content.getBytes(StandardCharsets.UTF_8));
    }

    private static List<Map<String, Object>> drain(JsonlPromptSource s) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (long i = 0; ; i++) {
            Optional<Map<String, Object>> item = s.item(i);
            if (item.isEmpty()) {
                break;
            }
            out.add(item.get());
        }
        return out;
    }

    /** Invalid UTF-8: a lone continuation byte. */
    private static byte[] notUtf8() {
        return new byte[] {'{', '"', 'a', '"', ':', '"', (byte) 0x80, '"', '}'};
    }

    private Path mixed() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes("{\"prompt\": \"one\"}\n".getBytes(StandardCharsets.UTF_8)); // 1
        b.writeBytes("{\"prompt\": \"two\"\n".getBytes(StandardCharsets.UTF_8)); // 2 truncated
        b.writeBytes("[1, 2]\n".getBytes(StandardCharsets.UTF_8)); // 3
        b.writeBytes("\n".getBytes(StandardCharsets.UTF_8)); // 4 blank
        b.writeBytes(notUtf8()); // 5
        b.writeBytes("\n{\"prompt\": \"a\", \"prompt\": \"b\"}\n".getBytes(StandardCharsets.UTF_8)); // 6
        b.writeBytes("{\"prompt\": \"x\"} {\"prompt\": \"y\"}\n".getBytes(StandardCharsets.UTF_8)); // 7
        b.writeBytes("{\"prompt\": \"three\", \"n\": 3}".getBytes(StandardCharsets.UTF_8)); // 8, no newline
        return file("mixed.jsonl", b.toByteArray());
    }

    @Test
    void itemsAreAFunctionOfTheirIndexSoASuccessorCoordinatorReReadsTheSamePrompts() throws IOException {
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < 5; i++) {
            lines.append("{\"i\": ").append(i).append("}\n");
        }
        Path f = file("five.jsonl", lines.toString());
        JsonlPromptSource ordered = new JsonlPromptSource(List.of(f), true, null, OnMalformed.FAIL);
        assertThat(ordered.item(7)).contains(Map.of("i", 2)); // epoch 1, position 2
        JsonlPromptSource a = new JsonlPromptSource(List.of(f), true, 42L, OnMalformed.FAIL);
        JsonlPromptSource b = new JsonlPromptSource(List.of(f), true, 42L, OnMalformed.FAIL);
        List<Object> forward = new ArrayList<>();
        for (long i = 0; i < 15; i++) {
            forward.add(a.item(i).orElseThrow().get("i"));
        }
        List<Object> backward = new ArrayList<>();
        for (long i = 14; i >= 0; i--) {
            backward.add(0, b.item(i).orElseThrow().get("i"));
        }
        assertThat(backward).isEqualTo(forward);
        for (int epoch = 0; epoch < 3; epoch++) {
            assertThat(forward.subList(5 * epoch, 5 * epoch + 5)).containsExactlyInAnyOrder(0, 1, 2, 3, 4);
        }
        JsonlPromptSource once = new JsonlPromptSource(List.of(f), false, 42L, OnMalformed.FAIL);
        assertThat(once.item(4)).isPresent();
        assertThat(once.item(5)).isEmpty();
        assertThat(once.item(-1)).isEmpty();
    }

    @Test
    void readsOneObjectPerLineInFileOrderWithCrLfBlankLinesAndAByteOrderMark() throws IOException {
        Path f = file("ok.jsonl", "\uFEFF{\"prompt\": \"a\"}\r\n\r\n   \n{\"prompt\": \"b\", \"k\": [1, 2.5]}\r\n");
        JsonlPromptSource s = new JsonlPromptSource(List.of(f), false, null, OnMalformed.FAIL);
        assertThat(drain(s)).containsExactly(Map.of("prompt", "a"), Map.of("prompt", "b", "k", List.of(1, 2.5)));
        assertThat(s.skipped()).isZero();
        assertThat(s.problems()).isEmpty();
    }

    @Test
    void skipReportsEachMalformedLineWithFileAndLineAndKeepsEveryGoodLine() throws IOException {
        Path f = mixed();
        try (LogCapture log = new LogCapture()) {
            JsonlPromptSource s = new JsonlPromptSource(List.of(f), false, null, OnMalformed.SKIP);
            assertThat(drain(s)).containsExactly(Map.of("prompt", "one"), Map.of("prompt", "three", "n", 3));
            assertThat(s.skipped()).isEqualTo(5);
            assertThat(s.problems())
                    .containsExactly(
                            f + ":2: not valid JSON: Unexpected end-of-input: expected close marker for Object",
                            f + ":3: not a JSON object (got an array)",
                            f + ":5: not valid UTF-8",
                            f + ":6: not valid JSON: Duplicate field 'prompt'",
                            f + ":7: not valid JSON: Trailing token (of type START_OBJECT) found after value (bound as"
                                    + " `com.fasterxml.jackson.databind.JsonNode`): not allowed as per"
                                    + " `DeserializationFeature.FAIL_ON_TRAILING_TOKENS`");
            for (String problem : s.problems()) {
                assertThat(log.warningsContaining("skipping malformed dataset line " + problem))
                        .hasSize(1);
            }
            assertThat(log.warningsContaining("skipped 5 malformed line(s) of 8 lines in " + f
                            + " (rollout.dataset.on_malformed = skip)"))
                    .hasSize(1);
        }
    }

    @Test
    void failNamesTheFileAndLineOfTheFirstMalformedLine() throws IOException {
        Path good = file("good.jsonl", "{\"prompt\": \"g\"}\n");
        Path f = mixed();
        assertThatThrownBy(() -> new JsonlPromptSource(List.of(good, f), true, null, OnMalformed.FAIL))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith(
                        "invalid value for 'dataset': \"" + f + ":2: not valid JSON: Unexpected" + " end-of-input")
                .hasMessageEndingWith("(allowed: one JSON object per line (on_malformed = fail))");
    }

    @Test
    void failOnInvalidUtf8NamesTheLineInsteadOfFailingTheWholeFile() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes("{\"prompt\": \"ok\"}\n".getBytes(StandardCharsets.UTF_8));
        b.writeBytes(notUtf8());
        Path f = file("utf.jsonl", b.toByteArray());
        assertThatThrownBy(() -> new JsonlPromptSource(List.of(f), true, null, OnMalformed.FAIL))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'dataset': \"" + f + ":2: not valid UTF-8\" (allowed: one JSON object"
                        + " per line (on_malformed = fail))");
    }

    @Test
    void filesWithNoGoodLineAreRefusedSayingWhatWasSkipped() throws IOException {
        Path f = file("bad.jsonl", "nope\n\"str\"\n");
        assertThatThrownBy(() -> new JsonlPromptSource(List.of(f), true, null, OnMalformed.SKIP))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'dataset': \"[" + f + "]\" (allowed: files with at least one"
                        + " JSON object line; 2 malformed line(s) skipped, the first " + f + ":1: not valid JSON:"
                        + " Unrecognized token 'nope'");
    }

    @Test
    void onlyTheFirstHundredSkippedLinesAreKeptAndLoggedButAllAreCounted() throws IOException {
        StringBuilder sb = new StringBuilder("{\"prompt\": \"p\"}\n");
        for (int i = 0; i < 250; i++) {
            sb.append("x").append(i).append('\n');
        }
        Path f = file("many.jsonl", sb.toString());
        try (LogCapture log = new LogCapture()) {
            JsonlPromptSource s = new JsonlPromptSource(List.of(f), true, null, OnMalformed.SKIP);
            assertThat(s.size()).isEqualTo(1);
            assertThat(s.skipped()).isEqualTo(250);
            assertThat(s.problems()).hasSize(JsonlPromptSource.MAX_REPORTED);
            assertThat(s.problems().getLast()).startsWith(f + ":101: ");
            assertThat(log.warningsContaining("skipping malformed dataset line " + f))
                    .hasSize(JsonlPromptSource.MAX_REPORTED);
            assertThat(log.warningsContaining("skipped 250 malformed line(s) of 251 lines in " + f))
                    .hasSize(1);
        }
    }

    @Test
    void aVeryLongBadLineIsNotEchoedInTheReport() throws IOException {
        Path f = file("long.jsonl", "{\"prompt\": \"p\"}\n" + "y".repeat(100_000) + "\n");
        JsonlPromptSource s = new JsonlPromptSource(List.of(f), true, null, OnMalformed.SKIP);
        assertThat(s.problems())
                .singleElement()
                .asString()
                .hasSizeLessThan(f.toString().length() + 300);
    }

    @Test
    void anUnreadableFileIsRefusedNamingIt() throws IOException {
        Path d = Files.createDirectory(dir.resolve("a-directory.jsonl"));
        assertThatThrownBy(() -> new JsonlPromptSource(List.of(d), true, null, OnMalformed.SKIP))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'dataset': \"" + d + "\" (allowed: a readable JSONL file");
    }

    // ---- fuzzing ----

    private static final ObjectMapper PLAIN = new ObjectMapper();

    /**
     * Any bytes as a dataset: with skip, every non-blank line is either an item (equal to what a
     * plain JSON reader makes of it) or a reported skip, and the problems name the file and line; with
     * fail, the error names the file and the line of skip's first problem. Nothing but {@link
     * InvalidConfigException} is thrown.
     */
    @Test
    @Timeout(value = 6, unit = TimeUnit.HOURS) // a soak outlasts the default; the watchdog bounds each input
    void anyFileIsReadLineByLineOrRefusedNamingFileAndLine() throws Exception {
        List<byte[]> samples = List.of(
                "{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"answer\": 4}\n".getBytes(StandardCharsets.UTF_8),
                "{\"q\": [1, {\"x\": null}], \"t\": true}\r\n\r\n{\"é\": \"ü\"}".getBytes(StandardCharsets.UTF_8));
        List<String> tokens = List.of(
                "{", "}", "[", "]", "\"", ":", ",", "\n", "\r\n", " ", "null", "1e999", "\"prompt\":", "\uFEFF", "é");
        int[] trial = {0};
        try (Fuzz.Watchdog watchdog = new Fuzz.Watchdog(Fuzz.HANG)) {
            Property.forAll("jsonlDatasets", Fuzz.inputs(1_000), Fuzz.bytes(samples, tokens), input -> {
                Path f = file("fuzz-" + trial[0]++ + ".jsonl", input.bytes());
                JsonlPromptSource[] skip = new JsonlPromptSource[1];
                Throwable skipError = watchdog.run(
                        input, () -> skip[0] = new JsonlPromptSource(List.of(f), false, null, OnMalformed.SKIP));
                Throwable failError =
                        watchdog.run(input, () -> new JsonlPromptSource(List.of(f), false, null, OnMalformed.FAIL));
                List<String> lines = nonBlankLines(input.bytes());
                if (skipError != null) {
                    assertThat(skipError)
                            .isInstanceOf(InvalidConfigException.class)
                            .hasMessageContaining("(allowed: files with at least one JSON object line");
                    assertThat(failError).isInstanceOf(InvalidConfigException.class);
                    return;
                }
                JsonlPromptSource s = skip[0];
                assertThat(s.size() + s.skipped()).isEqualTo(lines.size());
                assertThat(s.problems()).allSatisfy(p -> assertThat(p).matches("\\Q" + f + "\\E:\\d+: .+"));
                if (s.skipped() == 0) {
                    assertThat(failError).isNull();
                    List<Map<String, Object>> items = drain(s);
                    for (int i = 0; i < items.size(); i++) {
                        assertThat(items.get(i))
                                .isEqualTo(PLAIN.readValue(lines.get(i), new TypeReference<Map<String, Object>>() {}));
                    }
                } else {
                    String first = s.problems().getFirst();
                    assertThat(failError)
                            .isInstanceOf(InvalidConfigException.class)
                            .hasMessageStartingWith("invalid value for 'dataset': \"" + first);
                }
                Files.delete(f);
            });
        }
    }

    /** The non-blank lines, split and decoded independently of the class under test. */
    private static List<String> nonBlankLines(byte[] bytes) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        if (text.startsWith("\uFEFF")) {
            text = text.substring(1);
        }
        List<String> out = new ArrayList<>();
        for (String line : text.split("\n", -1)) {
            String l = line.endsWith("\r") ? line.substring(0, line.length() - 1) : line;
            if (!l.isBlank()) {
                out.add(l);
            }
        }
        return out;
    }

    @Test
    void theFuzzOracleSplitsLinesAsTheSourceDoes() {
        assertThat(nonBlankLines("\uFEFFa\r\n\r\n b \nc".getBytes(StandardCharsets.UTF_8)))
                .containsExactly("a", " b ", "c");
        assertThat(catchThrowable(() -> nonBlankLines(new byte[0]))).isNull();
    }
}
