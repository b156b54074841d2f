package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class Float32TensorTest {
    private static final Float32Tensor M = Float32Tensor.matrix(new float[] {0.5f, -1.5f}, new float[] {2f, 3.25f});

    @Test
    void factoriesCopyAndShape() {
        float[] values = {1f, 2f};
        Float32Tensor t = Float32Tensor.of(values);
        values[0] = 9f;
        assertThat(t.toArray()).containsExactly(1f, 2f);
        assertThat(t.dtype()).isEqualTo(DType.FLOAT32);
        assertThat(Float32Tensor.scalar(0.25f).item()).isEqualTo(0.25f);
        assertThat(Float32Tensor.filled(1.5f, 1, 2).toArray()).containsExactly(1.5f, 1.5f);
        assertThat(Tensor.zeros(DType.FLOAT32, 2)).isEqualTo(Float32Tensor.vector(0f, 0f));
        assertThatThrownBy(() -> Float32Tensor.of(new float[] {1f}, 1, 2))
                .hasMessage("data length 1 does not match shape [1, 2] (2 elements)");
    }

    @Test
    void getLongTruncatesAndGetDoubleWidens() {
        assertThat(M.getLong(1)).isEqualTo(-1L);
        assertThat(M.getDouble(3)).isEqualTo(3.25);
        assertThat(M.get(1, 0)).isEqualTo(2f);
        assertThat(M.row(1).stream().sum()).isEqualTo(5.25);
        assertThatThrownBy(() -> M.get(0, 2)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void nanEqualsNanAndNegativeZeroDiffersFromZero() {
        assertThat(Float32Tensor.vector(Float.NaN)).isEqualTo(Float32Tensor.vector(Float.NaN));
        assertThat(Float32Tensor.vector(Float.NaN)).hasSameHashCodeAs(Float32Tensor.vector(Float.NaN));
        assertThat(Float32Tensor.vector(-0f)).isNotEqualTo(Float32Tensor.vector(0f));
    }

    @Test
    void viewsShareAndCompareEqualToCopies() {
        Float32Tensor fresh = Float32Tensor.vector(2f, 3.25f);
        assertThat(M.row(1)).isEqualTo(fresh).hasSameHashCodeAs(fresh);
        assertThat(M.slice(1, 2).reshape(2)).isEqualTo(fresh);
        assertThat(M.reshape(4).at(3)).isEqualTo(3.25f);
    }

    @Test
    void builderBuildsOnce() {
        Float32Tensor.Builder b = Float32Tensor.builder(1, 2).set(0, 1, 0.5f);
        assertThat(b.build().toArray()).containsExactly(0f, 0.5f);
        assertThatThrownBy(() -> b.fill(0, 1, 1f)).hasMessage("this builder has already built its tensor");
    }

    @Test
    void toStringPrintsFloats() {
        assertThat(M).hasToString("float32[2, 2] [[0.5, -1.5], [2.0, 3.25]]");
    }
}
