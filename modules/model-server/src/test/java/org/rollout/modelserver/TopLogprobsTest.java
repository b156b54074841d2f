package org.rollout.modelserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The alternatives at one position: order, ranks, the chosen token's place, and the model's values. */
class TopLogprobsTest {
    private static final int V = TinyLmWeights.VOCAB_SIZE;
    private static final TinyLmWeights W = TinyLmWeights.seeded(3, 0.8, 0.85f);
    private static final int[] PROMPT = {257, 117, 115, 101, 114, 10, 104, 105};

    /** Logprobs (not normalised: only the order matters here): 100 at -1, 40 at -3, 2 and 9 tied at -5, the rest -20. */
    private static double[] hand() {
        double[] lp = new double[V];
        Arrays.fill(lp, -20);
        lp[40] = -3;
        lp[9] = -5;
        lp[2] = -5;
        lp[100] = -1;
        return lp;
    }

    @Test
    void theTopKAreTheMostLikelyInOrderTiesByLowerId() {
        TopLogprobs.Position p = TopLogprobs.at(hand(), 40, 3);
        assertThat(p.topIds()).containsExactly(100, 40, 2);
        assertThat(p.topLogprobs()).containsExactly(-1, -3, -5);
    }

    @Test
    void aChosenTokenOutsideTheTopKIsAddedFirstRankedBelowThem() {
        TopLogprobs.Position p = TopLogprobs.at(hand(), 40, 1);
        assertThat(p.size()).isEqualTo(2);
        assertThat(p.chosenRank()).isEqualTo(2);
        assertThat(new int[] {p.id(0), p.id(1)}).containsExactly(40, 100);
        assertThat(new int[] {p.rank(0), p.rank(1)}).containsExactly(2, 1);
        assertThat(new double[] {p.logprob(0), p.logprob(1)}).containsExactly(-3, -1);
    }

    @Test
    void aChosenTokenInsideTheTopKIsListedOnceFirstTheOthersByRank() {
        TopLogprobs.Position p = TopLogprobs.at(hand(), 2, 4);
        assertThat(p.size()).isEqualTo(4);
        assertThat(IntStream.range(0, 4).map(p::id).toArray()).containsExactly(2, 100, 40, 9);
        assertThat(IntStream.range(0, 4).map(p::rank).toArray()).containsExactly(3, 1, 2, 4);
        assertThat(IntStream.range(0, 4).mapToDouble(p::logprob).toArray()).containsExactly(-5, -1, -3, -5);
    }

    @Test
    void withKZeroOnlyTheChosenTokenIsListedWithItsRank() {
        TopLogprobs.Position p = TopLogprobs.at(hand(), 7, 0);
        assertThat(p.size()).isEqualTo(1);
        assertThat(p.id(0)).isEqualTo(7);
        // 4 tokens above it, and the -20 tokens with a lower id (0, 1, 3, 4, 5, 6) tie before it.
        assertThat(p.rank(0)).isEqualTo(4 + 6 + 1);
        assertThatThrownBy(() -> p.id(1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void kAboveTheLimitIsRejectedNamingIt() {
        assertThatThrownBy(() -> TopLogprobs.at(hand(), 7, TopLogprobs.MAX + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[0, 20]");
    }

    @ParameterizedTest
    @ValueSource(doubles = {1.0, 0.6})
    void overAPromptTheChosenLogprobsAreTheModelsAndTheAlternativesItsMostLikely(double temperature) {
        int k = 5;
        TopLogprobs.Position[] positions = TopLogprobs.ofSequence(W, PROMPT, 1, temperature, k);
        assertThat(TopLogprobs.chosenLogprobs(positions))
                .as("bit for bit what scoring without alternatives reports")
                .containsExactly(TinyLm.sequenceLogprobs(W, PROMPT, 1, temperature));
        for (int t = 1; t < PROMPT.length; t++) {
            TopLogprobs.Position p = positions[t - 1];
            double[] model = TinyLm.nextTokenLogprobs(W, Arrays.copyOf(PROMPT, t), temperature);
            Integer[] byModel = IntStream.range(0, V).boxed().toArray(Integer[]::new);
            Arrays.sort(byModel, Comparator.comparingDouble((Integer j) -> -model[j]));
            assertThat(p.chosen()).isEqualTo(PROMPT[t]);
            assertThat(p.chosenRank()).isEqualTo(Arrays.asList(byModel).indexOf(PROMPT[t]) + 1);
            for (int r = 0; r < k; r++) {
                assertThat(p.topIds()[r]).as("rank %d at position %d", r + 1, t).isEqualTo(byModel[r]);
                assertThat(p.topLogprobs()[r]).isEqualTo(model[byModel[r]]);
            }
            double mass = 0;
            for (int i = 0; i < p.size(); i++) {
                mass += Math.exp(p.logprob(i));
            }
            assertThat(mass).isLessThanOrEqualTo(1 + 1e-12);
        }
    }
}
