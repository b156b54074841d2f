package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class Int32TensorTest {
    private static final Int32Tensor M = Int32Tensor.matrix(new int[] {1, 2, 3}, new int[] {4, 5, 6});

    @Test
    void ofWithoutShapeIsAVectorAndCopiesTheArray() {
        int[] values = {1, 2, 3};
        Int32Tensor t = Int32Tensor.of(values);
        values[0] = 99;
        assertThat(t.shape()).containsExactly(3);
        assertThat(t.rank()).isEqualTo(1);
        assertThat(t.toArray()).containsExactly(1, 2, 3);
        assertThat(t.dtype()).isEqualTo(DType.INT32);
    }

    @Test
    void ofWithAShapeChecksTheLength() {
        assertThat(Int32Tensor.of(new int[] {1, 2, 3, 4}, 2, 2).shape()).containsExactly(2, 2);
        assertThatThrownBy(() -> Int32Tensor.of(new int[] {1, 2, 3}, 2, 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("data length 3 does not match shape [2, 2] (4 elements)");
    }

    @Test
    void shapesAboveRankTwoOrWithNegativeDimsAreRejected() {
        assertThatThrownBy(() -> Int32Tensor.of(new int[] {1}, 1, 1, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tensor rank must be 0, 1 or 2, got shape [1, 1, 1]");
        assertThatThrownBy(() -> Int32Tensor.filled(0, 2, -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tensor dims must be >= 0, got shape [2, -1]");
    }

    @Test
    void scalarVectorMatrixAndFilledHaveTheirShapes() {
        assertThat(Int32Tensor.scalar(7).shape()).isEmpty();
        assertThat(Int32Tensor.scalar(7).numel()).isEqualTo(1);
        assertThat(Int32Tensor.vector(1, 2).shape()).containsExactly(2);
        assertThat(M.shape()).containsExactly(2, 3);
        assertThat(M.dim(0)).isEqualTo(2);
        assertThat(M.dim(1)).isEqualTo(3);
        assertThat(M.numel()).isEqualTo(6);
        assertThat(Int32Tensor.filled(-1, 2, 2).toArray()).containsExactly(-1, -1, -1, -1);
        assertThat(Int32Tensor.matrix().shape()).containsExactly(0, 0);
        assertThat(Tensor.zeros(DType.INT32, 1, 2)).isEqualTo(Int32Tensor.of(new int[] {0, 0}, 1, 2));
    }

    @Test
    void matrixRejectsRaggedRows() {
        assertThatThrownBy(() -> Int32Tensor.matrix(new int[] {1, 2}, new int[] {3}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("matrix rows must have equal length: row 0 has 2, row 1 has 1");
    }

    @Test
    void shapeIsACopy() {
        int[] shape = M.shape();
        shape[0] = 100;
        assertThat(M.shape()).containsExactly(2, 3);
    }

    @Test
    void getReadsByRowAndColumnAndChecksRankAndBounds() {
        assertThat(M.get(1, 2)).isEqualTo(6);
        assertThat(Int32Tensor.vector(4, 5).get(1)).isEqualTo(5);
        assertThatThrownBy(() -> M.get(0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("get(i) needs a rank-1 tensor, this one has shape [2, 3]");
        assertThatThrownBy(() -> Int32Tensor.vector(1).get(0, 0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("get(i, j) needs a rank-2 tensor, this one has shape [1]");
        assertThatThrownBy(() -> M.get(0, 3)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> M.get(2, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> M.dim(2)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void atReadsRowMajorAndChecksBounds() {
        assertThat(M.at(4)).isEqualTo(5);
        assertThat(M.getLong(4)).isEqualTo(5L);
        assertThat(M.getDouble(4)).isEqualTo(5.0);
        assertThatThrownBy(() -> M.at(6)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> M.at(-1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void itemNeedsExactlyOneElement() {
        assertThat(Int32Tensor.scalar(3).item()).isEqualTo(3);
        assertThat(Int32Tensor.of(new int[] {9}, 1, 1).item()).isEqualTo(9);
        assertThatThrownBy(() -> Int32Tensor.vector(1, 2).item())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("item() needs exactly one element, shape is [2]");
    }

    @Test
    void rowIsAViewOfLowerRank() {
        Int32Tensor row = M.row(1);
        assertThat(row.shape()).containsExactly(3);
        assertThat(row.toArray()).containsExactly(4, 5, 6);
        assertThat(row.row(2).item()).isEqualTo(6);
        assertThat(row.row(2).rank()).isZero();
        assertThatThrownBy(() -> M.row(2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> Int32Tensor.scalar(1).row(0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("a rank-0 tensor has no rows");
    }

    @Test
    void sliceKeepsTheRankAndChecksItsRange() {
        Int32Tensor s = M.slice(1, 2);
        assertThat(s.shape()).containsExactly(1, 3);
        assertThat(s.get(0, 0)).isEqualTo(4);
        assertThat(M.slice(1, 1).shape()).containsExactly(0, 3);
        assertThat(Int32Tensor.vector(1, 2, 3).slice(1, 3).toArray()).containsExactly(2, 3);
        assertThatThrownBy(() -> M.slice(1, 5))
                .isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("slice [1, 5) out of range for dim 0 of size 2");
        assertThatThrownBy(() -> M.slice(2, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> Int32Tensor.scalar(1).slice(0, 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("a rank-0 tensor cannot be sliced");
    }

    @Test
    void reshapeOfAViewKeepsItsElements() {
        Int32Tensor r = M.row(1).reshape(3, 1);
        assertThat(r.shape()).containsExactly(3, 1);
        assertThat(r.toArray()).containsExactly(4, 5, 6);
        assertThat(M.reshape(6).toArray()).containsExactly(1, 2, 3, 4, 5, 6);
        assertThatThrownBy(() -> M.reshape(4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("data length 6 does not match shape [4] (4 elements)");
    }

    @Test
    void viewsShareTheDataButCannotChangeIt() {
        Int32Tensor row = M.row(0);
        int[] copy = row.toArray();
        copy[0] = 100;
        assertThat(M.get(0, 0)).isEqualTo(1);
        int[] dest = new int[5];
        M.row(1).copyTo(1, dest, 2, 2);
        assertThat(dest).containsExactly(0, 0, 5, 6, 0);
        assertThatThrownBy(() -> M.row(1).copyTo(2, dest, 0, 2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(M.row(1).stream().sum()).isEqualTo(15);
    }

    @Test
    void equalsAndHashCodeCompareShapeAndElementsAcrossViews() {
        Int32Tensor fresh = Int32Tensor.vector(4, 5, 6);
        assertThat(M.row(1)).isEqualTo(fresh).hasSameHashCodeAs(fresh);
        assertThat(M.slice(1, 2).reshape(3)).isEqualTo(fresh).hasSameHashCodeAs(fresh);
        assertThat(M.row(1).reshape(1, 3)).isNotEqualTo(fresh);
        assertThat(Int32Tensor.vector(1, 2)).isNotEqualTo(Int64Tensor.vector(1, 2));
        assertThat(M.row(0)).isNotEqualTo(fresh);
    }

    /** A matrix of {@code rows × cols} random ints drawn from {@code seed}. */
    private record RandomMatrix(int rows, int cols, long seed) {}

    @Test
    void everyRowViewEqualsACopyOfThatRow() {
        Gen<RandomMatrix> matrices = Gen.zip(Gen.ints(0, 6), Gen.ints(0, 6), Gen.longs(), RandomMatrix::new);
        Property.forAll(
                "everyRowViewEqualsACopyOfThatRow",
                200,
                matrices,
                matrix -> rowViewsEqualCopies(matrix.rows(), matrix.cols(), matrix.seed()));
    }

    private static void rowViewsEqualCopies(int rows, int cols, long seed) {
        Random random = new Random(seed);
        int[][] data = new int[rows][cols];
        for (int[] row : data) {
            for (int j = 0; j < cols; j++) {
                row[j] = random.nextInt();
            }
        }
        Int32Tensor.Builder b = Int32Tensor.builder(rows, cols);
        for (int i = 0; i < rows; i++) {
            b.copyFrom(i * cols, data[i], 0, cols);
        }
        Int32Tensor m = b.build();
        for (int i = 0; i < rows; i++) {
            Int32Tensor copy = Int32Tensor.vector(data[i]);
            assertThat(m.row(i)).isEqualTo(copy).hasSameHashCodeAs(copy);
            assertThat(m.slice(i, i + 1).reshape(cols)).isEqualTo(copy);
        }
    }

    @Test
    void builderFillsInPlaceAndBuildsOnce() {
        Int32Tensor.Builder b = Int32Tensor.builder(2, 3);
        b.set(0, 7).set(1, 2, 9).fill(1, 3, 4).copyFrom(3, new int[] {1, 2}, 0, 2);
        Int32Tensor t = b.build();
        assertThat(t.toArray()).containsExactly(7, 4, 4, 1, 2, 9);
        assertThatThrownBy(b::build)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("this builder has already built its tensor");
        assertThatThrownBy(() -> b.set(0, 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("this builder has already built its tensor");
        assertThat(Int32Tensor.builder(3).copyFrom(0, M.row(1), 1, 2).build().toArray())
                .containsExactly(5, 6, 0);
    }

    @Test
    void toStringShowsDtypeShapeAndAtMostFourElementsPerEdge() {
        assertThat(Int32Tensor.scalar(3)).hasToString("int32[] 3");
        assertThat(M).hasToString("int32[2, 3] [[1, 2, 3], [4, 5, 6]]");
        int[] nine = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        assertThat(Int32Tensor.of(nine)).hasToString("int32[9] [1, 2, 3, 4, ..., 6, 7, 8, 9]");
        assertThat(Int32Tensor.of(new int[] {1, 2, 3, 4, 5, 6, 7, 8})).hasToString("int32[8] [1, 2, 3, 4, 5, 6, 7, 8]");
        assertThat(Int32Tensor.filled(0, 9, 1))
                .hasToString("int32[9, 1] [[0], [0], [0], [0], ..., [0], [0], [0], [0]]");
        assertThat(M.describe()).isEqualTo("int32[2, 3]");
    }
}
