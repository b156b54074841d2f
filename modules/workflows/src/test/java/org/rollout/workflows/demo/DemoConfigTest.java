package org.rollout.workflows.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.rollout.modelserver.TinyLmWeights;

/** {@link DemoConfig} and {@link StepReport}: the documented defaults and the progress line. */
class DemoConfigTest {

    @Test
    void theDefaultsAreTheOnesDocumented() {
        DemoConfig d = DemoConfig.defaults();

        assertThat(d.gconfig().nSamples()).isEqualTo(8);
        assertThat(d.gconfig().maxNewTokens()).isEqualTo(8);
        assertThat(d.gconfig().temperature()).isEqualTo(1.0);
        assertThat(d.groupsPerStep()).isEqualTo(26);
        assertThat(d.learningRate()).isEqualTo(0.5);
        assertThat(d.warmupSteps()).isEqualTo(20);
        assertThat(d.clipEpsilon()).isEqualTo(0.2);
        assertThat(d.steps()).isEqualTo(40);
        assertThat(d.decay()).isEqualTo(1.0f);
        assertThat(d.initialWeights()).isEqualTo(TinyLmWeights.seeded(1, 0.02, 1.0f));
        assertThat(d.trainerConfig(Path.of("w"))).isEqualTo(new GrpoTrainer.Config(0.5, 20, 0.2, 1.0, Path.of("w")));
    }

    @Test
    void refusesNoGroupsOrNegativeSteps() {
        DemoConfig d = DemoConfig.defaults();
        assertThatThrownBy(() -> d.withGroupsPerStep(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("groups per step must be >= 1, got 0");
        assertThatThrownBy(() -> d.withSteps(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("steps must be >= 0, got -1");
    }

    @Test
    void aStepReportSummarisesItselfOnOneLine() {
        StepReport r = new StepReport(
                12, 3, 2, 16, 512, 0.4123, List.of(0.1, 0.3), 0.02, 0.0314, Path.of("v12.rlm"), Duration.ofMillis(97));

        assertThat(r.meanGroupRewardStd()).isEqualTo(0.2, org.assertj.core.api.Assertions.within(1e-12));
        assertThat(r.summary()).isEqualTo("v12 reward 0.412 spread 0.200 tokens 512 clip 0.020 |g| 0.0314 97 ms");
    }
}
