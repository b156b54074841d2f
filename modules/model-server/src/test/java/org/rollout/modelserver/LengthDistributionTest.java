package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class LengthDistributionTest {

    private static int[] draws(LengthDistribution d, int n) {
        SplittableRandom random = new SplittableRandom(42);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = d.sample(random);
        }
        Arrays.sort(out);
        return out;
    }

    @Test
    void logNormalDrawsHaveTheGivenMedianAndALongTail() {
        int[] d = draws(new LengthDistribution.LogNormal(200, 1.0), 20_000);
        assertThat(d[d.length / 2]).isBetween(190, 210);
        // exp(2.326) ≈ 10.2: the 99th percentile of a log-normal with sigma 1 is ~10× its median.
        assertThat(d[(int) (d.length * 0.99)]).isBetween(1800, 2300);
        assertThat(d[0]).isGreaterThanOrEqualTo(1);
    }

    @Test
    void paretoDrawsNeverFallBelowTheMinimumAndHaveItsTail() {
        int[] d = draws(new LengthDistribution.Pareto(50, 2.0), 20_000);
        assertThat(d[0]).isGreaterThanOrEqualTo(50);
        // P(X > x) = (min/x)^alpha: the median is min · 2^(1/alpha) ≈ 70.7, the 99th percentile min · 10.
        assertThat(d[d.length / 2]).isBetween(68, 74);
        assertThat(d[(int) (d.length * 0.99)]).isBetween(450, 560);
    }

    @Test
    void aZeroSigmaLogNormalAndAFixedDistributionAlwaysDrawTheSameLength() {
        assertThat(draws(new LengthDistribution.LogNormal(37, 0), 100)).containsOnly(37);
        assertThat(draws(new LengthDistribution.Fixed(9), 100)).containsOnly(9);
    }

    @Test
    void specsParseBackToEqualDistributions() {
        for (LengthDistribution d : new LengthDistribution[] {
            new LengthDistribution.LogNormal(256, 1.25),
            new LengthDistribution.Pareto(64, 1.5),
            new LengthDistribution.Fixed(100)
        }) {
            assertThat(LengthDistribution.parse(d.spec())).isEqualTo(d);
        }
        assertThat(new LengthDistribution.LogNormal(256, 1).spec()).isEqualTo("lognormal:median=256,sigma=1");
        assertThat(LengthDistribution.parse(" LogNormal: sigma = 0.5 , median=10 "))
                .isEqualTo(new LengthDistribution.LogNormal(10, 0.5));
    }

    @Test
    void parseRejectsBadSpecsSayingWhatIsAllowed() {
        assertThatThrownBy(() -> LengthDistribution.parse("weibull:k=1"))
                .hasMessage("output length distribution 'weibull:k=1': unknown kind 'weibull' (allowed: "
                        + "lognormal:median=M,sigma=S | pareto:min=M,alpha=A | fixed:length=N)");
        assertThatThrownBy(() -> LengthDistribution.parse("lognormal:median=10"))
                .hasMessage("output length distribution 'lognormal:median=10': expected exactly the parameters "
                        + "median, sigma, got [median]");
        assertThatThrownBy(() -> LengthDistribution.parse("pareto:min=ten,alpha=1"))
                .hasMessageContaining("min is not a number");
        assertThatThrownBy(() -> LengthDistribution.parse("fixed:length=3,length=4"))
                .hasMessageContaining("length is given twice");
        assertThatThrownBy(() -> LengthDistribution.parse("fixed:length=2.5"))
                .hasMessageContaining("length must be an integer >= 1");
        assertThatThrownBy(() -> LengthDistribution.parse("fixed:100"))
                .hasMessageContaining("parameter '100' is not name=value");
        assertThatThrownBy(() -> LengthDistribution.parse(" ")).hasMessageContaining("is empty");
    }

    @Test
    void outOfRangeParametersAreRefusedNamingThem() {
        assertThatThrownBy(() -> new LengthDistribution.LogNormal(0.5, 1))
                .hasMessage("output length distribution: median must be a finite number >= 1, got 0.5");
        assertThatThrownBy(() -> new LengthDistribution.LogNormal(10, Double.NaN))
                .hasMessage("output length distribution: sigma must be a finite number >= 0, got NaN");
        assertThatThrownBy(() -> new LengthDistribution.Pareto(10, 0))
                .hasMessage("output length distribution: alpha must be a finite number > 0, got 0.0");
        assertThatThrownBy(() -> new LengthDistribution.Fixed(0))
                .hasMessage("output length distribution fixed: length must be >= 1, got 0");
    }
}
