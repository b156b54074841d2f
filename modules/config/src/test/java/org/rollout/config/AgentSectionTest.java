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
    void aBadApiIsRefusedAtLoad() {
        assertThatThrownBy(() -> load("rollout.agent.api=completions"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(
                        "invalid value for 'rollout.agent.api': \"completions\" (allowed: chat, responses or messages)");
    }

    @Test
    void everyKeyOfTheSectionIsReadFromTheConfiguration(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        RolloutSettings s = load(
                "rollout.agent.mode=online",
                "rollout.agent.export_style=concat",
                "rollout.agent.turn_discount=0.5",
                "rollout.agent.admin_api_key=k",
                "rollout.agent.online_timeout=30",
                "rollout.agent.command=\"python3 agent.py --fast\"",
                "rollout.agent.working_dir=\"" + dir + "\"",
                "rollout.agent.process_timeout=12.5",
                "rollout.agent.proxy_host=0.0.0.0",
                "rollout.agent.proxy_port=8081",
                "rollout.agent.subproc_max_workers=4");
        AgentSection a = s.agent();
        org.assertj.core.api.Assertions.assertThat(a.mode()).isEqualTo("online");
        org.assertj.core.api.Assertions.assertThat(a.exportStyle()).isEqualTo("concat");
        org.assertj.core.api.Assertions.assertThat(a.turnDiscount()).isEqualTo(0.5);
        org.assertj.core.api.Assertions.assertThat(a.adminApiKey()).isEqualTo("k");
        org.assertj.core.api.Assertions.assertThat(a.onlineTimeout()).isEqualTo(java.time.Duration.ofSeconds(30));
        AgentLaunch l = s.agentLaunch();
        org.assertj.core.api.Assertions.assertThat(l.command()).containsExactly("python3", "agent.py", "--fast");
        org.assertj.core.api.Assertions.assertThat(l.workingDir()).isEqualTo(dir);
        org.assertj.core.api.Assertions.assertThat(l.processTimeout()).isEqualTo(java.time.Duration.ofMillis(12_500));
        org.assertj.core.api.Assertions.assertThat(l.proxyHost()).isEqualTo("0.0.0.0");
        org.assertj.core.api.Assertions.assertThat(l.proxyPort()).isEqualTo(8081);
        org.assertj.core.api.Assertions.assertThat(load().agentLaunch().hasCommand())
                .isFalse();
    }

    @Test
    void badLaunchValuesAreRefusedAtLoadNamingTheKey() {
        for (String[] c : new String[][] {
            {"rollout.agent.command=[1, 2]", "'rollout.agent.command'"},
            {"rollout.agent.command=[\" \"]", "'rollout.agent.command'"},
            {"rollout.agent.working_dir=/no/such/dir", "'rollout.agent.working_dir'"},
            {"rollout.agent.process_timeout=0", "'rollout.agent.process_timeout'"},
            {"rollout.agent.proxy_port=70000", "'rollout.agent.proxy_port'"},
            {"rollout.agent.mode=pool", "'rollout.agent.mode'"},
            {"rollout.agent.turn_discount=2", "'rollout.agent.turn_discount'"}
        }) {
            assertThatThrownBy(() -> load(c[0])).as(c[0]).hasMessageContaining(c[1]);
        }
    }

    @Test
    void aProxyOffLoopbackWithThePublicDefaultAdminKeyIsRefusedNamingTheKey() {
        assertThatThrownBy(() -> load("rollout.agent.proxy_host=0.0.0.0").agentLaunch())
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("'rollout.agent.admin_api_key'")
                .hasMessageContaining("not a loopback address");
        org.assertj.core.api.Assertions.assertThat(
                        load("rollout.agent.proxy_host=127.0.0.1").agentLaunch().proxyHost())
                .isEqualTo("127.0.0.1");
        org.assertj.core.api.Assertions.assertThat(
                        load("rollout.agent.proxy_host=0.0.0.0", "rollout.agent.admin_api_key=s3cret")
                                .agentLaunch()
                                .proxyHost())
                .isEqualTo("0.0.0.0");
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
