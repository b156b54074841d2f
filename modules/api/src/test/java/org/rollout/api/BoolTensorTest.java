package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BoolTensorTest {
    private static final BoolTensor MASK =
            BoolTensor.matrix(new boolean[] {true, true, false}, new boolean[] {true, false, false});

    @Test
    void factoriesCopyAndShape() {
        boolean[] values = {true, false};
        BoolTensor t = BoolTensor.of(values);
        values[0] = false;
        assertThat(t.toArray()).containsExactly(true, false);
        assertThat(t.dtype()).isEqualTo(DType.BOOL);
        assertThat(BoolTensor.scalar(true).item()).isTrue();
        assertThat(BoolTensor.filled(true, 2).toArray()).containsExactly(true, true);
        assertThat(Tensor.zeros(DType.BOOL, 1)).isEqualTo(BoolTensor.vector(false));
        assertThatThrownBy(() -> BoolTensor.matrix(new boolean[] {true}, new boolean[] {true, false}))
                .hasMessage("matrix rows must have equal length: row 0 has 1, row 1 has 2");
    }

    @Test
    void readsAsZeroOrOne() {
        assertThat(MASK.getLong(0)).isEqualTo(1L);
        assertThat(MASK.getDouble(2)).isEqualTo(0.0);
        assertThat(MASK.get(1, 0)).isTrue();
        assertThat(MASK.row(1).get(1)).isFalse();
    }

    @Test
    void countTrueIsTheValidLengthOfARow() {
        assertThat(MASK.countTrue()).isEqualTo(3);
        assertThat(MASK.row(0).countTrue()).isEqualTo(2);
        assertThat(MASK.row(1).countTrue()).isEqualTo(1);
        assertThat(MASK.slice(1, 2).countTrue()).isEqualTo(1);
    }

    @Test
    void viewsShareAndCompareEqualToCopies() {
        BoolTensor fresh = BoolTensor.vector(true, false, false);
        assertThat(MASK.row(1)).isEqualTo(fresh).hasSameHashCodeAs(fresh);
        assertThat(MASK.reshape(6).slice(3, 6)).isEqualTo(fresh);
    }

    @Test
    void builderBuildsOnce() {
        BoolTensor.Builder b = BoolTensor.builder(3).fill(0, 2, true);
        assertThat(b.build().toArray()).containsExactly(true, true, false);
        assertThatThrownBy(() -> b.copyFrom(0, new boolean[] {true}, 0, 1))
                .hasMessage("this builder has already built its tensor");
    }

    @Test
    void toStringPrintsBooleans() {
        assertThat(MASK.row(0)).hasToString("bool[3] [true, true, false]");
    }
}
