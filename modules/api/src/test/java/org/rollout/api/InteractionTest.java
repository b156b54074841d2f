package org.rollout.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InteractionTest {
    private static final ModelResponse RESPONSE = ModelResponse.of(
            new int[] {1, 2}, new int[] {3}, new float[] {-0.1f}, new int[] {7}, StopReason.STOP, Duration.ZERO);

    @Test
    void builderDefaults() {
        Interaction i = Interaction.builder("chatcmpl-1").build();
        assertThat(i.id()).isEqualTo("chatcmpl-1");
        assertThat(i.modelResponse()).isNull();
        assertThat(i.reward()).isNull();
        assertThat(i.originalReward()).isNull();
        assertThat(i.rolloutReward()).isNull();
        assertThat(i.parent()).isNull();
        assertThat(i.chatTemplateType()).isEqualTo(Interaction.ChatTemplateType.HF);
        assertThat(i.messages()).isEmpty();
        assertThat(i.outputMessages()).isEmpty();
        assertThat(i.tensorData()).isNull();
        assertThat(i.hasTensorData()).isFalse();
    }

    @Test
    void builderSetsEveryField() {
        Interaction parent = Interaction.builder("p").build();
        TensorDict data = TensorDict.of(Map.of(TensorDict.REWARDS, Float32Tensor.vector(1f)));
        Interaction i = Interaction.builder("c")
                .modelResponse(RESPONSE)
                .reward(0.5)
                .originalReward(1.0)
                .rolloutReward(2.0)
                .parent(parent)
                .chatTemplateType(Interaction.ChatTemplateType.CONCAT)
                .messages(List.of(Map.of("role", "user", "content", "hi")))
                .outputMessages(List.of(Map.of("role", "assistant", "content", "yo")))
                .tensorData(data)
                .build();
        assertThat(i.modelResponse()).isSameAs(RESPONSE);
        assertThat(i.reward()).isEqualTo(0.5);
        assertThat(i.originalReward()).isEqualTo(1.0);
        assertThat(i.rolloutReward()).isEqualTo(2.0);
        assertThat(i.parent()).isSameAs(parent);
        assertThat(i.chatTemplateType()).isEqualTo(Interaction.ChatTemplateType.CONCAT);
        assertThat(i.messages()).hasSize(1);
        assertThat(i.outputMessages()).hasSize(1);
        assertThat(i.tensorData()).isSameAs(data);
    }

    @Test
    void hasTensorDataWithAResponseOrPrecomputedData() {
        assertThat(Interaction.builder("a").modelResponse(RESPONSE).build().hasTensorData())
                .isTrue();
        assertThat(Interaction.builder("a")
                        .tensorData(TensorDict.empty())
                        .build()
                        .hasTensorData())
                .isTrue();
    }

    @Test
    void withersReturnChangedCopiesAndLeaveTheOriginal() {
        Interaction i =
                Interaction.builder("c").modelResponse(RESPONSE).reward(1.0).build();
        Interaction normalised = i.withRewards(-1.0, 1.0);
        assertThat(normalised.reward()).isEqualTo(-1.0);
        assertThat(normalised.originalReward()).isEqualTo(1.0);
        assertThat(normalised.modelResponse()).isSameAs(RESPONSE);
        assertThat(normalised.id()).isEqualTo("c");
        assertThat(i.reward()).isEqualTo(1.0);
        assertThat(i.originalReward()).isNull();
        assertThat(i.withReward(0.25).reward()).isEqualTo(0.25);
        assertThat(i.withRolloutReward(3.0).rolloutReward()).isEqualTo(3.0);
        assertThat(i.withTensorData(TensorDict.empty()).tensorData()).isSameAs(TensorDict.empty());
        assertThat(i.tensorData()).isNull();
    }

    @Test
    void messagesAreCopied() {
        List<Map<String, Object>> messages = new ArrayList<>(List.of(Map.of("role", "user", "content", "a")));
        Interaction i = Interaction.builder("c").messages(messages).build();
        messages.add(Map.of("role", "user", "content", "b"));
        assertThat(i.messages()).hasSize(1);
        assertThatThrownBy(() -> i.messages().clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThat(Interaction.builder("c").outputMessages(null).build().outputMessages())
                .isEmpty();
    }

    @Test
    void anEmptyOrNullIdIsRejected() {
        assertThatThrownBy(() -> Interaction.builder("").build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("interaction id must not be empty");
        assertThatThrownBy(() -> Interaction.builder(null).build()).hasMessage("interaction id");
        assertThatThrownBy(() -> Interaction.builder("c").chatTemplateType(null).build())
                .hasMessage("chat_template_type");
        assertThatThrownBy(() -> Interaction.builder("c").messages(null)).hasMessage("messages");
    }

    @Test
    void toStringNamesIdRewardsAndParent() {
        Interaction parent = Interaction.builder("p").build();
        assertThat(Interaction.builder("c")
                        .reward(0.5)
                        .originalReward(1.0)
                        .parent(parent)
                        .build())
                .hasToString("Interaction{id=c, reward=0.5, original=1.0, parent=p}");
    }
}
