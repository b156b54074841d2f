package org.rollout.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A trainer rank's share of a run: ids, prompts, limits, and each runner's capacity. */
class RankShareTest {

    @Test
    void theRanksSplitARunnersCapacityExactlyAndNoRankIsLeftWithout() {
        for (int ranks = 1; ranks <= 9; ranks++) {
            for (int capacity = 1; capacity <= 40; capacity++) {
                int sum = 0;
                for (int r = 0; r < ranks; r++) {
                    int share = new RankShare(r, ranks).capacity(capacity);
                    assertThat(share).isGreaterThanOrEqualTo(1);
                    sum += share;
                }
                assertThat(sum).as("capacity %d over %d ranks", capacity, ranks).isEqualTo(Math.max(capacity, ranks));
            }
        }
    }

    @Test
    void eachRankTakesItsOwnIdsAndPromptsAndTogetherTheyTakeEachOnce() {
        PromptSource source = i -> i < 10 ? Optional.of(Map.of("i", i)) : Optional.empty();
        int[] seen = new int[10];
        for (int r = 0; r < 3; r++) {
            RankShare share = new RankShare(r, 3);
            PromptSource mine = share.prompts(source);
            for (long i = 0; ; i++) {
                Optional<Map<String, Object>> item = mine.item(i);
                if (item.isEmpty()) {
                    break;
                }
                seen[((Long) item.get().get("i")).intValue()]++;
            }
            for (long id = 0; id < 20; id++) {
                assertThat(share.owns(id)).isEqualTo(id % 3 == r);
                long first = share.firstIdFrom(id);
                assertThat(first).isGreaterThanOrEqualTo(id).isLessThan(id + 3);
                assertThat(share.owns(first)).isTrue();
            }
        }
        assertThat(seen).containsOnly(1);
        assertThat(RankShare.ALONE.prompts(source)).isSameAs(source);
    }

    @Test
    void limitsAreSharedAndABatchThatTheRanksDoNotDivideIsRefused() {
        assertThat(new RankShare(1, 4).limit(10)).isEqualTo(2);
        assertThat(new RankShare(1, 4).limit(3)).isEqualTo(1);
        assertThat(RankShare.batchShare(512, 16)).isEqualTo(32);
        assertThatThrownBy(() -> RankShare.batchShare(10, 4))
                .hasMessageContaining("consumer_batch_size 10")
                .hasMessageContaining("4 trainer ranks");
        assertThatThrownBy(() -> new RankShare(0, 257)).hasMessageContaining("trainer ranks: 257");
        assertThatThrownBy(() -> new RankShare(2, 2)).hasMessageContaining("trainer rank 2");
    }
}
