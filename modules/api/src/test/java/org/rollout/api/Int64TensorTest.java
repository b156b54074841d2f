package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class Int64TensorTest {
    private static final Int64Tensor M = Int64Tensor.matrix(new long[] {1, 2, 3}, new long[] {4, 5, 1L << 40});

    @Test
    void factoriesCopyAndShape() {
        long[] values = {1, 2};
        Int64Tensor t = Int64Tensor.of(values);
        values[0] = 9;
        assertThat(t.toArray()).containsExactly(1, 2);
        assertThat(t.dtype()).isEqualTo(DType.INT64);
        assertThat(Int64Tensor.scalar(5).shape()).isEmpty();
        assertThat(Int64Tensor.filled(-1, 2).toArray()).containsExactly(-1, -1);
        assertThat(Tensor.zeros(DType.INT64, 2)).isEqualTo(Int64Tensor.vector(0, 0));
        assertThatThrownBy(() -> Int64Tensor.of(new long[] {1}, 2))
                .hasMessage("data length 1 does not match shape [2] (2 elements)");
        assertThatThrownBy(() -> Int64Tensor.matrix(new long[] {1}, new long[] {}))
                .hasMessage("matrix rows must have equal length: row 0 has 1, row 1 has 0");
    }

    @Test
    void readsKeepAllSixtyFourBits() {
        assertThat(M.get(1, 2)).isEqualTo(1L << 40);
        assertThat(M.at(5)).isEqualTo(1L << 40);
        assertThat(M.getLong(5)).isEqualTo(1L << 40);
        assertThat(M.row(1).stream().sum()).isEqualTo(9 + (1L << 40));
        assertThatThrownBy(() -> M.item()).hasMessage("item() needs exactly one element, shape is [2, 3]");
        assertThatThrownBy(() -> M.get(1)).hasMessage("get(i) needs a rank-1 tensor, this one has shape [2, 3]");
    }

    @Test
    void viewsShareAndCompareEqualToCopies() {
        Int64Tensor fresh = Int64Tensor.vector(4, 5, 1L << 40);
        assertThat(M.row(1)).isEqualTo(fresh).hasSameHashCodeAs(fresh);
        assertThat(M.slice(0, 1).reshape(3).toArray()).containsExactly(1, 2, 3);
        assertThat(M.row(0).row(2).item()).isEqualTo(3);
    }

    @Test
    void builderBuildsOnce() {
        Int64Tensor.Builder b = Int64Tensor.builder(2).set(1, 8L);
        assertThat(b.build().toArray()).containsExactly(0, 8);
        assertThatThrownBy(b::build).hasMessage("this builder has already built its tensor");
    }

    @Test
    void toStringTruncates() {
        assertThat(Int64Tensor.filled(2, 10)).hasToString("int64[10] [2, 2, 2, 2, ..., 2, 2, 2, 2]");
    }
}
