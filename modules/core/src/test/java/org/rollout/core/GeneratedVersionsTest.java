package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.rollout.api.BoolTensor;
import org.rollout.api.Int32Tensor;
import org.rollout.api.TensorDict;

class GeneratedVersionsTest {

    private static TensorDict rows(int[][] mask, int[][] versions, boolean[][] attention) {
        TensorDict.Builder b = TensorDict.builder()
                .put(TensorDict.LOSS_MASK, Int32Tensor.matrix(mask))
                .put(TensorDict.VERSIONS, Int32Tensor.matrix(versions));
        if (attention != null) {
            b.put(TensorDict.ATTENTION_MASK, BoolTensor.matrix(attention));
        }
        return b.build();
    }

    @Test
    void spansTheGeneratedTokensOfAllRows() {
        TensorDict d = rows(new int[][] {{0, 1, 1}, {0, 0, 1}}, new int[][] {{-1, 6, 5}, {-1, -1, 7}}, null);
        assertThat(GeneratedVersions.of(d)).contains(new GeneratedVersions(5, 7));
    }

    @Test
    void ignoresPositionsOutsideTheAttentionMask() {
        TensorDict d = rows(new int[][] {{0, 1, 1}}, new int[][] {{-1, 4, 9}}, new boolean[][] {{true, true, false}});
        assertThat(GeneratedVersions.of(d)).contains(new GeneratedVersions(4, 4));
    }

    @Test
    void isEmptyWithoutGeneratedTokens() {
        TensorDict d = rows(new int[][] {{0, 0}}, new int[][] {{-1, -1}}, null);
        assertThat(GeneratedVersions.of(d)).isEmpty();
        assertThat(GeneratedVersions.range(d, 3)).containsExactly(3, 3);
    }

    @Test
    void isEmptyWithoutVersions() {
        TensorDict d = TensorDict.builder()
                .put(TensorDict.LOSS_MASK, Int32Tensor.matrix(new int[][] {{1}}))
                .build();
        assertThat(GeneratedVersions.of(d)).isEmpty();
    }

    @Test
    void readsArraysUpToTheGivenLength() {
        assertThat(GeneratedVersions.of(new int[] {-1, 2, 8}, new int[] {0, 1, 1}, 2))
                .contains(new GeneratedVersions(2, 2));
    }

    @Test
    void aUnionCoversBothRanges() {
        assertThat(new GeneratedVersions(3, 4).union(new GeneratedVersions(1, 2)))
                .isEqualTo(new GeneratedVersions(1, 4));
    }
}
