package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class TextChartTest {
    @Test
    void aRisingSeriesFillsItsColumnsFromTheBottom() {
        List<String> lines = TextChart.columns(new double[] {0, 0.5, 1}, 0, 1, 2, 60, "step 1..3");
        assertThat(lines).containsExactly(" 1.00 ┤  █", " 0.00 ┤ ██", "       └─── step 1..3");
    }

    @Test
    void longSeriesAreBucketedIntoAtMostMaxWidthColumnsOfMeans() {
        assertThat(TextChart.bucket(new double[] {1, 3, 5, 7}, 2)).containsExactly(2, 6);
        List<String> lines = TextChart.columns(new double[100], 0, 1, 3, 20, "x");
        assertThat(lines.getLast()).contains("└" + "─".repeat(20) + " x");
    }

    @Test
    void noDataSaysSo() {
        assertThat(TextChart.columns(new double[0], 0, 1, 4, 10, "x")).containsExactly("(no data)");
    }
}
