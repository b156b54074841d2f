package org.rollout.workflows.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@link LetterTask}: deterministic, balanced prompts that show the asked letter. */
class LetterTaskTest {

    private static String target(Map<String, Object> item) {
        return (String) item.get("target");
    }

    @Test
    void anItemAsksForItsTargetAndShowsItEightTimes() {
        assertThat(LetterTask.itemFor('q'))
                .isEqualTo(Map.of(
                        "messages",
                        List.of(Map.of("role", "user", "content", "Reply with the letter q: qqqqqqqq")),
                        "target",
                        "q"));
    }

    @Test
    void itemsAreAPureFunctionOfSeedAndIndex() {
        for (long i = 0; i < 100; i++) {
            assertThat(LetterTask.item(3, i)).isEqualTo(LetterTask.item(3, i));
        }
        assertThat(LetterTask.item(5)).isEqualTo(LetterTask.item(LetterTask.DEFAULT_SEED, 5));
    }

    @Test
    void everyBlockOfTwentySixConsecutiveItemsAsksForEveryLetterOnce() {
        for (long seed = 0; seed < 5; seed++) {
            for (long block = 0; block < 20; block++) {
                Set<String> letters = new HashSet<>();
                for (long i = 26 * block; i < 26 * (block + 1); i++) {
                    letters.add(target(LetterTask.item(seed, i)));
                }
                assertThat(letters).as("seed %d block %d", seed, block).hasSize(26);
            }
        }
    }

    @Test
    void blocksAndSeedsGiveDifferentOrders() {
        StringBuilder a = new StringBuilder();
        StringBuilder b = new StringBuilder();
        StringBuilder c = new StringBuilder();
        for (long i = 0; i < 26; i++) {
            a.append(target(LetterTask.item(1, i)));
            b.append(target(LetterTask.item(1, i + 26)));
            c.append(target(LetterTask.item(2, i)));
        }
        assertThat(a.toString()).isNotEqualTo(b.toString()).isNotEqualTo(c.toString());
        assertThat(a.toString()).isNotEqualTo("abcdefghijklmnopqrstuvwxyz");
    }

    @Test
    void evaluationHasOneItemPerLetterInOrder() {
        List<Map<String, Object>> items = LetterTask.evalItems();

        assertThat(items).hasSize(26);
        for (int i = 0; i < 26; i++) {
            assertThat(items.get(i)).isEqualTo(LetterTask.itemFor((char) ('a' + i)));
        }
    }

    @Test
    void refusesATargetThatIsNotALowercaseLetter() {
        assertThatThrownBy(() -> LetterTask.itemFor('Q'))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the target must be a lowercase ASCII letter, got 'Q'");
    }
}
