package org.rollout.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A small column chart in text, for terminal summaries: values are bucketed into at most
 * {@code maxWidth} columns (each the mean of its bucket) and drawn {@code height} rows high with
 * eighth-block characters, the y axis labelled with the range.
 *
 * <pre>
 *   1.00 ┤            ▂▄▆███
 *        │       ▁▃▅▇██████
 *   0.00 ┤▁▂▃▅▆███████████
 *         └────────────────── step 1..60
 * </pre>
 */
final class TextChart {
    private static final char[] EIGHTHS = {' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'};

    private TextChart() {}

    static List<String> columns(double[] values, double min, double max, int height, int maxWidth, String xLabel) {
        List<String> lines = new ArrayList<>();
        if (values.length == 0) {
            lines.add("(no data)");
            return lines;
        }
        double[] cols = bucket(values, Math.max(1, maxWidth));
        double span = max - min <= 0 ? 1 : max - min;
        String top = String.format(Locale.ROOT, "%5.2f", max);
        String bottom = String.format(Locale.ROOT, "%5.2f", min);
        String blank = " ".repeat(top.length());
        for (int row = height - 1; row >= 0; row--) {
            StringBuilder sb = new StringBuilder();
            sb.append(row == height - 1 ? top : row == 0 ? bottom : blank)
                    .append(row == 0 || row == height - 1 ? " ┤" : " │");
            for (double v : cols) {
                double level = Math.max(0, Math.min(1, (v - min) / span)) * height * 8;
                int eighths = (int) Math.round(level) - row * 8;
                sb.append(EIGHTHS[Math.max(0, Math.min(8, eighths))]);
            }
            lines.add(sb.toString().stripTrailing());
        }
        lines.add(blank + "  └" + "─".repeat(cols.length) + " " + xLabel);
        return lines;
    }

    static double[] bucket(double[] values, int width) {
        if (values.length <= width) {
            return values.clone();
        }
        double[] out = new double[width];
        for (int c = 0; c < width; c++) {
            int from = (int) ((long) c * values.length / width);
            int to = (int) ((long) (c + 1) * values.length / width);
            double s = 0;
            for (int i = from; i < to; i++) {
                s += values[i];
            }
            out[c] = s / Math.max(1, to - from);
        }
        return out;
    }
}
