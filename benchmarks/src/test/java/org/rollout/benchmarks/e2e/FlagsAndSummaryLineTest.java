package org.rollout.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class FlagsAndSummaryLineTest {
    private static final List<Flag> FLAGS = List.of(
            new Flag("servers", "4", "servers"),
            new Flag("step-cost-ms", "1000", "cost"),
            new Flag("lengths", "fixed:length=3", "l"));

    @Test
    void flagsTakeTheirDefaultsUnlessGiven() {
        Flags f = Flags.of("b", FLAGS, java.util.Map.of("servers", "2", "step-cost-ms", "2.5"));
        assertThat(f.integer("servers", 1)).isEqualTo(2);
        assertThat(f.decimal("step-cost-ms", 0)).isEqualTo(2.5);
        assertThat(f.string("lengths")).isEqualTo("fixed:length=3");
    }

    @Test
    void badFlagsAreRefusedNamingTheFlagAndWhatIsAllowed() {
        assertThatThrownBy(() -> Flags.of("b", FLAGS, java.util.Map.of("severs", "2")))
                .hasMessage("bench b: unknown flag --severs (known: --servers, --step-cost-ms, --lengths)");
        Flags f = Flags.of("b", FLAGS, java.util.Map.of("servers", "two", "step-cost-ms", "-1"));
        assertThatThrownBy(() -> f.integer("servers", 1))
                .hasMessage("bench b: --servers must be an integer >= 1, got 'two'");
        assertThatThrownBy(() -> f.decimal("step-cost-ms", 0))
                .hasMessage("bench b: --step-cost-ms must be a number >= 0.0, got '-1'");
    }

    @Test
    void aSummaryLineKeepsItsOrderFormatsNumbersAndParsesBack() {
        SummaryLine line = new SummaryLine("x")
                .put("ratio", 2.0 / 3)
                .put("count", 12)
                .put("whole", 4.0)
                .put("lengths", "lognormal:median=96,sigma=1")
                .put("note", "two words");
        assertThat(line.toString())
                .isEqualTo(
                        "RESULT bench=x ratio=0.6667 count=12 whole=4 lengths=lognormal:median=96,sigma=1 note=two_words");
        assertThat(SummaryLine.parse(line.toString()))
                .containsExactly(
                        java.util.Map.entry("bench", "x"),
                        java.util.Map.entry("ratio", "0.6667"),
                        java.util.Map.entry("count", "12"),
                        java.util.Map.entry("whole", "4"),
                        java.util.Map.entry("lengths", "lognormal:median=96,sigma=1"),
                        java.util.Map.entry("note", "two_words"));
        assertThatThrownBy(() -> SummaryLine.parse("bench=x")).hasMessageContaining("not a summary line");
        assertThatThrownBy(() -> new SummaryLine("x").put("Bad Key", 1)).hasMessageContaining("[a-z0-9_-]+");
    }

    @Test
    void scaleOutCountsTheGroupsEachNodeStartedInTheTimedWindow() {
        assertThat(ScaleOutBenchmark.difference("88 49 50", "40 1 0")).isEqualTo("48 48 50");
        assertThatThrownBy(() -> ScaleOutBenchmark.difference("88 49", "40"))
                .hasMessage("per-node counts of different lengths: '88 49', '40'");
    }
}
