package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.config.ConfigFixtures.hocon;
import static org.rollout.config.ConfigFixtures.load;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;

/** The rollout.agent section: its defaults, the keys a configuration gives and the errors naming them. */
class AgentSectionTest {

    @Test
    void defaultsAreAReaLsAndReferenceConfs() {
        AgentSection a = load().agent();
        assertThat(a).isEqualTo(AgentSection.defaults());
        assertThat(a.mode()).isEqualTo("inline");
        assertThat(a.exportStyle()).isEqualTo("individual");
        assertThat(a.turnDiscount()).isEqualTo(1.0);
        assertThat(a.adminApiKey()).isEqualTo("areal-admin-key");
        assertThat(a.onlineTimeout()).isEqualTo(Duration.ofHours(1));
        assertThat(a.api()).isEqualTo("chat");
        assertThat(a.toolCallFormat()).isEqualTo("auto");
    }

    @Test
    void theConfiguredApiAndToolCallFormatAreRead() {
        AgentSection a = hocon("rollout.agent { api = messages, tool_call_format = Qwen25 }")
                .agent();
        assertThat(a.api()).isEqualTo("messages");
        assertThat(a.toolCallFormat()).isEqualTo("Qwen25");
        assertThat(AgentSection.toolCallFormatName(a.toolCallFormat())).isEqualTo("hermes");
    }

    @Test
    void aBadApiLoadsAndIsRefusedWhenTheSectionIsRead() {
        RolloutSettings s = load("rollout.agent.api=completions");
        assertThatThrownBy(s::agent)
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage(
                        "invalid value for 'rollout.agent.api': \"completions\" (allowed: chat, responses or messages)");
    }

    @Test
    void aBadToolCallFormatNamesTheKeyAndTheAllowedValues() {
        assertThatThrownBy(() -> load("rollout.agent.tool_call_format=xml").agent())
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.agent.tool_call_format': \"xml\" (allowed: auto, hermes,"
                        + " llama3_json, mistral or deepseek)");
    }

    @Test
    void anUnknownKeyUnderRolloutAgentIsRefusedAtLoadWithASuggestion() {
        assertThatThrownBy(() -> load("rollout.agent.apis=chat"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.agent.apis'")
                .hasMessageContaining("did you mean rollout.agent.api?");
    }

    @Test
    void fromMapReadsEveryKeyOfAReaLsSection() {
        AgentSection a = AgentSection.fromMap(Map.of(
                "mode", "online",
                "export_style", "concat",
                "turn_discount", 0.9,
                "online_timeout", "2.5",
                "subproc_max_workers", 4));
        assertThat(a.mode()).isEqualTo("online");
        assertThat(a.exportStyle()).isEqualTo("concat");
        assertThat(a.turnDiscount()).isEqualTo(0.9);
        assertThat(a.onlineTimeout()).isEqualTo(Duration.ofMillis(2500));
    }

    @Test
    void fromMapNamesTheKeyOfABadValue() {
        assertThatThrownBy(() -> AgentSection.fromMap(Map.of("mode", "remote")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.agent.mode': \"remote\" (allowed: inline, subproc or online)");
        assertThatThrownBy(() -> AgentSection.fromMap(Map.of("export_style", "merged")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage(
                        "invalid value for 'rollout.agent.export_style': \"merged\" (allowed: individual or concat)");
        assertThatThrownBy(() -> AgentSection.fromMap(Map.of("turn_discount", 1.5)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.agent.turn_discount': 1.5 (allowed: a number in (0, 1])");
        assertThatThrownBy(() -> AgentSection.fromMap(Map.of("online_timeout", "soon")))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.agent.online_timeout': \"soon\" (allowed: a positive number"
                        + " of seconds)");
    }

    @Test
    void fromMapRefusesAnUnknownKeyListingTheKnownOnes() {
        assertThatThrownBy(() -> AgentSection.fromMap(Map.of("discount", 0.9)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'rollout.agent.discount': 0.9 (allowed: one of the keys"
                        + " rollout.agent.mode, rollout.agent.export_style, rollout.agent.turn_discount");
    }

    @Test
    void toolCallFormatSpellingsHaveOneCanonicalName() {
        assertThat(AgentSection.toolCallFormatName(" LLAMA3 ")).isEqualTo("llama3_json");
        assertThat(AgentSection.toolCallFormatName("deepseek_v31")).isEqualTo("deepseek");
        assertThat(AgentSection.toolCallFormatName("mistral")).isEqualTo("mistral");
        assertThat(AgentSection.toolCallFormatName("auto")).isNull();
        assertThat(AgentSection.toolCallFormatName(null)).isNull();
    }
}
