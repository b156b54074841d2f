package org.rollout.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.rollout.config.ConfigFixtures.hocon;
import static org.rollout.config.ConfigFixtures.load;

import org.junit.jupiter.api.Test;
import org.rollout.api.InvalidConfigException;

/** {@code rollout.python.*}: how the workers of Python reward functions start. */
class RolloutPythonSettingsTest {
    @Test
    void theDefaultsArePython3NoPathAndThePoolsOwnWorkerCount() {
        assertThat(load().python()).isEqualTo(new RolloutSettings.Python("python3", "", null, null));
    }

    @Test
    void theKeysAreReadFromTheConfiguration() {
        RolloutSettings s = hocon("""
                rollout.python { executable = "/usr/bin/python3", path = "rewards:lib", reward_workers = 3, workflow_workers = 2 }
                rollout.workflow_kwargs.reward_fn = "python:math_exact:reward"
                """);

        assertThat(s.python()).isEqualTo(new RolloutSettings.Python("/usr/bin/python3", "rewards:lib", 3, 2));
        assertThat(s.workflowKwargs()).containsEntry("reward_fn", "python:math_exact:reward");
    }

    @Test
    void badValuesAreRefusedNamingTheKey() {
        assertThatThrownBy(() -> load("rollout.python.reward_workers=0"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.python.reward_workers': 0 (allowed: an integer >= 1, or null"
                        + " for min(4, cores))");
        assertThatThrownBy(() -> load("rollout.python.workflow_workers=0"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageStartingWith("invalid value for 'rollout.python.workflow_workers': 0");
        assertThatThrownBy(() -> load("rollout.python.executable=\" \""))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.python.executable': \" \" (allowed: a non-blank interpreter"
                        + " name or path)");
        assertThatThrownBy(() -> load("rollout.python.workers=2"))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessage("invalid value for 'rollout.python.workers': 2 (allowed: no such key under rollout.python"
                        + " (every key is listed in docs/configuration.md))");
    }
}
