package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.InvalidConfigException;
import org.rollout.api.TensorDict;
import org.rollout.core.DumpRecord.Role;
import org.rollout.core.DumpRecord.Segment;
import org.rollout.core.VersionRle.Run;

class TrajectoryDumperTest {
    private static final ByteLevelTokenizer TOK = ByteLevelTokenizer.INSTANCE;
    private static final int IM_END = ByteLevelTokenizer.IM_END;

    @TempDir
    Path root;

    private TrajectoryDumper dumper() {
        return new TrajectoryDumper(root, "exp", "trial", TOK);
    }

    /** One row: "hi" then generated "ok<|im_end|>", versions 3 3 4, reward 0.1f. */
    private static TensorDict singleTurn() {
        return TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'h', 'i', 'o', 'k', IM_END}))
                .put("attention_mask", BoolTensor.matrix(new boolean[] {true, true, true, true, true}))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 0, 1, 1, 1}))
                .put("logprobs", Float32Tensor.matrix(new float[] {0, 0, -0.5f, -0.25f, -0.125f}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, -1, 3, 3, 4}))
                .put("rewards", Float32Tensor.vector(0.1f))
                .build();
    }

    /** semantics §7's multi-turn mask 0 0 1 1 0 0 1 1: "ab" "cd" "ef" "gh". */
    private static TensorDict multiTurn() {
        return TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}))
                .put("attention_mask", BoolTensor.filled(true, 1, 8))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 0, 1, 1, 0, 0, 1, 1}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, -1, 5, 5, -1, -1, 5, 6}))
                .put("rewards", Float32Tensor.vector(1.0f))
                .build();
    }

    private static String onlyLine(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        assertThat(lines).hasSize(1);
        return lines.get(0);
    }

    // ---- failing writes ----

    @Test
    void aWriteThatFailsIsCountedNamedAndLeavesNoFile() throws IOException {
        TrajectoryDumper d = dumper();
        assertThat(d.dump(1, false, singleTurn(), 0)).isInstanceOf(DumpResult.Written.class);
        // The version directory the next write needs is a file: every write under it fails.
        Files.writeString(root.resolve("exp/trial/rollout/5"), "not a directory");
        TensorDict laterVersion = singleTurn().toBuilder()
                .put(TensorDict.VERSIONS, Int32Tensor.matrix(new int[] {-1, -1, 5, 5, 5}))
                .build();
        DumpResult failed = d.dump(2, false, laterVersion, 0);
        assertThat(failed).isInstanceOf(DumpResult.Skipped.class);
        assertThat(((DumpResult.Skipped) failed).reason()).startsWith("dump failed: java.nio.file.");
        assertThat(d.filesWritten()).isEqualTo(1);
        assertThat(d.writeFailures()).isEqualTo(1);
        assertThat(d.lastWriteFailure()).hasValueSatisfying(v -> assertThat(v).contains("rollout/5/2.jsonl"));
        // The other version's file is untouched.
        assertThat(d.dump(3, false, singleTurn(), 0)).isInstanceOf(DumpResult.Written.class);
        assertThat(d.writeFailures()).isEqualTo(1);
    }

    // ---- format ----

    @Test
    void writesASingleTurnRowAsAReaLDoesWithFloat32RewardAsShortestDecimal() throws IOException {
        DumpResult r = dumper().dump(7, false, singleTurn(), 99);
        Path file = root.resolve("exp/trial/rollout/4/7.jsonl");
        assertThat(r).isEqualTo(new DumpResult.Written(file, 1));
        assertThat(onlyLine(file))
                .isEqualTo("{\"task_id\": 7, \"sample_idx\": 0, \"seqlen\": 5, \"prompt_len\": 2, \"head_version\": 3,"
                        + " \"tail_version\": 4, \"version_rle\": [[3, 2], [4, 1]], \"reward\": 0.1, \"prompt\": \"hi\","
                        + " \"completion\": \"ok<|im_end|>\"}");
    }

    @Test
    void writesSegmentsForTheSection7MultiTurnMask() throws IOException {
        dumper().dump(3, false, multiTurn(), 0);
        String line = onlyLine(root.resolve("exp/trial/rollout/6/3.jsonl"));
        assertThat(line)
                .isEqualTo("{\"task_id\": 3, \"sample_idx\": 0, \"seqlen\": 8, \"prompt_len\": 2, \"head_version\": 5,"
                        + " \"tail_version\": 6, \"version_rle\": [[5, 3], [6, 1]], \"reward\": 1.0, \"prompt\": \"ab\","
                        + " \"completion\": \"cdefgh\", \"segments\": [{\"role\": \"prompt\", \"len\": 2, \"text\": \"ab\"},"
                        + " {\"role\": \"gen\", \"len\": 2, \"text\": \"cd\"}, {\"role\": \"context\", \"len\": 2, \"text\":"
                        + " \"ef\"}, {\"role\": \"gen\", \"len\": 2, \"text\": \"gh\"}]}");
    }

    @Test
    void writesOriginalRewardLastAfterSegments() throws IOException {
        TensorDict d = multiTurn().with("original_rewards", Float32Tensor.vector(0.5f));
        dumper().dump(3, false, d, 0);
        String line = onlyLine(root.resolve("exp/trial/rollout/6/3.jsonl"));
        assertThat(line).endsWith("\"text\": \"gh\"}], \"original_reward\": 0.5}");
    }

    @Test
    void rowThatStartsGeneratedCallsItsFirstNonGeneratedRunPrompt() {
        TensorDict d = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'a', 'b', 'c', 'd'}))
                .put("attention_mask", BoolTensor.filled(true, 1, 4))
                .put("loss_mask", Int32Tensor.matrix(new int[] {1, 0, 0, 1}))
                .put("versions", Int32Tensor.matrix(new int[] {2, -1, -1, 2}))
                .put("rewards", Float32Tensor.vector(0f))
                .build();
        DumpRecord rec = TrajectoryDumper.records(1, d, 0, TOK).get(0);
        assertThat(rec.promptLen()).isZero();
        assertThat(rec.prompt()).isEmpty();
        assertThat(rec.segments()).extracting(Segment::role).containsExactly(Role.GEN, Role.PROMPT, Role.GEN);
        assertThat(rec.versionRle()).containsExactly(new Run(2, 2));
    }

    @Test
    void evaluationTasksGoToEvalRollout() {
        DumpResult r = dumper().dump(7, true, singleTurn(), 0);
        assertThat(r).isEqualTo(new DumpResult.Written(root.resolve("exp/trial/eval-rollout/4/7.jsonl"), 1));
    }

    @Test
    void writesNonAsciiTextAsUtf8() throws IOException {
        int[] e = TOK.encode("é");
        TensorDict d = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'q', e[0], e[1]}))
                .put("attention_mask", BoolTensor.filled(true, 1, 3))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 1, 1}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, 0, 0}))
                .put("rewards", Float32Tensor.vector(1e-5f))
                .build();
        dumper().dump(1, false, d, 0);
        String line = onlyLine(root.resolve("exp/trial/rollout/0/1.jsonl"));
        assertThat(line).contains("\"completion\": \"é\"").contains("\"reward\": 1e-05");
    }

    @Test
    void writesNonFiniteRewardsAsPythonDoes() throws IOException {
        TensorDict d = singleTurn().with("rewards", Float32Tensor.vector(Float.NaN));
        dumper().dump(1, false, d, 0);
        Path file = root.resolve("exp/trial/rollout/4/1.jsonl");
        assertThat(onlyLine(file)).contains("\"reward\": NaN");
        assertThat(TrajectoryDumpReader.read(file).get(0).reward()).isNaN();
    }

    // ---- rows ----

    @Test
    void usesTheAttentionSumAsSeqlenAndIgnoresRightPadding() {
        TensorDict d = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'p', 'x', 'y', 0, 0}))
                .put("attention_mask", BoolTensor.matrix(new boolean[] {true, true, true, false, false}))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 1, 1, 0, 0}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, 2, 2, 0, 0}))
                .put("rewards", Float32Tensor.vector(1f))
                .build();
        DumpRecord rec = TrajectoryDumper.records(5, d, 0, TOK).get(0);
        assertThat(rec.seqlen()).isEqualTo(3);
        assertThat(rec.completion()).isEqualTo("xy");
        assertThat(rec.versionRle()).containsExactly(new Run(2, 2));
    }

    @Test
    void skipsEmptyRowsAndRowsEndingOnANonGeneratedTokenButKeepsRowIndices() {
        TensorDict d = TensorDict.builder()
                .put(
                        "input_ids",
                        Int32Tensor.matrix(
                                new int[] {'a', 'b', 'c'}, new int[] {0, 0, 0}, new int[] {'a', 'b', 'c'}, new int[] {
                                    'd', 'e', 0
                                }))
                .put(
                        "attention_mask",
                        Int32Tensor.matrix(
                                new int[] {1, 1, 1}, new int[] {0, 0, 0}, new int[] {1, 1, 1}, new int[] {1, 1, 0}))
                .put(
                        "loss_mask",
                        Int32Tensor.matrix(
                                new int[] {0, 1, 0}, new int[] {0, 0, 0}, new int[] {0, 1, 1}, new int[] {0, 1, 0}))
                .put(
                        "versions",
                        Int32Tensor.matrix(
                                new int[] {-1, 1, -1}, new int[] {0, 0, 0}, new int[] {-1, 1, 1}, new int[] {-1, 2, 0}))
                .put("rewards", Float32Tensor.vector(0f, 0f, 1f, 0.5f))
                .build();
        List<DumpRecord> records = TrajectoryDumper.records(9, d, 0, TOK);
        assertThat(records).extracting(DumpRecord::sampleIdx).containsExactly(2, 3);
        assertThat(records.get(1).completion()).isEqualTo("e");
        assertThat(records.get(1).reward()).isEqualTo(0.5);
    }

    @Test
    void readsInt64MasksAndVersionsAndAnIntegerAttentionMaskLikeTheDefaultDtypes() {
        TensorDict wide = TensorDict.builder()
                .put("input_ids", Int64Tensor.matrix(new long[] {'h', 'i', 'o', 'k', IM_END}))
                .put("attention_mask", Int64Tensor.matrix(new long[] {1, 1, 1, 1, 1}))
                .put("loss_mask", Int64Tensor.matrix(new long[] {0, 0, 1, 1, 1}))
                .put("versions", Int64Tensor.matrix(new long[] {-1, -1, 3, 3, 4}))
                .put("rewards", Float32Tensor.vector(0.1f))
                .build();
        assertThat(TrajectoryDumper.records(7, wide, 0, TOK))
                .isEqualTo(TrajectoryDumper.records(7, singleTurn(), 0, TOK));
    }

    @Test
    void acceptsRewardsShapedBByOne() {
        TensorDict d = singleTurn().with("rewards", Float32Tensor.matrix(new float[] {0.25f}));
        assertThat(TrajectoryDumper.records(7, d, 0, TOK).get(0).reward()).isEqualTo(0.25);
    }

    @Test
    void withoutVersionsUsesTheDefaultVersionForEverything() throws IOException {
        TensorDict d = singleTurn().without("versions");
        DumpResult r = dumper().dump(7, false, d, 12);
        Path file = root.resolve("exp/trial/rollout/12/7.jsonl");
        assertThat(r).isEqualTo(new DumpResult.Written(file, 1));
        DumpRecord rec = TrajectoryDumpReader.read(file).get(0);
        assertThat(rec.headVersion()).isEqualTo(12);
        assertThat(rec.tailVersion()).isEqualTo(12);
        assertThat(rec.versionRle()).containsExactly(new Run(12, 3));
    }

    // ---- directory version ----

    @Test
    void directoryVersionIsTheMaximumOverGeneratedTokensOfAllRows() {
        // Row 1 is not dumped (it ends on context) but its generated version 8 still names the directory;
        // its context position's 9 and the prompt/padding values never count.
        TensorDict d = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'a', 'b', 'c'}, new int[] {'a', 'b', 'c'}))
                .put("attention_mask", BoolTensor.filled(true, 2, 3))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 1, 1}, new int[] {0, 1, 0}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, 4, 5}, new int[] {-1, 8, 9}))
                .put("rewards", Float32Tensor.vector(1f, 1f))
                .build();
        assertThat(TrajectoryDumper.directoryVersion(d, 0)).isEqualTo(8);
        assertThat(dumper().dump(1, false, d, 0))
                .isEqualTo(new DumpResult.Written(root.resolve("exp/trial/rollout/8/1.jsonl"), 1));
    }

    @Test
    void directoryVersionIgnoresPaddingBeyondTheValidLength() {
        TensorDict d = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'a', 'b', 0}))
                .put("attention_mask", BoolTensor.matrix(new boolean[] {true, true, false}))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 1, 1}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, 2, 7}))
                .put("rewards", Float32Tensor.vector(1f))
                .build();
        assertThat(TrajectoryDumper.directoryVersion(d, 0)).isEqualTo(2);
    }

    @Test
    void directoryVersionIsTheDefaultWithoutGeneratedTokensOrWithoutVersions() {
        TensorDict noGen = singleTurn().with("loss_mask", Int32Tensor.matrix(new int[] {0, 0, 0, 0, 0}));
        assertThat(TrajectoryDumper.directoryVersion(noGen, 11)).isEqualTo(11);
        assertThat(TrajectoryDumper.directoryVersion(singleTurn().without("versions"), 12))
                .isEqualTo(12);
    }

    // ---- skip reasons ----

    @Test
    void skipsANullTrajectory() {
        assertThat(dumper().dump(1, false, null, 0)).isEqualTo(new DumpResult.Skipped("trajectory is null"));
    }

    @Test
    void skipsWhenTheDumpDirIsNotConfigured() {
        DumpResult.Skipped empty = new DumpResult.Skipped("dump dir is empty");
        assertThat(new TrajectoryDumper(null, "exp", "trial", TOK).dump(1, false, singleTurn(), 0))
                .isEqualTo(empty);
        assertThat(new TrajectoryDumper(root, " ", "trial", TOK).dump(1, false, singleTurn(), 0))
                .isEqualTo(empty);
        assertThat(new TrajectoryDumper(root, "exp", null, TOK).dump(1, false, singleTurn(), 0))
                .isEqualTo(empty);
        assertThat(new TrajectoryDumper(Path.of(""), "exp", "trial", TOK).dump(1, false, singleTurn(), 0))
                .isEqualTo(empty);
    }

    @Test
    void skipsWithoutATokenizer() {
        assertThat(new TrajectoryDumper(root, "exp", "trial", null).dump(1, false, singleTurn(), 0))
                .isEqualTo(new DumpResult.Skipped("tokenizer not configured"));
    }

    @Test
    void skipsNamingAMissingKey() {
        assertThat(dumper().dump(1, false, singleTurn().without("rewards"), 0))
                .isEqualTo(new DumpResult.Skipped("missing key 'rewards'"));
    }

    @Test
    void skipsNamingEveryMissingKey() {
        TensorDict d = singleTurn().without("input_ids").without("attention_mask");
        assertThat(dumper().dump(1, false, d, 0))
                .isEqualTo(new DumpResult.Skipped("missing keys 'input_ids', 'attention_mask'"));
    }

    @Test
    void skipsWhenNoRowHasAGeneratedLastToken() {
        TensorDict d = singleTurn().with("loss_mask", Int32Tensor.matrix(new int[] {0, 0, 1, 1, 0}));
        assertThat(dumper().dump(1, false, d, 0))
                .isEqualTo(new DumpResult.Skipped(
                        "no row to dump: every row is empty or ends on a non-generated token (1 rows)"));
        assertThat(root.resolve("exp")).doesNotExist();
    }

    @Test
    void skipsATensorWhoseShapeDiffersFromInputIds() {
        TensorDict d = singleTurn().with("loss_mask", Int32Tensor.matrix(new int[] {0, 1, 1, 1}));
        assertThat(dumper().dump(1, false, d, 0))
                .isEqualTo(new DumpResult.Skipped("dump failed: tensor 'loss_mask' is int32[1, 4], but input_ids is"
                        + " int32[1, 5]; they must have the same shape"));
    }

    @Test
    void skipsRewardsOfTheWrongLength() {
        TensorDict d = singleTurn().with("rewards", Float32Tensor.vector(1f, 2f));
        assertThat(dumper().dump(1, false, d, 0))
                .isEqualTo(new DumpResult.Skipped(
                        "dump failed: tensor 'rewards' is float32[2], expected [1] or [1, 1] for 1 rows"));
    }

    @Test
    void skipsAnAttentionMaskThatIsNotZerosAndOnes() {
        TensorDict d = singleTurn().with("attention_mask", Int32Tensor.matrix(new int[] {2, 2, 2, 2, 2}));
        assertThat(dumper().dump(1, false, d, 0))
                .isEqualTo(new DumpResult.Skipped(
                        "dump failed: attention_mask row 0 sums to 10, outside [0, 5]; it must hold 0s and 1s"));
    }

    @Test
    void skipsTokenIdsTheTokenizerRejects() {
        TensorDict d = singleTurn().with("input_ids", Int32Tensor.matrix(new int[] {'h', 'i', 999, 'k', IM_END}));
        DumpResult r = dumper().dump(1, false, d, 0);
        assertThat(r).isInstanceOf(DumpResult.Skipped.class);
        assertThat(((DumpResult.Skipped) r).reason()).startsWith("dump failed: token id 999");
    }

    @Test
    void skipsAVersionThatDoesNotFitAnInt() {
        TensorDict d = singleTurn().with("versions", Int64Tensor.matrix(new long[] {-1, -1, 3, 3, 1L << 40}));
        assertThat(dumper().dump(1, false, d, 0))
                .isEqualTo(new DumpResult.Skipped("dump failed: versions[0, 4] = 1099511627776 does not fit an int"));
    }

    @Test
    void skipsAWriteFailureNamingTheException() throws IOException {
        Path notADir = Files.writeString(root.resolve("file"), "x");
        DumpResult r = new TrajectoryDumper(notADir, "exp", "trial", TOK).dump(1, false, singleTurn(), 0);
        assertThat(r).isInstanceOf(DumpResult.Skipped.class);
        assertThat(((DumpResult.Skipped) r).reason()).startsWith("dump failed: java.nio.file.");
    }

    @Test
    void rejectsAnExperimentNameThatIsNotOneDirectory() {
        assertThatThrownBy(() -> new TrajectoryDumper(root, "../escape", "trial", TOK))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'experiment_name': \"../escape\" (allowed: a single directory name"
                        + " (no '/', '\\', '.' or '..'))");
        assertThatThrownBy(() -> new TrajectoryDumper(root, "exp", "..", TOK))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'trial_name'");
    }

    @Test
    void recordsRequiresTheDumpKeysNamingTheMissingOne() {
        assertThatThrownBy(() -> TrajectoryDumper.records(1, singleTurn().without("loss_mask"), 0, TOK))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("missing key 'loss_mask'");
    }

    // ---- files ----

    @Test
    void appendsToTheFileOfARedispatchedTask() throws IOException {
        dumper().dump(7, false, singleTurn(), 0);
        dumper().dump(7, false, singleTurn(), 0);
        List<DumpRecord> records = TrajectoryDumpReader.read(root.resolve("exp/trial/rollout/4/7.jsonl"));
        assertThat(records).hasSize(2).allSatisfy(r -> assertThat(r.taskId()).isEqualTo(7));
    }

    @Test
    void writesEveryRowOfAGroupToOneFileInRowOrder() throws IOException {
        TensorDict d = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {'a', 'b'}, new int[] {'c', 'd'}, new int[] {'e', 'f'}))
                .put("attention_mask", BoolTensor.filled(true, 3, 2))
                .put("loss_mask", Int32Tensor.matrix(new int[] {0, 1}, new int[] {0, 1}, new int[] {0, 1}))
                .put("versions", Int32Tensor.matrix(new int[] {-1, 1}, new int[] {-1, 2}, new int[] {-1, 1}))
                .put("rewards", Float32Tensor.vector(0f, 1f, 0.5f))
                .build();
        DumpResult r = dumper().dump(2, false, d, 0);
        Path file = root.resolve("exp/trial/rollout/2/2.jsonl");
        assertThat(r).isEqualTo(new DumpResult.Written(file, 3));
        assertThat(TrajectoryDumpReader.read(file))
                .extracting(DumpRecord::sampleIdx, DumpRecord::tailVersion, DumpRecord::reward)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(0, 1, 0.0),
                        org.assertj.core.groups.Tuple.tuple(1, 2, 1.0),
                        org.assertj.core.groups.Tuple.tuple(2, 1, 0.5));
    }

    @Test
    void concurrentDumpsToOneFileNeverInterleaveLines() throws Exception {
        // Long completions make a torn or interleaved write likely if the lock were missing.
        int width = 20_000;
        int[] ids = new int[width];
        int[] mask = new int[width];
        int[] versions = new int[width];
        for (int k = 0; k < width; k++) {
            ids[k] = 'a' + k % 26;
            mask[k] = k < 10 ? 0 : 1;
            versions[k] = k < 10 ? -1 : 3;
        }
        TensorDict d = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(ids, ids))
                .put("attention_mask", BoolTensor.filled(true, 2, width))
                .put("loss_mask", Int32Tensor.matrix(mask, mask))
                .put("versions", Int32Tensor.matrix(versions, versions))
                .put("rewards", Float32Tensor.vector(1f, 0f))
                .build();
        int threads = 8;
        int dumpsPerThread = 10;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<List<DumpResult>>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                TrajectoryDumper own = dumper(); // separate instances share the JVM-wide path lock
                futures.add(pool.submit(() -> {
                    start.await(10, TimeUnit.SECONDS);
                    List<DumpResult> results = new ArrayList<>();
                    for (int k = 0; k < dumpsPerThread; k++) {
                        results.add(own.dump(42, false, d, 0));
                    }
                    return results;
                }));
            }
            start.countDown();
            for (Future<List<DumpResult>> f : futures) {
                assertThat(f.get(60, TimeUnit.SECONDS))
                        .allSatisfy(r -> assertThat(r).isInstanceOf(DumpResult.Written.class));
            }
        } finally {
            pool.shutdownNow();
        }
        List<DumpRecord> records = TrajectoryDumpReader.read(root.resolve("exp/trial/rollout/3/42.jsonl"));
        assertThat(records).hasSize(threads * dumpsPerThread * 2);
        assertThat(records).allSatisfy(r -> assertThat(r.seqlen()).isEqualTo(width));
        // Each dump's two rows stay adjacent: one write per call.
        for (int k = 0; k < records.size(); k += 2) {
            assertThat(records.get(k).sampleIdx()).isZero();
            assertThat(records.get(k + 1).sampleIdx()).isEqualTo(1);
        }
    }
}
