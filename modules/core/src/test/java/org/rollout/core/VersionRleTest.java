package org.rollout.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.core.VersionRle.Run;
import org.rollout.testing.Gen;
import org.rollout.testing.Property;

class VersionRleTest {

    @Test
    void encodesTheSection7ExampleOfThreeGeneratedTokens() {
        int[] mask = {0, 0, 1, 1, 1};
        int[] versions = {-1, -1, 5, 5, 6};
        List<Run> rle = VersionRle.encode(versions, mask, mask.length);
        assertThat(rle).containsExactly(new Run(5, 2), new Run(6, 1));
        assertThat(VersionRle.toPairs(rle)).containsExactly(new int[] {5, 2}, new int[] {6, 1});
    }

    @Test
    void mergesEqualRunsAcrossAContextGapWithTheSection7Mask() {
        int[] mask = {0, 0, 1, 1, 0, 0, 1, 1};
        int[] versions = {-1, -1, 5, 5, -1, -1, 5, 6};
        assertThat(VersionRle.encode(versions, mask, mask.length)).containsExactly(new Run(5, 3), new Run(6, 1));
    }

    @Test
    void keepsDifferentVersionsOnBothSidesOfAContextGapApart() {
        int[] mask = {0, 0, 1, 1, 0, 0, 1, 1};
        int[] versions = {-1, -1, 5, 5, -1, -1, 6, 6};
        assertThat(VersionRle.encode(versions, mask, mask.length)).containsExactly(new Run(5, 2), new Run(6, 2));
    }

    @Test
    void ignoresPositionsBeyondLength() {
        int[] mask = {0, 1, 1, 1, 1};
        int[] versions = {-1, 3, 3, 0, 0}; // padding holds version 0 after concat (semantics §3.2)
        assertThat(VersionRle.encode(versions, mask, 3)).containsExactly(new Run(3, 2));
    }

    @Test
    void onlyMaskValueOneCountsAsGenerated() {
        int[] mask = {2, 1, 0, 1};
        int[] versions = {9, 4, 9, 4};
        assertThat(VersionRle.encode(versions, mask, 4)).containsExactly(new Run(4, 2));
    }

    @Test
    void encodesWithoutMaskEveryPosition() {
        assertThat(VersionRle.encode(new int[] {1, 1, 2, 1}))
                .containsExactly(new Run(1, 2), new Run(2, 1), new Run(1, 1));
        assertThat(VersionRle.encode(new int[0])).isEmpty();
    }

    @Test
    void decodeExpandsRuns() {
        assertThat(VersionRle.decode(List.of(new Run(5, 2), new Run(6, 1)))).containsExactly(5, 5, 6);
        assertThat(VersionRle.decode(List.of())).isEmpty();
    }

    @Test
    void runRejectsCountBelowOneNamingThePair() {
        assertThatThrownBy(() -> new Run(5, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a version run needs count >= 1, got [5, 0]");
    }

    @Test
    void encodeRejectsALengthBeyondTheArrays() {
        assertThatThrownBy(() -> VersionRle.encode(new int[3], new int[2], 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("length 3 is outside versions (3) or loss_mask (2)");
    }

    @Test
    void decodeRejectsRunsTooLongForAnArray() {
        List<Run> runs = List.of(new Run(1, Integer.MAX_VALUE), new Run(2, Integer.MAX_VALUE));
        assertThatThrownBy(() -> VersionRle.decode(runs))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("version runs add up to 4294967294 tokens, too many to decode");
    }

    @Test
    void fromPairsRejectsAMalformedPairNamingItsIndex() {
        assertThatThrownBy(() -> VersionRle.fromPairs(List.of(new int[] {1, 2}, new int[] {3})))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("version run 1 must be a [version, count] pair, got [3]");
        assertThatThrownBy(() -> VersionRle.fromPairs(List.of(new int[] {1, -2})))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("version run 0 needs count >= 1, got [1, -2]");
    }

    @Test
    void runToStringIsItsJsonPair() {
        assertThat(new Run(5, 2)).hasToString("[5, 2]");
    }

    /** Few distinct values, so that runs longer than 1 are common. */
    private static final Gen<int[]> VERSIONS = Gen.intArrays(Gen.ints(-1, 3), 0, 40);

    private static final int TRIALS = 1_000;

    @Test
    void decodeInvertsEncode() {
        Property.forAll(
                "decodeInvertsEncode",
                TRIALS,
                VERSIONS,
                versions -> assertThat(VersionRle.decode(VersionRle.encode(versions)))
                        .containsExactly(versions));
    }

    @Test
    void encodedRunsAreCanonical() {
        Property.forAll("encodedRunsAreCanonical", TRIALS, VERSIONS, versions -> {
            List<Run> runs = VersionRle.encode(versions);
            assertThat(VersionRle.isCanonical(runs)).isTrue();
            assertThat(runs).allSatisfy(r -> assertThat(r.count()).isPositive());
            assertThat(VersionRle.totalCount(runs)).isEqualTo(versions.length);
        });
    }

    /** Versions and the seed of a random 0/1 loss mask over them. */
    private record MaskedVersions(int[] versions, long maskSeed) {}

    @Test
    void maskedEncodingEqualsEncodingOfTheMaskedPositions() {
        Gen<MaskedVersions> cases = Gen.zip(VERSIONS, Gen.longs(), MaskedVersions::new);
        Property.forAll("maskedEncodingEqualsEncodingOfTheMaskedPositions", TRIALS, cases, c -> {
            int[] versions = c.versions();
            int[] mask = new java.util.Random(c.maskSeed())
                    .ints(versions.length, 0, 2)
                    .toArray();
            int[] kept = java.util.stream.IntStream.range(0, versions.length)
                    .filter(k -> mask[k] == 1)
                    .map(k -> versions[k])
                    .toArray();
            assertThat(VersionRle.encode(versions, mask, versions.length)).isEqualTo(VersionRle.encode(kept));
        });
    }

    @Test
    void pairsRoundTrip() {
        Property.forAll("pairsRoundTrip", TRIALS, VERSIONS, versions -> {
            List<Run> runs = VersionRle.encode(versions);
            assertThat(VersionRle.fromPairs(VersionRle.toPairs(runs))).isEqualTo(runs);
        });
    }
}
