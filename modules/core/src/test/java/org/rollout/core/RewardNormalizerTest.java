package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class RewardNormalizerTest {

    @Test
    void normalisesOneAndZeroToAboutOneAndMinusOne() {
        RewardNormalizer n = RewardNormalizer.fromReferences(new double[] {1, 0}, true);

        assertThat(n.center()).isEqualTo(0.5);
        assertThat(n.scale()).isEqualTo(0.5);
        assertThat(n.divisor()).isEqualTo(0.5 + 1e-8);
        assertThat(n.normalize(1)).isCloseTo(1.0, within(1e-6));
        assertThat(n.normalize(0)).isCloseTo(-1.0, within(1e-6));
    }

    @Test
    void normalisesDiscountedRowsWithTheirRolloutsCenterAndDivisor() {
        // Rows [0.5, 1.0] with reference 1.0, and a peer rollout with 3.0 (semantics §5.6 [C]).
        RewardNormalizer n = RewardNormalizer.fromReferences(new double[] {1.0, 3.0}, true);

        assertThat(n.center()).isEqualTo(2.0);
        assertThat(n.divisor()).isCloseTo(1.0, within(1e-7));
        assertThat(n.normalize(0.5)).isCloseTo(-1.5, within(1e-7));
        assertThat(n.normalize(1.0)).isCloseTo(-1.0, within(1e-7));
        assertThat(n.normalize(3.0)).isCloseTo(1.0, within(1e-7));
    }

    @Test
    void tiedReferencesKeepCenteringWithDivisorOne() {
        RewardNormalizer n = RewardNormalizer.fromReferences(new double[] {0.7, 0.7, 0.7}, true);

        assertThat(n.divisor()).isEqualTo(1.0);
        assertThat(n.normalize(0.7)).isEqualTo(0.0);
        assertThat(n.normalize(1.7)).isCloseTo(1.0, within(1e-12));
    }

    @Test
    void aSpreadAtOrBelowEpsilonGetsDivisorOne() {
        RewardNormalizer n = RewardNormalizer.fromReferences(new double[] {1.0, 1.0 + 2e-9}, true);

        assertThat(n.scale()).isLessThanOrEqualTo(RewardNormalizer.EPS);
        assertThat(n.divisor()).isEqualTo(1.0);
    }

    @Test
    void withoutStdTheDivisorIsAlwaysOne() {
        RewardNormalizer n = RewardNormalizer.fromReferences(new double[] {1, 0}, false);

        assertThat(n.divisor()).isEqualTo(1.0);
        assertThat(n.normalize(1)).isEqualTo(0.5);
        assertThat(n.normalize(0)).isEqualTo(-0.5);
    }

    @Test
    void aSingleReferenceNormalisesToZero() {
        RewardNormalizer n = RewardNormalizer.fromReferences(new double[] {4.0}, true);

        assertThat(n.normalize(4.0)).isEqualTo(0.0);
        assertThat(n.divisor()).isEqualTo(1.0);
    }

    @Test
    void rejectsNoReferences() {
        assertThatThrownBy(() -> RewardNormalizer.fromReferences(new double[0], true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("reward normalisation needs at least one reference, got none");
    }

    @Test
    void rejectsANonFiniteReferenceNamingItsIndex() {
        assertThatThrownBy(() -> RewardNormalizer.fromReferences(new double[] {1, Double.NaN}, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("reference 1 is not finite: NaN");
    }

    @Test
    void rejectsADivisorThatIsNotPositive() {
        assertThatThrownBy(() -> new RewardNormalizer(0, 0, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("divisor must be finite and > 0, got 0.0");
    }

    @Test
    void normalisedReferencesHaveMeanZeroAndUnitStdWhenSpread() {
        Gen<List<Double>> references = Gen.doubles(-100, 100).list(2, 32);
        Property.forAll("normalisedReferencesHaveMeanZeroAndUnitStdWhenSpread", 1_000, references, values -> {
            double[] refs = values.stream().mapToDouble(Double::doubleValue).toArray();
            RewardNormalizer n = RewardNormalizer.fromReferences(refs, true);
            double[] out = Arrays.stream(refs).map(n::normalize).toArray();

            double mean = Arrays.stream(out).average().orElseThrow();
            assertThat(mean).isCloseTo(0.0, within(1e-9));
            if (n.scale() > 1e-3) {
                double var =
                        Arrays.stream(out).map(x -> (x - mean) * (x - mean)).sum() / out.length;
                assertThat(Math.sqrt(var)).isCloseTo(1.0, within(1e-6));
            }
        });
    }

    /** {@code count} references all equal to {@code value}. */
    private record TiedReferences(double value, int count) {}

    @Test
    void tiedReferencesAlwaysNormaliseToExactlyZero() {
        Gen<TiedReferences> ties = Gen.zip(Gen.doubles(-1e6, 1e6), Gen.ints(1, 64), TiedReferences::new);
        Property.forAll("tiedReferencesAlwaysNormaliseToExactlyZero", 1_000, ties, tie -> {
            double[] refs = new double[tie.count()];
            Arrays.fill(refs, tie.value());
            RewardNormalizer normalizer = RewardNormalizer.fromReferences(refs, true);

            assertThat(normalizer.divisor()).isEqualTo(1.0);
            assertThat(normalizer.normalize(tie.value())).isEqualTo(0.0);
        });
    }
}
