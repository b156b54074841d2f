package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;

class AgentOptionsTest {

    @Test
    void defaultsAreAReaLs() {
        AgentOptions o = AgentOptions.defaults();
        assertThat(o.mode()).isEqualTo("inline");
        assertThat(o.exportStyle()).isEqualTo(ExportStyle.INDIVIDUAL);
        assertThat(o.turnDiscount()).isEqualTo(1.0);
        assertThat(o.adminApiKey()).isEqualTo("areal-admin-key");
        assertThat(o.onlineTimeout()).isEqualTo(Duration.ofHours(1));
    }

    @Test
    void readsTheRolloutAgentKeys() {
        AgentOptions o = AgentOptions.fromMap(Map.of(
                "mode", "online",
                "export_style", "concat",
                "turn_discount", 0.9,
                "online_timeout", "2.5",
                "subproc_max_workers", 4));
        assertThat(o.mode()).isEqualTo("online");
        assertThat(o.exportStyle()).isEqualTo(ExportStyle.CONCAT);
        assertThat(o.turnDiscount()).isEqualTo(0.9);
        assertThat(o.onlineTimeout()).isEqualTo(Duration.ofMillis(2500));
    }

    @Test
    void theDemoAgentsApiIsChatUnlessRolloutAgentApiNamesAnother() {
        assertThat(AgentOptions.defaults().api()).isEqualTo("chat");
        assertThat(AgentOptions.fromMap(Map.of("api", "messages")).api()).isEqualTo("messages");
        assertThatThrownBy(() -> AgentOptions.fromMap(Map.of("api", "completions")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage(
                        "invalid value for 'rollout.agent.api': \"completions\" (allowed: chat, responses or messages)");
    }

    @Test
    void aBadModeNamesTheKeyAndTheAllowedValues() {
        assertThatThrownBy(() -> AgentOptions.fromMap(Map.of("mode", "remote")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.agent.mode': \"remote\" (allowed: inline, subproc or online)");
    }

    @Test
    void aBadExportStyleNamesTheKey() {
        assertThatThrownBy(() -> AgentOptions.fromMap(Map.of("export_style", "merged")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage(
                        "invalid value for 'rollout.agent.export_style': \"merged\" (allowed: individual or concat)");
    }

    @Test
    void aTurnDiscountAboveOneIsRefused() {
        assertThatThrownBy(() -> AgentOptions.fromMap(Map.of("turn_discount", 1.5)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.agent.turn_discount': 1.5 (allowed: a number in (0, 1])");
    }

    @Test
    void anUnknownKeyIsRefusedListingTheKnownOnes() {
        assertThatThrownBy(() -> AgentOptions.fromMap(Map.of("discount", 0.9)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'rollout.agent.discount': 0.9 (allowed: one of the keys"
                        + " rollout.agent.mode, rollout.agent.export_style, rollout.agent.turn_discount");
    }
}
