package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.Float32Tensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.Int64Tensor;
import org.rollout.api.TensorDict;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class TensorDictsTest {

    private static TensorDict row(int[] ids, int promptLen, int version, float reward) {
        return TrajectoryFixtures.row(ids, promptLen, version, reward);
    }

    @Test
    void padsTwoRowsOfLengthsThreeAndFiveWithEachKeysPadValue() {
        TensorDict a = row(new int[] {11, 12, 13}, 2, 4, 1.0f);
        TensorDict b = row(new int[] {21, 22, 23, 24, 25}, 2, 5, 0.0f);

        TensorDict c = TensorDicts.concatPadded(List.of(a, b));

        assertThat(c.int32("input_ids"))
                .isEqualTo(Int32Tensor.matrix(new int[] {11, 12, 13, 0, 0}, new int[] {21, 22, 23, 24, 25}));
        assertThat(c.int32("versions"))
                .isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, 4, -1, -1}, new int[] {-1, -1, 5, 5, 5}));
        assertThat(c.int32("loss_mask"))
                .isEqualTo(Int32Tensor.matrix(new int[] {0, 0, 1, 0, 0}, new int[] {0, 0, 1, 1, 1}));
        assertThat(c.int32("turn_ids"))
                .isEqualTo(Int32Tensor.matrix(new int[] {-1, -1, 0, 0, 0}, new int[] {-1, -1, 0, 0, 0}));
        assertThat(c.bool("attention_mask"))
                .isEqualTo(BoolTensor.matrix(
                        new boolean[] {true, true, true, false, false}, new boolean[] {true, true, true, true, true}));
        assertThat(c.float32("logprobs").row(0).toArray()).containsExactly(0f, 0f, -0.5f, 0f, 0f);
        assertThat(c.float32("rewards")).isEqualTo(Float32Tensor.vector(1.0f, 0.0f));
    }

    @Test
    void padsVersionsWithMinusOneWhateverTheirIntegerDtype() {
        TensorDict a = TensorDict.builder()
                .put("versions", Int64Tensor.matrix(new long[] {7}))
                .build();
        TensorDict b = TensorDict.builder()
                .put("versions", Int64Tensor.matrix(new long[] {8, 8, 8}))
                .build();

        assertThat(TensorDicts.concatPadded(List.of(a, b)).int64("versions"))
                .isEqualTo(Int64Tensor.matrix(new long[] {7, -1, -1}, new long[] {8, 8, 8}));
    }

    @Test
    void padsEveryOtherKeyWithZeroIncludingTurnIds() {
        TensorDict a = TensorDict.builder()
                .put("turn_ids", Int32Tensor.matrix(new int[] {3}))
                .put("values", Float32Tensor.matrix(new float[] {0.25f}))
                .build();
        TensorDict b = TensorDict.builder()
                .put("turn_ids", Int32Tensor.matrix(new int[] {4, 4}))
                .put("values", Float32Tensor.matrix(new float[] {1f, 2f}))
                .build();

        TensorDict c = TensorDicts.concatPadded(List.of(a, b));

        assertThat(c.int32("turn_ids")).isEqualTo(Int32Tensor.matrix(new int[] {3, 0}, new int[] {4, 4}));
        assertThat(c.float32("values")).isEqualTo(Float32Tensor.matrix(new float[] {0.25f, 0f}, new float[] {1f, 2f}));
    }

    @Test
    void stacksRankZeroTensorsIntoAVectorOfLengthN() {
        List<TensorDict> dicts = List.of(
                TensorDict.builder()
                        .put("rollout_reward", Float32Tensor.scalar(1f))
                        .build(),
                TensorDict.builder()
                        .put("rollout_reward", Float32Tensor.scalar(2f))
                        .build(),
                TensorDict.builder()
                        .put("rollout_reward", Float32Tensor.scalar(3f))
                        .build());

        assertThat(TensorDicts.concatPadded(dicts).float32("rollout_reward"))
                .isEqualTo(Float32Tensor.vector(1f, 2f, 3f));
    }

    @Test
    void concatenatesRankOneTensorsOfMultiRowDictsDirectly() {
        TensorDict a = TensorDict.builder()
                .put("rewards", Float32Tensor.vector(1f, 2f))
                .put("is_truncated", BoolTensor.vector(true, false))
                .build();
        TensorDict b = TensorDict.builder()
                .put("rewards", Float32Tensor.vector(3f))
                .put("is_truncated", BoolTensor.vector(true))
                .build();

        TensorDict c = TensorDicts.concatPadded(List.of(a, b));

        assertThat(c.float32("rewards")).isEqualTo(Float32Tensor.vector(1f, 2f, 3f));
        assertThat(c.bool("is_truncated")).isEqualTo(BoolTensor.vector(true, false, true));
    }

    @Test
    void copiesMultiRowBlocksWhenAllWidthsAgree() {
        TensorDict a = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {1, 2}, new int[] {3, 4}))
                .build();
        TensorDict b = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {5, 6}))
                .build();

        assertThat(TensorDicts.concatPadded(List.of(a, b)).int32("input_ids"))
                .isEqualTo(Int32Tensor.matrix(new int[] {1, 2}, new int[] {3, 4}, new int[] {5, 6}));
    }

    @Test
    void keepsTheFirstDictsKeyOrder() {
        TensorDict a = TensorDict.builder()
                .put("rewards", Float32Tensor.vector(1f))
                .put("input_ids", Int32Tensor.matrix(new int[] {1}))
                .build();
        TensorDict b = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {2}))
                .put("rewards", Float32Tensor.vector(2f))
                .build();

        assertThat(TensorDicts.concatPadded(List.of(a, b)).keys()).containsExactly("rewards", "input_ids");
    }

    @Test
    void returnsASingleDictUnchanged() {
        TensorDict a = row(new int[] {1, 2, 3}, 1, 0, 1f);

        assertThat(TensorDicts.concatPadded(List.of(a))).isSameAs(a);
    }

    @Test
    void returnsTheEmptyDictForAnEmptyList() {
        assertThat(TensorDicts.concatPadded(List.of())).isSameAs(TensorDict.empty());
    }

    @Test
    void rejectsDifferentKeySetsNamingTheMissingAndExtraKeysAndTheDictIndex() {
        TensorDict a = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {1}))
                .put("turn_ids", Int32Tensor.matrix(new int[] {0}))
                .build();
        TensorDict b = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {1}))
                .put("turn_ids", Int32Tensor.matrix(new int[] {0}))
                .build();
        TensorDict c = TensorDict.builder()
                .put("input_ids", Int32Tensor.matrix(new int[] {1}))
                .put("values", Float32Tensor.matrix(new float[] {0f}))
                .build();

        assertThatThrownBy(() -> TensorDicts.concatPadded(List.of(a, b, c)))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("dict 2 has different tensor keys from dict 0: missing [turn_ids], extra [values]"
                        + " (all dicts must have identical key sets)");
    }

    @Test
    void rejectsADtypeMismatchNamingTheKeyTheDictIndexAndBothDtypes() {
        TensorDict a = TensorDict.builder()
                .put("versions", Int32Tensor.matrix(new int[] {1, 2, 3}))
                .build();
        TensorDict b = TensorDict.builder()
                .put("versions", Int64Tensor.matrix(new long[] {1, 2, 3, 4, 5}))
                .build();

        assertThatThrownBy(() -> TensorDicts.concatPadded(List.of(a, b)))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("tensor 'versions': dict 1 has int64[1, 5] but dict 0 has int32[1, 3]"
                        + " (dtype and rank must agree to concatenate)");
    }

    @Test
    void rejectsARankMismatchNamingTheKeyTheDictIndexAndBothShapes() {
        TensorDict a =
                TensorDict.builder().put("rewards", Float32Tensor.vector(1f)).build();
        TensorDict b =
                TensorDict.builder().put("rewards", Float32Tensor.scalar(1f)).build();

        assertThatThrownBy(() -> TensorDicts.concatPadded(List.of(a, b)))
                .hasMessage("tensor 'rewards': dict 1 has float32[] but dict 0 has float32[1]"
                        + " (dtype and rank must agree to concatenate)");
    }

    @Test
    void validLengthsAreTheRowSumsOfTheAttentionMask() {
        TensorDict a = row(new int[] {1, 2, 3}, 1, 0, 1f);
        TensorDict b = row(new int[] {1, 2, 3, 4, 5}, 1, 0, 1f);

        assertThat(TensorDicts.validLengths(TensorDicts.concatPadded(List.of(a, b))))
                .containsExactly(3, 5);
    }

    @Test
    void validLengthsAcceptAnIntegerAttentionMask() {
        TensorDict d = TensorDict.builder()
                .put("attention_mask", Int32Tensor.matrix(new int[] {1, 1, 0}, new int[] {1, 0, 0}))
                .build();

        assertThat(TensorDicts.validLengths(d)).containsExactly(2, 1);
    }

    @Test
    void validLengthsNeedARankTwoAttentionMask() {
        TensorDict d = TensorDict.builder()
                .put("attention_mask", BoolTensor.vector(true))
                .build();

        assertThatThrownBy(() -> TensorDicts.validLengths(d))
                .hasMessage("attention_mask must be rank 2 [B, L], got bool[1]");
        assertThatThrownBy(() -> TensorDicts.validLengths(TensorDict.empty()))
                .hasMessageContaining("missing tensor key 'attention_mask'");
    }

    // ---- properties ------------------------------------------------------------------------

    /**
     * A list of dicts: one list of row lengths per dict, and the seed of their random content (see
     * {@link #randomDicts}).
     */
    private record DictsShape(List<List<Integer>> rowLengths, long seed) {
        List<TensorDict> build() {
            return randomDicts(rowLengths, seed);
        }
    }

    /** 1–6 dicts, each with 1–3 rows of random lengths 0–12 and random content. */
    private static final Gen<DictsShape> DICTS =
            Gen.zip(Gen.ints(0, 12).list(1, 3).list(1, 6), Gen.longs(), DictsShape::new);

    private static final int TRIALS = 1_000;

    private static List<TensorDict> randomDicts(List<List<Integer>> shapes, long seed) {
        Random random = new Random(seed);
        List<TensorDict> out = new ArrayList<>();
        for (List<Integer> lengths : shapes) {
            int rows = lengths.size();
            int width = lengths.stream().mapToInt(Integer::intValue).max().orElse(0);
            Int32Tensor.Builder ids = Int32Tensor.builder(rows, width);
            Int32Tensor.Builder versions = Int32Tensor.builder(rows, width);
            BoolTensor.Builder mask = BoolTensor.builder(rows, width);
            Float32Tensor.Builder logprobs = Float32Tensor.builder(rows, width);
            Float32Tensor.Builder rewards = Float32Tensor.builder(rows);
            for (int i = 0; i < rows; i++) {
                // Each dict is itself right-padded to its own widest row, as a workflow's would be.
                for (int j = 0; j < width; j++) {
                    boolean valid = j < lengths.get(i);
                    ids.set(i, j, valid ? 1 + random.nextInt(1000) : 0);
                    versions.set(i, j, valid ? random.nextInt(50) : -1);
                    mask.set(i, j, valid);
                    logprobs.set(i, j, valid ? -random.nextFloat() : 0f);
                }
                rewards.set(i, random.nextFloat());
            }
            out.add(TensorDict.builder()
                    .put("input_ids", ids.build())
                    .put("versions", versions.build())
                    .put("attention_mask", mask.build())
                    .put("logprobs", logprobs.build())
                    .put("rewards", rewards.build())
                    .put("rollout_reward", Float32Tensor.scalar(random.nextFloat()))
                    .build());
        }
        return out;
    }

    @Test
    void outputIsTotalRowsByMaxWidthAndEveryRowIsItsInputFollowedByPadding() {
        Property.forAll(
                "outputIsTotalRowsByMaxWidthAndEveryRowIsItsInputFollowedByPadding",
                TRIALS,
                DICTS,
                shape -> concatIsTotalRowsByMaxWidthWithPadding(shape.build()));
    }

    private static void concatIsTotalRowsByMaxWidthWithPadding(List<TensorDict> dicts) {
        TensorDict c = TensorDicts.concatPadded(dicts);

        int totalRows =
                dicts.stream().mapToInt(d -> d.tensor("input_ids").dim(0)).sum();
        int maxWidth =
                dicts.stream().mapToInt(d -> d.tensor("input_ids").dim(1)).max().orElseThrow();
        for (String key : List.of("input_ids", "versions", "attention_mask", "logprobs")) {
            assertThat(c.tensor(key).shape()).containsExactly(totalRows, maxWidth);
        }
        assertThat(c.tensor("rewards").shape()).containsExactly(totalRows);
        // A single dict comes back unchanged, so its scalar stays a scalar; several are stacked.
        if (dicts.size() == 1) {
            assertThat(c.tensor("rollout_reward").shape()).isEmpty();
        } else {
            assertThat(c.tensor("rollout_reward").shape()).containsExactly(dicts.size());
        }

        int out = 0;
        for (TensorDict d : dicts) {
            int width = d.tensor("input_ids").dim(1);
            for (int i = 0; i < d.tensor("input_ids").dim(0); i++, out++) {
                for (String key : List.of("input_ids", "versions", "attention_mask", "logprobs")) {
                    for (int j = 0; j < maxWidth; j++) {
                        double expected =
                                j < width ? d.tensor(key).getDouble(i * width + j) : (key.equals("versions") ? -1 : 0);
                        assertThat(c.tensor(key).getDouble(out * maxWidth + j))
                                .as("%s row %d col %d", key, out, j)
                                .isEqualTo(expected);
                    }
                }
                assertThat(c.float32("rewards").get(out))
                        .isEqualTo(d.float32("rewards").get(i));
            }
        }
    }

    @Test
    void keepsTheFirstDictsKeyOrderWhateverTheOthersOrder() {
        Property.forAll(
                "keepsTheFirstDictsKeyOrderWhateverTheOthersOrder",
                TRIALS,
                DICTS,
                shape -> keepsTheFirstDictsKeyOrder(shape.build()));
    }

    private static void keepsTheFirstDictsKeyOrder(List<TensorDict> dicts) {
        List<TensorDict> shuffled = new ArrayList<>(dicts);
        // Rebuild every dict but the first with its keys in reverse order.
        for (int k = 1; k < shuffled.size(); k++) {
            TensorDict.Builder b = TensorDict.builder();
            List<String> keys = new ArrayList<>(shuffled.get(k).keys());
            for (int i = keys.size() - 1; i >= 0; i--) {
                b.put(keys.get(i), shuffled.get(k).tensor(keys.get(i)));
            }
            shuffled.set(k, b.build());
        }

        assertThat(TensorDicts.concatPadded(shuffled).keys())
                .containsExactlyElementsOf(dicts.get(0).keys());
    }

    @Test
    void concatOfASingleDictIsTheIdentity() {
        Property.forAll("concatOfASingleDictIsTheIdentity", TRIALS, DICTS, shape -> {
            TensorDict first = shape.build().get(0);
            assertThat(TensorDicts.concatPadded(List.of(first))).isEqualTo(first);
        });
    }

    /** Three independent lists of dicts. */
    private record ThreeShapes(DictsShape a, DictsShape b, DictsShape c) {}

    @Test
    void concatIsAssociativeInRowContent() {
        Gen<ThreeShapes> triples = Gen.zip(DICTS, DICTS, DICTS, ThreeShapes::new);
        Property.forAll(
                "concatIsAssociativeInRowContent",
                TRIALS,
                triples,
                t -> concatIsAssociative(t.a().build(), t.b().build(), t.c().build()));
    }

    private static void concatIsAssociative(List<TensorDict> a, List<TensorDict> b, List<TensorDict> c) {
        TensorDict da = TensorDicts.concatPadded(a);
        TensorDict db = TensorDicts.concatPadded(b);
        TensorDict dc = TensorDicts.concatPadded(c);
        // rollout_reward has one value per input dict; only the row-content keys are compared.
        List<TensorDict> parts = List.of(da, db, dc).stream()
                .map(d -> d.without("rollout_reward"))
                .toList();

        TensorDict leftFirst = TensorDicts.concatPadded(
                List.of(TensorDicts.concatPadded(List.of(parts.get(0), parts.get(1))), parts.get(2)));
        TensorDict rightFirst = TensorDicts.concatPadded(
                List.of(parts.get(0), TensorDicts.concatPadded(List.of(parts.get(1), parts.get(2)))));
        TensorDict flat = TensorDicts.concatPadded(parts);

        int width = flat.tensor("input_ids").dim(1);
        assertThat(padTo(leftFirst, width)).isEqualTo(flat);
        assertThat(padTo(rightFirst, width)).isEqualTo(flat);
    }

    /** Pads every rank-2 tensor of {@code d} to {@code width} with its key's pad value. */
    private static TensorDict padTo(TensorDict d, int width) {
        TensorDict filler = TensorDict.builder()
                .put("input_ids", Int32Tensor.filled(0, 0, width))
                .put("versions", Int32Tensor.filled(-1, 0, width))
                .put("attention_mask", BoolTensor.filled(false, 0, width))
                .put("logprobs", Float32Tensor.filled(0f, 0, width))
                .put("rewards", Float32Tensor.filled(0f, 0))
                .build();
        return TensorDicts.concatPadded(List.of(d, filler));
    }
}
