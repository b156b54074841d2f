package org.rollout.api;

/** Renders tensors for {@code toString()}: dtype, shape, and at most a few elements per dimension. */
final class TensorFormat {
    private static final int EDGE = 4;

    private TensorFormat() {}

    static String format(Tensor t) {
        StringBuilder sb = new StringBuilder(t.describe()).append(' ');
        int[] shape = t.shape();
        switch (shape.length) {
            case 0 -> element(sb, t, 0);
            case 1 -> row(sb, t, 0, shape[0]);
            default -> {
                sb.append('[');
                for (int i = 0; i < shape[0]; i++) {
                    if (i == EDGE && shape[0] > 2 * EDGE) {
                        sb.append("..., ");
                        i = shape[0] - EDGE;
                    }
                    row(sb, t, i * shape[1], shape[1]);
                    if (i < shape[0] - 1) {
                        sb.append(", ");
                    }
                }
                sb.append(']');
            }
        }
        return sb.toString();
    }

    private static void row(StringBuilder sb, Tensor t, int start, int length) {
        sb.append('[');
        for (int k = 0; k < length; k++) {
            if (k == EDGE && length > 2 * EDGE) {
                sb.append("..., ");
                k = length - EDGE;
            }
            element(sb, t, start + k);
            if (k < length - 1) {
                sb.append(", ");
            }
        }
        sb.append(']');
    }

    private static void element(StringBuilder sb, Tensor t, int flat) {
        switch (t) {
            case Float32Tensor f -> sb.append(f.at(flat));
            case BoolTensor b -> sb.append(b.at(flat));
            default -> sb.append(t.getLong(flat));
        }
    }
}
