package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;
import org.rollout.core.DumpRecord.Role;
import org.rollout.core.DumpRecord.Segment;
import org.rollout.core.VersionRle.Run;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class TrajectoryDumpReaderTest {

    private static final String SINGLE = "{\"task_id\": 7, \"sample_idx\": 0, \"seqlen\": 5, \"prompt_len\": 2,"
            + " \"head_version\": 3, \"tail_version\": 4, \"version_rle\": [[3, 2], [4, 1]], \"reward\": 0.1,"
            + " \"prompt\": \"hi\", \"completion\": \"ok!\"}";

    private static final String MULTI = "{\"task_id\": 3, \"sample_idx\": 1, \"seqlen\": 8, \"prompt_len\": 2,"
            + " \"head_version\": 5, \"tail_version\": 6, \"version_rle\": [[5, 3], [6, 1]], \"reward\": 1.0,"
            + " \"prompt\": \"ab\", \"completion\": \"cdefgh\", \"segments\": [{\"role\": \"prompt\", \"len\": 2,"
            + " \"text\": \"ab\"}, {\"role\": \"gen\", \"len\": 2, \"text\": \"cd\"}, {\"role\": \"context\", \"len\": 2,"
            + " \"text\": \"ef\"}, {\"role\": \"gen\", \"len\": 2, \"text\": \"gh\"}], \"original_reward\": 0.5}";

    @TempDir
    Path dir;

    private static DumpFormatException failure(String line) {
        Throwable t = catchThrowable(() -> TrajectoryDumpReader.readLine(line, "d.jsonl", 3));
        assertThat(t).isInstanceOf(DumpFormatException.class);
        return (DumpFormatException) t;
    }

    // ---- valid lines ----

    @Test
    void readsASingleTurnLine() {
        DumpRecord r = TrajectoryDumpReader.readLine(SINGLE, "d.jsonl", 1);
        assertThat(r)
                .isEqualTo(new DumpRecord(
                        7, 0, 5, 2, 3, 4, List.of(new Run(3, 2), new Run(4, 1)), 0.1, "hi", "ok!", List.of(), null));
        assertThat(r.isMultiTurn()).isFalse();
    }

    @Test
    void readsAMultiTurnLineWithOriginalReward() {
        DumpRecord r = TrajectoryDumpReader.readLine(MULTI, "d.jsonl", 1);
        assertThat(r.segments())
                .containsExactly(
                        new Segment(Role.PROMPT, 2, "ab"),
                        new Segment(Role.GEN, 2, "cd"),
                        new Segment(Role.CONTEXT, 2, "ef"),
                        new Segment(Role.GEN, 2, "gh"));
        assertThat(r.originalReward()).isEqualTo(0.5);
        assertThat(r.isMultiTurn()).isTrue();
    }

    @Test
    void writesExactlyTheLinesItReads() {
        assertThat(TrajectoryDumpReader.readLine(SINGLE, "d", 1).toJson()).isEqualTo(SINGLE);
        assertThat(TrajectoryDumpReader.readLine(MULTI, "d", 1).toJson()).isEqualTo(MULTI);
    }

    @Test
    void acceptsNonFiniteRewardsAsPythonWritesThem() {
        assertThat(TrajectoryDumpReader.readLine(SINGLE.replace("0.1", "-Infinity"), "d", 1)
                        .reward())
                .isEqualTo(Double.NEGATIVE_INFINITY);
        assertThat(TrajectoryDumpReader.readLine(SINGLE.replace("0.1", "NaN"), "d", 1)
                        .reward())
                .isNaN();
    }

    @Test
    void acceptsAnIntegerReward() {
        assertThat(TrajectoryDumpReader.readLine(SINGLE.replace("0.1", "1"), "d", 1)
                        .reward())
                .isEqualTo(1.0);
    }

    @Test
    void acceptsARowThatStartsGeneratedWithItsPromptRunInTheMiddle() {
        String line = "{\"task_id\": 1, \"sample_idx\": 0, \"seqlen\": 4, \"prompt_len\": 0, \"head_version\": 2,"
                + " \"tail_version\": 2, \"version_rle\": [[2, 2]], \"reward\": 0.0, \"prompt\": \"\", \"completion\":"
                + " \"abcd\", \"segments\": [{\"role\": \"gen\", \"len\": 1, \"text\": \"a\"}, {\"role\": \"prompt\","
                + " \"len\": 2, \"text\": \"bc\"}, {\"role\": \"gen\", \"len\": 1, \"text\": \"d\"}]}";
        assertThat(TrajectoryDumpReader.readLine(line, "d", 1).promptLen()).isZero();
    }

    // ---- whole-line errors ----

    @Test
    void rejectsANullLine() {
        assertThat(failure(null)).hasMessage("d.jsonl:3: line is null");
    }

    @Test
    void rejectsInvalidJsonWithoutEchoingTheLine() {
        DumpFormatException e = failure("{\"task_id\": 7,");
        assertThat(e.getMessage()).startsWith("d.jsonl:3: not valid JSON: ");
        assertThat(e.field()).isEmpty();
        assertThat(e.lineNumber()).isEqualTo(3);
        assertThat(e.source()).isEqualTo("d.jsonl");
    }

    @Test
    void rejectsAnEmptyLine() {
        assertThat(failure("")).hasMessage("d.jsonl:3: not a JSON object");
    }

    @Test
    void rejectsAJsonValueThatIsNotAnObject() {
        assertThat(failure("[1, 2]")).hasMessage("d.jsonl:3: not a JSON object");
    }

    @Test
    void rejectsTrailingContent() {
        assertThat(failure(SINGLE + " {}").getMessage()).startsWith("d.jsonl:3: not valid JSON: ");
    }

    @Test
    void rejectsDuplicateKeys() {
        assertThat(failure(SINGLE.replace("}", ", \"reward\": 1}")).getMessage())
                .startsWith("d.jsonl:3: not valid JSON: Duplicate field 'reward'");
    }

    // ---- keys ----

    @Test
    void rejectsAMissingKeyNamingIt() {
        assertThat(failure(SINGLE.replace("\"sample_idx\": 0, ", "")))
                .hasMessage("d.jsonl:3: field 'sample_idx': missing key");
    }

    @Test
    void rejectsKeysOutOfOrder() {
        String swapped = SINGLE.replace(
                "\"prompt\": \"hi\", \"completion\": \"ok!\"", "\"completion\": \"ok!\"," + " \"prompt\": \"hi\"");
        assertThat(failure(swapped))
                .hasMessage("d.jsonl:3: field 'completion': key out of order: expected 'prompt' at position 8");
    }

    @Test
    void rejectsOriginalRewardBeforeSegments() {
        String line = MULTI.replace(", \"original_reward\": 0.5}", "}")
                .replace("\"completion\": \"cdefgh\", ", "\"completion\": \"cdefgh\", \"original_reward\": 0.5, ");
        assertThat(failure(line))
                .hasMessage("d.jsonl:3: field 'original_reward': key out of order: expected 'segments' at position 10");
    }

    @Test
    void rejectsAnUnexpectedKey() {
        assertThat(failure(SINGLE.replace("}", ", \"extra\": 1}")))
                .hasMessage("d.jsonl:3: field 'extra': unexpected key");
    }

    // ---- types ----

    @Test
    void rejectsAStringTaskId() {
        assertThat(failure(SINGLE.replace("\"task_id\": 7", "\"task_id\": \"7\"")))
                .hasMessage("d.jsonl:3: field 'task_id': must be an integer, got a string");
    }

    @Test
    void rejectsAFloatWhereAnIntegerBelongs() {
        assertThat(failure(SINGLE.replace("\"seqlen\": 5", "\"seqlen\": 5.0")))
                .hasMessage("d.jsonl:3: field 'seqlen': must be an integer, got the number 5.0");
    }

    @Test
    void rejectsATaskIdBeyondSixtyFourBits() {
        assertThat(failure(SINGLE.replace("\"task_id\": 7", "\"task_id\": 99999999999999999999"))
                        .getMessage())
                .startsWith("d.jsonl:3: field 'task_id': must be in [");
    }

    @Test
    void rejectsANegativeSampleIdx() {
        assertThat(failure(SINGLE.replace("\"sample_idx\": 0", "\"sample_idx\": -1")))
                .hasMessage("d.jsonl:3: field 'sample_idx': must be in [0, 2147483647], got -1");
    }

    @Test
    void rejectsSeqlenZero() {
        assertThat(failure(SINGLE.replace("\"seqlen\": 5", "\"seqlen\": 0")))
                .hasMessage("d.jsonl:3: field 'seqlen': must be in [1, 2147483647], got 0");
    }

    @Test
    void rejectsAPromptLenThatLeavesNoGeneratedToken() {
        assertThat(failure(SINGLE.replace("\"prompt_len\": 2", "\"prompt_len\": 5")))
                .hasMessage(
                        "d.jsonl:3: field 'prompt_len': must be below seqlen 5 (the last valid token is generated), got 5");
    }

    @Test
    void rejectsAStringReward() {
        assertThat(failure(SINGLE.replace("\"reward\": 0.1", "\"reward\": \"0.1\"")))
                .hasMessage("d.jsonl:3: field 'reward': must be a number, got a string");
    }

    @Test
    void rejectsANullPrompt() {
        assertThat(failure(SINGLE.replace("\"prompt\": \"hi\"", "\"prompt\": null")))
                .hasMessage("d.jsonl:3: field 'prompt': must be a string, got null");
    }

    // ---- version_rle ----

    @Test
    void rejectsAVersionRleThatIsNotAList() {
        assertThat(failure(SINGLE.replace("[[3, 2], [4, 1]]", "{}")))
                .hasMessage("d.jsonl:3: field 'version_rle': must be a list of [version, count] pairs, got an object");
    }

    @Test
    void rejectsARunThatIsNotAPair() {
        assertThat(failure(SINGLE.replace("[[3, 2], [4, 1]]", "[[3, 2], [4, 1, 0]]")))
                .hasMessage("d.jsonl:3: field 'version_rle[1]': must be a [version, count] pair, got a list of 3");
    }

    @Test
    void rejectsARunCountBelowOne() {
        assertThat(failure(SINGLE.replace("[[3, 2], [4, 1]]", "[[3, 3], [4, 0]]")))
                .hasMessage("d.jsonl:3: field 'version_rle[1][1]': must be in [1, 2147483647], got 0");
    }

    @Test
    void rejectsRunCountsThatDoNotAddUpToTheGeneratedTokens() {
        assertThat(failure(SINGLE.replace("[[3, 2], [4, 1]]", "[[3, 2], [4, 2]]")))
                .hasMessage("d.jsonl:3: field 'version_rle': counts sum to 4, but the row has 3 generated tokens");
    }

    @Test
    void rejectsAnEmptyVersionRle() {
        String line = SINGLE.replace("[[3, 2], [4, 1]]", "[]")
                .replace("\"head_version\": 3", "\"head_version\": -1")
                .replace("\"tail_version\": 4", "\"tail_version\": -1");
        assertThat(failure(line))
                .hasMessage("d.jsonl:3: field 'version_rle': counts sum to 0, but the row has 3 generated tokens");
    }

    @Test
    void rejectsAdjacentRunsOfTheSameVersion() {
        assertThat(failure(SINGLE.replace("[[3, 2], [4, 1]]", "[[3, 2], [3, 1]]")))
                .hasMessage("d.jsonl:3: field 'version_rle[1]': repeats version 3 of the run before it; runs must be"
                        + " maximal");
    }

    @Test
    void rejectsAHeadVersionThatIsNotTheLeastRunVersion() {
        assertThat(failure(SINGLE.replace("\"head_version\": 3", "\"head_version\": 2")))
                .hasMessage("d.jsonl:3: field 'head_version': must be the least version in version_rle, 3, got 2");
    }

    @Test
    void rejectsATailVersionThatIsNotTheGreatestRunVersion() {
        assertThat(failure(SINGLE.replace("\"tail_version\": 4", "\"tail_version\": 3")))
                .hasMessage("d.jsonl:3: field 'tail_version': must be the greatest version in version_rle, 4, got 3");
    }

    // ---- segments ----

    @Test
    void rejectsASegmentWithOtherKeys() {
        assertThat(failure(MULTI.replace(
                        "{\"role\": \"prompt\", \"len\": 2, \"text\": \"ab\"}",
                        "{\"role\":" + " \"prompt\", \"text\": \"ab\", \"len\": 2}")))
                .hasMessage(
                        "d.jsonl:3: field 'segments[0]': must have exactly the keys [role, len, text] in this order,"
                                + " got [role, text, len]");
    }

    @Test
    void rejectsAnUnknownRole() {
        assertThat(failure(MULTI.replace("\"role\": \"context\"", "\"role\": \"tool\"")))
                .hasMessage("d.jsonl:3: field 'segments[2].role': must be \"prompt\", \"gen\" or \"context\", got a"
                        + " string");
    }

    @Test
    void rejectsASegmentLenBelowOne() {
        assertThat(failure(MULTI.replace("{\"role\": \"context\", \"len\": 2", "{\"role\": \"context\", \"len\": 0")))
                .hasMessage("d.jsonl:3: field 'segments[2].len': must be in [1, 2147483647], got 0");
    }

    @Test
    void rejectsSegmentsOfASingleTurnRow() {
        String line = SINGLE.replace(
                "\"completion\": \"ok!\"}",
                "\"completion\": \"ok!\", \"segments\": [{\"role\": \"prompt\", \"len\": 2, \"text\": \"hi\"},"
                        + " {\"role\": \"gen\", \"len\": 3, \"text\": \"ok!\"}]}");
        assertThat(failure(line))
                .hasMessage("d.jsonl:3: field 'segments': are written only for two or more gen runs, got 1");
    }

    @Test
    void rejectsAnEmptySegmentsList() {
        assertThat(failure(SINGLE.replace("\"completion\": \"ok!\"}", "\"completion\": \"ok!\", \"segments\": []}")))
                .hasMessage("d.jsonl:3: field 'segments': are written only for two or more gen runs, got 0");
    }

    @Test
    void rejectsSegmentsThatAreNotMaximalRuns() {
        String line = MULTI.replace(
                "{\"role\": \"context\", \"len\": 2, \"text\": \"ef\"}, {\"role\": \"gen\", \"len\": 2, \"text\":"
                        + " \"gh\"}",
                "{\"role\": \"gen\", \"len\": 2, \"text\": \"ef\"}, {\"role\": \"gen\", \"len\": 2, \"text\": \"gh\"}");
        assertThat(failure(line))
                .hasMessage("d.jsonl:3: field 'segments[2].role': runs must alternate between gen and non-gen, but"
                        + " segments 1 and 2 are both gen");
    }

    @Test
    void rejectsAFirstNonGeneratedRunThatIsNotPrompt() {
        assertThat(failure(MULTI.replace("{\"role\": \"prompt\"", "{\"role\": \"context\"")))
                .hasMessage("d.jsonl:3: field 'segments[0].role': the first non-generated run must be \"prompt\", got"
                        + " \"context\"");
    }

    @Test
    void rejectsALaterNonGeneratedRunThatIsNotContext() {
        assertThat(failure(MULTI.replace("{\"role\": \"context\"", "{\"role\": \"prompt\"")))
                .hasMessage("d.jsonl:3: field 'segments[2].role': the later non-generated run must be \"context\", got"
                        + " \"prompt\"");
    }

    @Test
    void rejectsSegmentsEndingOnContext() {
        String line = MULTI.replace("\"seqlen\": 8", "\"seqlen\": 9")
                .replace(
                        "\"text\": \"gh\"}]",
                        "\"text\": \"gh\"}, {\"role\": \"context\", \"len\": 1, \"text\": \"i\"}]");
        assertThat(failure(line)).hasMessage("d.jsonl:3: field 'segments[4].role': the last run must be \"gen\"");
    }

    @Test
    void rejectsSegmentLengthsThatDoNotAddUpToSeqlen() {
        assertThat(failure(MULTI.replace("\"seqlen\": 8", "\"seqlen\": 9")))
                .hasMessage("d.jsonl:3: field 'segments': lengths sum to 8, but seqlen is 9");
    }

    @Test
    void rejectsAPromptLenOtherThanTheFirstSegment() {
        assertThat(failure(MULTI.replace("\"prompt_len\": 2", "\"prompt_len\": 3")))
                .hasMessage("d.jsonl:3: field 'prompt_len': must be 2, where the first gen segment starts, got 3");
    }

    // ---- files ----

    @Test
    void readsEveryLineOfAFile() throws IOException {
        Path f = Files.writeString(dir.resolve("t.jsonl"), SINGLE + "\n" + MULTI + "\n");
        assertThat(TrajectoryDumpReader.read(f)).extracting(DumpRecord::taskId).containsExactly(7L, 3L);
    }

    @Test
    void readsAnEmptyFileAsNoRecords() throws IOException {
        assertThat(TrajectoryDumpReader.read(Files.writeString(dir.resolve("e.jsonl"), "")))
                .isEmpty();
    }

    @Test
    void rejectsAnUnterminatedLastLineNamingFileAndLine() throws IOException {
        Path f = Files.writeString(dir.resolve("t.jsonl"), SINGLE + "\n" + SINGLE);
        assertThatThrownBy(() -> TrajectoryDumpReader.read(f))
                .isInstanceOf(DumpFormatException.class)
                .hasMessage(f + ":2: line is not terminated by a newline (a torn or truncated write)");
    }

    @Test
    void rejectsInvalidUtf8NamingTheLine() throws IOException {
        byte[] good = (SINGLE + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] bad = {'{', (byte) 0xFF, '}', '\n'};
        byte[] all = new byte[good.length + bad.length];
        System.arraycopy(good, 0, all, 0, good.length);
        System.arraycopy(bad, 0, all, good.length, bad.length);
        Path f = Files.write(dir.resolve("t.jsonl"), all);
        assertThatThrownBy(() -> TrajectoryDumpReader.read(f))
                .isInstanceOf(DumpFormatException.class)
                .hasMessage(f + ":2: line is not valid UTF-8");
    }

    @Test
    void rejectsABadLineInAFileNamingFileLineAndField() throws IOException {
        Path f = Files.writeString(
                dir.resolve("t.jsonl"), SINGLE + "\n" + SINGLE.replace("\"reward\": 0.1", "\"reward\": []") + "\n");
        assertThatThrownBy(() -> TrajectoryDumpReader.read(f))
                .isInstanceOf(DumpFormatException.class)
                .hasMessage(f + ":2: field 'reward': must be a number, got a list of 0");
    }

    // ---- properties ----

    /** A random right-padded trajectory over the byte-level vocabulary: see {@link #randomTrajectory}. */
    private record TrajectoryShape(int rows, int width, long seed, boolean withOriginal) {
        TensorDict build() {
            return randomTrajectory(rows, width, new Random(seed), withOriginal);
        }
    }

    /** 1–4 rows of width 1–12. */
    private static final Gen<TrajectoryShape> TRAJECTORIES = random -> new TrajectoryShape(
            Gen.ints(1, 4).generate(random),
            Gen.ints(1, 12).generate(random),
            Gen.longs().generate(random),
            Gen.booleans().generate(random));

    @Test
    void everyDumpedRowReadsBackAsTheSameRecord() {
        Property.forAll("everyDumpedRowReadsBackAsTheSameRecord", 300, TRAJECTORIES, shape -> {
            List<DumpRecord> records = TrajectoryDumper.records(11, shape.build(), 4, ByteLevelTokenizer.INSTANCE);
            for (DumpRecord r : records) {
                assertThat(TrajectoryDumpReader.readLine(r.toJson(), "prop", 1)).isEqualTo(r);
            }
        });
    }

    @Test
    void anyStringFailsOnlyWithDumpFormatException() {
        // Any chars at all, unpaired surrogates included: a line read from a broken file can hold them.
        Property.forAll("anyStringFailsOnlyWithDumpFormatException", 500, Gen.anyCharStrings(0, 255), line -> {
            Throwable t = catchThrowable(() -> TrajectoryDumpReader.readLine(line, "fuzz", 1));
            assertThat(t).isInstanceOf(DumpFormatException.class);
        });
    }

    /** A valid line and the seed of the random edits {@link #mutate} applies to it. */
    private record Mutation(String line, long seed) {}

    @Test
    void mutatedLinesFailOnlyWithDumpFormatException() {
        Gen<Mutation> mutations = Gen.zip(Gen.elementOf(SINGLE, MULTI), Gen.longs(), Mutation::new);
        Property.forAll("mutatedLinesFailOnlyWithDumpFormatException", 1_000, mutations, m -> {
            String mutated = mutate(m.line(), new Random(m.seed()));
            DumpRecord accepted;
            try {
                accepted = TrajectoryDumpReader.readLine(mutated, "fuzz", 1);
            } catch (DumpFormatException expected) {
                return;
            }
            // An accepted line is canonical up to number spelling: the record writes the same keys back.
            assertThat(keys(mutated)).isEqualTo(keys(accepted.toJson()));
            assertThat(TrajectoryDumpReader.readLine(accepted.toJson(), "fuzz", 1))
                    .isEqualTo(accepted);
        });
    }

    private static List<String> keys(String json) {
        try {
            List<String> keys = new ArrayList<>();
            new com.fasterxml.jackson.databind.ObjectMapper()
                    .enable(com.fasterxml.jackson.core.JsonParser.Feature.ALLOW_NON_NUMERIC_NUMBERS)
                    .readTree(json)
                    .fieldNames()
                    .forEachRemaining(keys::add);
            return keys;
        } catch (IOException e) {
            throw new AssertionError("an accepted line must be JSON", e);
        }
    }

    @Test
    void deeplyNestedInputFailsWithDumpFormatException() {
        String deep = "[".repeat(100_000) + "]".repeat(100_000);
        assertThat(failure(deep).getMessage()).startsWith("d.jsonl:3: not valid JSON: ");
        String deepField = SINGLE.replace("\"reward\": 0.1", "\"reward\": " + "[".repeat(5_000) + "]".repeat(5_000));
        assertThat(failure(deepField)).isInstanceOf(DumpFormatException.class);
    }

    @Test
    void longInputIsNotEchoedInTheMessage() {
        String key = "k".repeat(10_000);
        DumpFormatException e = failure(SINGLE.replace("}", ", \"" + key + "\": 1}"));
        assertThat(e.getMessage().length()).isLessThan(400);
    }

    private static String mutate(String line, Random rnd) {
        StringBuilder sb = new StringBuilder(line);
        int edits = 1 + rnd.nextInt(3);
        String alphabet = "{}[]\",:0123456789-.eE aNIfinity\\u";
        for (int k = 0; k < edits && sb.length() > 0; k++) {
            int at = rnd.nextInt(sb.length());
            switch (rnd.nextInt(3)) {
                case 0 -> sb.deleteCharAt(at);
                case 1 -> sb.insert(at, alphabet.charAt(rnd.nextInt(alphabet.length())));
                default -> sb.setCharAt(at, alphabet.charAt(rnd.nextInt(alphabet.length())));
            }
        }
        return sb.toString();
    }

    private static TensorDict randomTrajectory(int b, int l, Random rnd, boolean withOriginal) {
        int[] ids = new int[b * l];
        boolean[] attention = new boolean[b * l];
        int[] loss = new int[b * l];
        int[] versions = new int[b * l];
        float[] rewards = new float[b];
        float[] original = new float[b];
        for (int i = 0; i < b; i++) {
            int seqlen = rnd.nextInt(l + 1);
            for (int k = 0; k < l; k++) {
                int at = i * l + k;
                ids[at] = rnd.nextInt(ByteLevelTokenizer.VOCAB_SIZE);
                attention[at] = k < seqlen;
                loss[at] = k < seqlen && rnd.nextInt(3) > 0 ? 1 : 0;
                versions[at] = loss[at] == 1 ? rnd.nextInt(3) : (k < seqlen ? -1 : 0);
            }
            rewards[i] = (float) rnd.nextGaussian();
            original[i] = rnd.nextInt(5) / 4f;
        }
        TensorDict.Builder d = TensorDict.builder()
                .put("input_ids", Int32Tensor.of(ids, b, l))
                .put("attention_mask", BoolTensor.of(attention, b, l))
                .put("loss_mask", Int32Tensor.of(loss, b, l))
                .put("versions", Int32Tensor.of(versions, b, l))
                .put("rewards", Float32Tensor.of(rewards, b));
        if (withOriginal) {
            d.put("original_rewards", Float32Tensor.of(original, b));
        }
        return d.build();
    }

    @Test
    void randomTrajectoriesProduceMultiTurnRowsToo() {
        // Guards the round-trip property's coverage: the generator must reach segments.
        Random rnd = new Random(1);
        List<DumpRecord> all = new ArrayList<>();
        for (int k = 0; k < 200; k++) {
            all.addAll(TrajectoryDumper.records(1, randomTrajectory(2, 10, rnd, true), 0, ByteLevelTokenizer.INSTANCE));
        }
        assertThat(all).anyMatch(DumpRecord::isMultiTurn).anyMatch(r -> !r.isMultiTurn());
    }
}
