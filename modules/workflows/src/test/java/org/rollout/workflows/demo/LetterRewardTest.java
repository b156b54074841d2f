package org.rollout.workflows.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link LetterReward}: 0.6 · lowercase share + 0.4 · target share over the first 8 characters. */
class LetterRewardTest {

    @Test
    void theAskedLetterAloneOrRepeatedScoresOne() {
        assertThat(LetterReward.score("q", 'q')).isEqualTo(1.0);
        assertThat(LetterReward.score("qqqqqqqq", 'q')).isEqualTo(1.0);
    }

    @Test
    void otherLowercaseLettersScoreTheirShareOfPointSix() {
        assertThat(LetterReward.score("qa", 'q')).isCloseTo(0.8, within(1e-12));
        assertThat(LetterReward.score("abcdefgh", 'z')).isCloseTo(0.6, within(1e-12));
        assertThat(LetterReward.score("abcdefgh", 'c')).isCloseTo(0.65, within(1e-12));
    }

    @Test
    void anythingElseScoresNothing() {
        assertThat(LetterReward.score("", 'q')).isZero();
        assertThat(LetterReward.score("Q", 'q')).isZero();
        assertThat(LetterReward.score("?! 42", 'q')).isZero();
        assertThat(LetterReward.score("q Q", 'q')).isCloseTo(1.0 / 3, within(1e-12));
    }

    @Test
    void onlyTheFirstEightCharactersCount() {
        assertThat(LetterReward.score("qqqqqqqqXXXXXXXX", 'q')).isEqualTo(1.0);
        assertThat(LetterReward.score("XXXXXXXXqqqqqqqq", 'q')).isZero();
    }

    @Test
    void charactersAreCodePoints() {
        // U+1F600 is two UTF-16 chars but one character; U+FFFD stands for an undecodable byte.
        assertThat(LetterReward.score("\uD83D\uDE00q", 'q')).isCloseTo(0.5, within(1e-12));
        assertThat(LetterReward.score("\uFFFDq", 'q')).isCloseTo(0.5, within(1e-12));
    }

    @Test
    void staysWithinZeroAndOneForRandomCompletions() {
        SplittableRandom random = new SplittableRandom(42);
        for (int n = 0; n < 2000; n++) {
            StringBuilder sb = new StringBuilder();
            int len = random.nextInt(12);
            for (int i = 0; i < len; i++) {
                sb.appendCodePoint(random.nextInt(3) == 0 ? 'a' + random.nextInt(26) : random.nextInt(0x250));
            }
            char target = (char) ('a' + random.nextInt(26));
            assertThat(LetterReward.score(sb.toString(), target))
                    .as("%s / %s", sb, target)
                    .isBetween(0.0, 1.0);
        }
    }

    @Test
    void readsTheTargetFromTheDataItem() {
        assertThat(new LetterReward().reward("p", "kk", new int[0], new int[0], LetterTask.itemFor('k')))
                .isEqualTo(1.0);
    }

    @Test
    void refusesAnItemWithoutASingleLowercaseTarget() {
        LetterReward r = new LetterReward();
        assertThatThrownBy(() -> r.reward("p", "a", new int[0], new int[0], Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the letters reward needs a lowercase letter under 'target', got nothing");
        assertThatThrownBy(() -> r.reward("p", "a", new int[0], new int[0], Map.of("target", "ab")))
                .hasMessage("the letters reward needs a lowercase letter under 'target', got 'ab'");
    }
}
