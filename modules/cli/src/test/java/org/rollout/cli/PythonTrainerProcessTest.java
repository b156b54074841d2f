package org.rollout.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.rollout.examples.demo.StepReport;

class PythonTrainerProcessTest {

    @Test
    void aStepLineOfThePythonTrainerBecomesAReport() {
        StepReport r = PythonTrainerProcess.parse(
                "step 3/40  batch 2  26 groups  v3 reward 0.100 tokens 1605 clip 0.105 |g| 0.0367 stale 0 1781 ms",
                Path.of("/w"));
        assertThat(r).isNotNull();
        assertThat(r.version()).isEqualTo(3);
        assertThat(r.batchId()).isEqualTo(2);
        assertThat(r.groups()).isEqualTo(26);
        assertThat(r.meanReward()).isEqualTo(0.100);
        assertThat(r.tokens()).isEqualTo(1605);
        assertThat(r.clipFraction()).isEqualTo(0.105);
        assertThat(r.trainTime().toMillis()).isEqualTo(1781);
        assertThat(r.weightsPath()).isEqualTo(Path.of("/w/v3.rlm"));
    }

    @Test
    void otherLinesAreNotReports() {
        assertThat(PythonTrainerProcess.parse("trainer: 40 steps against [...]", Path.of("/w")))
                .isNull();
        assertThat(PythonTrainerProcess.parse("done: 40 steps; mean reward: first 5 steps 0.1", Path.of("/w")))
                .isNull();
    }

    @Test
    void theScriptIsFoundUnderRolloutHome() {
        assertThat(PythonTrainerProcess.script().toString()).endsWith(PythonTrainerProcess.SCRIPT);
    }
}
