package org.rollout.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.rollout.config.AgentSection;
import org.rollout.core.WorkflowResolver;

/** The configuration's spellings of rollout.agent values are the agent module's. */
class AgentSectionNamesTest {

    @Test
    void exportStylesAreTheEnumsConfigNames() {
        assertThat(Arrays.stream(ExportStyle.values()).map(ExportStyle::configName))
                .containsExactlyElementsOf(AgentSection.EXPORT_STYLES);
    }

    @Test
    void everyToolCallFormatHasItsConfigNameAsCanonicalSpelling() {
        for (ToolCallFormat f : ToolCallFormat.values()) {
            assertThat(AgentSection.toolCallFormatName(f.configName())).isEqualTo(f.configName());
            assertThat(ToolCallFormat.fromConfig(f.configName())).isEqualTo(f);
        }
    }

    @Test
    void modesAreTheResolversAgentModes() {
        assertThat(AgentSection.MODES)
                .containsExactlyInAnyOrder(
                        WorkflowResolver.MODE_INLINE, WorkflowResolver.MODE_SUBPROC, WorkflowResolver.MODE_ONLINE);
    }

    @Test
    void optionsFromTheDefaultSectionAreTheDefaults() {
        assertThat(AgentOptions.from(AgentSection.defaults())).isEqualTo(AgentOptions.defaults());
        assertThat(AgentOptions.defaults().exportStyle()).isEqualTo(ExportStyle.INDIVIDUAL);
    }
}
