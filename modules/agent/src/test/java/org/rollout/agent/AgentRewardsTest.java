package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.Interaction;
import org.rollout.api.WorkflowContractException;

class AgentRewardsTest {
    private static final List<Interaction> TWO = List.of(
            Interaction.builder("chatcmpl-a").build(),
            Interaction.builder("chatcmpl-b").build());

    @Test
    void aDoubleRewardsTheLastCompletion() {
        List<Interaction> out = AgentRewards.apply(0.75, TWO, "7:0");
        assertThat(out).extracting(Interaction::reward).containsExactly(null, 0.75);
    }

    @Test
    void anIntegerIsAcceptedAsANumberUnlikeAReaL() {
        assertThat(AgentRewards.apply(1, TWO, "7:0").get(1).reward()).isEqualTo(1.0);
        assertThat(AgentRewards.apply(0L, TWO, "7:0").get(1).reward()).isEqualTo(0.0);
    }

    @Test
    void aMapRewardsEachNamedCompletion() {
        List<Interaction> out = AgentRewards.apply(Map.of("chatcmpl-a", 0.5, "chatcmpl-b", 2), TWO, "7:0");
        assertThat(out).extracting(Interaction::reward).containsExactly(0.5, 2.0);
    }

    @Test
    void anUnknownCompletionIdIsAContractErrorNamingIt() {
        assertThatThrownBy(() -> AgentRewards.apply(Map.of("chatcmpl-zz", 1.0), TWO, "7:0"))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("agent episode 7:0 returned rewards for completion id(s) [chatcmpl-zz] that the episode"
                        + " did not record (recorded: [chatcmpl-a, chatcmpl-b])");
    }

    @Test
    void nullIsAContractErrorSayingSo() {
        assertThatThrownBy(() -> AgentRewards.apply(null, TWO, "7:0"))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("agent episode 7:0 returned null; an agent returns a reward (a finite number) or rewards"
                        + " per completion id (Map<String, Number>)");
    }

    @Test
    void aStringIsAContractErrorQuotingIt() {
        assertThatThrownBy(() -> AgentRewards.apply("1.0", TWO, "7:0"))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageStartingWith("agent episode 7:0 returned the string \"1.0\"; an agent returns a reward");
    }

    @Test
    void nanIsAContractError() {
        assertThatThrownBy(() -> AgentRewards.apply(Double.NaN, TWO, "7:0"))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("agent episode 7:0 returned NaN (Double), which is not a finite reward");
    }

    @Test
    void aMapWithANonNumericValueIsAContractErrorNamingTheId() {
        Map<String, Object> bad = new LinkedHashMap<>();
        bad.put("chatcmpl-a", "high");
        assertThatThrownBy(() -> AgentRewards.apply(bad, TWO, "7:0"))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("agent episode 7:0 returned a map whose value for 'chatcmpl-a' is the string \"high\";"
                        + " rewards must be finite numbers");
    }

    @Test
    void aMapWithANonStringKeyIsAContractError() {
        assertThatThrownBy(() -> AgentRewards.apply(Map.of(1, 1.0), TWO, "7:0"))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessage("agent episode 7:0 returned a map with the key 1 (Integer); reward maps are keyed by"
                        + " completion id (a string)");
    }

    @Test
    void aListIsAContractErrorNamingItsClass() {
        assertThatThrownBy(() -> AgentRewards.apply(List.of(1.0), TWO, "7:0"))
                .isInstanceOf(WorkflowContractException.class)
                .hasMessageStartingWith("agent episode 7:0 returned a java.util.");
    }
}
