package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EpisodeResultTest {

    private static Interaction interaction(String id) {
        return Interaction.builder(id).reward(1.0).build();
    }

    @Test
    void interactionsKeepInsertionOrder() {
        Map<String, Interaction> byId = new LinkedHashMap<>();
        for (String id : new String[] {"c3", "a1", "b2"}) {
            byId.put(id, interaction(id));
        }
        assertThat(EpisodeResult.interactions(byId).byId().keySet()).containsExactly("c3", "a1", "b2");
    }

    @Test
    void aKeyThatIsNotTheInteractionsIdIsAnErrorNamingBoth() {
        assertThatThrownBy(() -> EpisodeResult.interactions(Map.of("chatcmpl-1", interaction("chatcmpl-2"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("interaction keyed 'chatcmpl-1' has id 'chatcmpl-2'; keys must be completion ids");
    }

    @Test
    void aNullInteractionIsAnErrorNamingItsKey() {
        Map<String, Interaction> byId = new HashMap<>();
        byId.put("x", null);
        assertThatThrownBy(() -> EpisodeResult.interactions(byId))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("interaction 'x'");
    }

    @Test
    void interactionsAreCopiedAndUnmodifiable() {
        Map<String, Interaction> byId = new LinkedHashMap<>(Map.of("a", interaction("a")));
        EpisodeResult.Interactions r = EpisodeResult.interactions(byId);
        byId.put("b", interaction("b"));
        assertThat(r.byId()).containsOnlyKeys("a");
        assertThatThrownBy(() -> r.byId().remove("a")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void rowsCountTrajectoryRowsInteractionsAndNoneForARejection() {
        TensorDict two = TensorDict.of(Map.of(TensorDict.ATTENTION_MASK, BoolTensor.filled(true, 2, 4)));
        assertThat(EpisodeResult.trajectory(two).rows()).isEqualTo(2);
        assertThat(EpisodeResult.interactions(Map.of("a", interaction("a"), "b", interaction("b")))
                        .rows())
                .isEqualTo(2);
        assertThat(EpisodeResult.rejected("returned_none").rows()).isZero();
        assertThat(EpisodeResult.trajectory(TensorDict.empty()).rows()).isZero();
    }

    @Test
    void nullContentsAreRejected() {
        assertThatThrownBy(() -> EpisodeResult.trajectory(null)).hasMessage("trajectory data");
        assertThatThrownBy(() -> EpisodeResult.rejected(null)).hasMessage("reason");
        assertThatThrownBy(() -> EpisodeResult.interactions(null)).hasMessage("interactions");
    }

    @Test
    void aRejectionCarriesItsReason() {
        assertThat(EpisodeResult.rejected("low_reward").reason()).isEqualTo("low_reward");
    }
}
